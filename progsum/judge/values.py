"""Exact values in text: numbers, amounts, dates, times, ids, paths, URLs and e-mail addresses.

These are the parts of a statement that must survive compaction byte for byte (DESIGN invariant 6).
A value is a whitespace-separated token, trimmed of surrounding punctuation, that carries a digit,
a path or URL separator, an ``@``, an underscore, or a file-like extension.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "StatedValue",
    "carried",
    "exact_values",
    "stated_values",
    "value_key",
    "value_keys",
]

_TRIM = "\"'`()[]{}<>,;:!?*\u201c\u201d\u2018\u2019"  # ASCII and typographic quotes
_FILE_LIKE = re.compile(r"^[\w-]{2,}\.[A-Za-z0-9]{1,8}$")
_MARKERS = ("/", "\\", "@", "_", "://")


_DIGIT = re.compile(r"\d")
_CANDIDATE_CHAR = re.compile(r"[\d/\\@_.]")
"""What a token that could be a value holds: a digit, a separator or a dot."""


def _candidates(text: str) -> Iterator[tuple[str, str | None]]:
    """Each whitespace-separated token of ``text`` that could be a value, with the token after.

    Most tokens are words: ``isalpha`` passes over them in C before any regex looks at them.
    """
    tokens = text.split()
    last = len(tokens) - 1
    for i, token in enumerate(tokens):
        if not token.isalpha() and _CANDIDATE_CHAR.search(token):
            yield token, tokens[i + 1] if i < last else None


def _is_value(token: str) -> bool:
    if _DIGIT.search(token):
        return True
    if any(marker in token for marker in _MARKERS):
        return any(c.isalnum() for c in token)
    return bool(_FILE_LIKE.match(token))


def exact_values(text: str) -> tuple[str, ...]:
    """The value tokens of ``text``, in order of appearance, without repeats.

    Example:
        ``exact_values("Budget is $3,000; see config/prod.yaml by 2026-05-01.")``
        gives ``("$3,000", "config/prod.yaml", "2026-05-01")``.
    """
    found: list[str] = []
    for raw in text.split():
        token = raw.lstrip(_TRIM).rstrip(_TRIM + ".")  # a leading dot may be a path: ./run.sh
        if token and _is_value(token) and token not in found:
            found.append(token)
    return tuple(found)


_UNITS = frozenset(
    {
        *("day", "night", "week", "weekend", "month", "year", "hour", "minute", "min", "second"),
        *("person", "guest", "adult", "child", "kid", "room", "bed", "seat", "ticket", "bag"),
        *("km", "mile", "kg", "lb", "gb", "mb", "tb", "percent", "item", "star", "floor", "stop"),
        *("passenger", "traveller", "traveler", "piece", "unit", "page", "step", "time"),
    }
)
"""Unit words that make a number a quantity: ``5-day`` and ``5 days`` state the same value."""
_IRREGULAR = {"people": "person", "children": "child", "nights": "night"}
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
_HYPHENATED = re.compile(r"^(\d+(?:[.,]\d+)*)-([A-Za-z]+)$")


def _unit(word: str) -> str | None:
    word = word.strip(_TRIM + ".").casefold()
    word = _IRREGULAR.get(word, word)
    if word in _UNITS:
        return word
    if word.endswith("s") and word[:-1] in _UNITS:
        return word[:-1]
    return None


def value_key(value: str) -> str:
    """The form a value is compared in: itself, or ``"<number> <unit>"`` for a quantity.

    Example:
        ``value_key("5-day") == value_key("5 days") == "5 day"``
    """
    hyphenated = _HYPHENATED.match(value)
    if hyphenated:
        unit = _unit(hyphenated[2])
        if unit is not None:
            return f"{hyphenated[1]} {unit}"
    words = value.split()
    if len(words) == 2 and _NUMBER.match(words[0]):  # noqa: PLR2004 - a number and its unit
        unit = _unit(words[1])
        if unit is not None:
            return f"{words[0]} {unit}"
    return value


def value_keys(text: str) -> frozenset[str]:
    """Every value ``text`` carries, token-exactly, in `value_key` form.

    A value is carried only as a whole token: ``$3`` is not in "$3,000", ``TP123`` is not in
    "TP1234". A number followed by a unit word also carries the quantity (``5 days``: ``5`` and
    ``5 day``), so "5 days" carries "5-day".
    """
    keys: set[str] = set()
    for raw, following in _candidates(text):
        token = raw.lstrip(_TRIM).rstrip(_TRIM + ".")
        if not token or not _is_value(token):
            continue
        keys.add(token)
        if "-" in token:  # only a hyphenated quantity has another form ("5-day": "5 day")
            keys.add(value_key(token))
        if following is not None and _NUMBER.match(token):
            unit = _unit(following)
            if unit is not None:
                keys.add(f"{token} {unit}")
    return frozenset(keys)


def stated_values(text: str) -> tuple[str, ...]:
    """The values of ``text`` as stated: like `exact_values`, with a quantity's unit kept.

    Example:
        ``stated_values("A 5-day trip, 3 nights in Kyoto, $3,000.")`` gives
        ``("5-day", "3 nights", "$3,000")``: "3 nights" is carried by "3-night" and not by "3".
    """
    found: dict[str, None] = {}
    for raw, following in _candidates(text):
        token = raw.lstrip(_TRIM).rstrip(_TRIM + ".")
        if not token or not _is_value(token):
            continue
        if following is not None and _NUMBER.match(token) and _unit(following) is not None:
            token = f"{token} {following.strip(_TRIM + '.')}"
        found.setdefault(token)
    return tuple(found)


def carried(value: str, keys: frozenset[str]) -> bool:
    """Whether ``value`` is among ``keys`` (from `value_keys`), token-exactly."""
    return value in keys or value_key(value) in keys


@dataclass(frozen=True, slots=True)
class StatedValue:
    """One exact value the user stated, and where.

    An entry of the ledger (`progsum.contract.ledger`).
    """

    value: str
    at: int
    """Log index of the user's message."""
    sentence: str
    """The user's sentence holding it, verbatim (whitespace collapsed)."""
    rule: bool
    """The sentence is a prohibition or an obligation (restored as binding)."""
