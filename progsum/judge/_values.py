"""Exact values in text: numbers, amounts, dates, times, ids, paths, URLs and e-mail addresses.

These are the parts of a statement that must survive compaction byte for byte (DESIGN invariant 6).
A value is a whitespace-separated token, trimmed of surrounding punctuation, that carries a digit,
a path or URL separator, an ``@``, an underscore, or a file-like extension.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from progsum.judge._lexicon import table, words
from progsum.judge._memo import short_text_cache

__all__ = [
    "StatedValue",
    "carried",
    "exact_values",
    "named_keys",
    "named_values",
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
_TRIM_END = _TRIM + "."


def _candidates(text: str) -> Iterator[tuple[str, str | None]]:
    """Each whitespace-separated token of ``text`` that could be a value, with the token after.

    Most tokens are words: ``isalpha`` passes over them in C before any regex looks at them.
    """
    tokens = text.split()
    last = len(tokens) - 1
    for i, token in enumerate(tokens):
        if not token.isalpha() and _CANDIDATE_CHAR.search(token):
            yield token, tokens[i + 1] if i < last else None


@short_text_cache
def _read(text: str) -> tuple[tuple[str, str | None, str | None], ...]:
    """Each value token of ``text`` in order, trimmed, with the unit that follows a number.

    An entry is ``(token, unit, written)``: ``unit`` is the singular unit the next token names
    (`_unit`) when the token is a number, and ``written`` that next token as written, trimmed.
    `value_keys`, `stated_values` and `exact_values` read the same tokens: each text is read
    once for all three.
    """
    if not _CANDIDATE_CHAR.search(text):
        return ()  # no token can be a value: most sentences, passed over without splitting
    found: list[tuple[str, str | None, str | None]] = []
    for raw, following in _candidates(text):
        token = raw.lstrip(_TRIM).rstrip(_TRIM_END)  # a leading dot may be a path: ./run.sh
        if not token or not _is_value(token):
            continue
        unit = written = None
        if following is not None and _NUMBER.match(token):
            unit = _unit(following)
            if unit is not None:
                written = following.strip(_TRIM_END)
        found.append((token, unit, written))
    return tuple(found)


def _is_value(token: str) -> bool:
    if _DIGIT.search(token):
        return True
    if any(marker in token for marker in _MARKERS):
        return any(c.isalnum() for c in token)
    return bool(_FILE_LIKE.match(token))


@short_text_cache
def exact_values(text: str) -> tuple[str, ...]:
    """The value tokens of ``text``, in order of appearance, without repeats.

    Example:
        ``exact_values("Budget is $3,000; see config/prod.yaml by 2026-05-01.")``
        gives ``("$3,000", "config/prod.yaml", "2026-05-01")``.
    """
    return tuple(dict.fromkeys(token for token, _, _ in _read(text)))


_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
_HYPHENATED = re.compile(r"^(\d+(?:[.,]\d+)*)-([A-Za-z]+)$")


def _unit(word: str) -> str | None:
    """The unit ``word`` names, singular (the lexicon's ``values.units``), or None."""
    units = words("values.units")
    word = word.strip(_TRIM + ".").casefold()
    word = table("values.plurals").get(word, word)
    if word in units:
        return word
    if word.endswith("s") and word[:-1] in units:
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


@short_text_cache
def value_keys(text: str) -> frozenset[str]:
    """Every value ``text`` carries, token-exactly, in `value_key` form.

    A value is carried only as a whole token: ``$3`` is not in "$3,000", ``TP123`` is not in
    "TP1234". A number followed by a unit word also carries the quantity (``5 days``: ``5`` and
    ``5 day``), so "5 days" carries "5-day".
    """
    keys: set[str] = set()
    for token, unit, _ in _read(text):
        keys.add(token)
        if "-" in token:  # only a hyphenated quantity has another form ("5-day": "5 day")
            keys.add(value_key(token))
        if unit is not None:
            keys.add(f"{token} {unit}")
    return frozenset(keys)


@short_text_cache
def stated_values(text: str) -> tuple[str, ...]:
    """The values of ``text`` as stated: like `exact_values`, with a quantity's unit kept.

    Example:
        ``stated_values("A 5-day trip, 3 nights in Kyoto, $3,000.")`` gives
        ``("5-day", "3 nights", "$3,000")``: "3 nights" is carried by "3-night" and not by "3".
    """
    found: dict[str, None] = {}
    for token, _, written in _read(text):
        found.setdefault(token if written is None else f"{token} {written}")
    return tuple(found)


def carried(value: str, keys: frozenset[str]) -> bool:
    """Whether ``value`` is among ``keys`` (from `value_keys`), token-exactly."""
    return value in keys or value_key(value) in keys


_HOUSE = re.compile(r"^\d{1,5}[A-Za-z]?$")
"""A house number: it may take the street after it ("12 Rua Augusta", "221B Baker Street")."""
_PLACE = re.compile(r"^[A-Za-z]?\d{1,5}[A-Za-z]?$")
"""A number of a named place: it may take the name before it ("Terminal 2", "Hauptstraße 5")."""
_YEAR = re.compile(r"^(?:1[89]|20)\d\d$")
_POSTCODES = (
    (re.compile(r"^[A-Z]{1,2}\d[A-Z\d]?$"), re.compile(r"^\d[A-Z]{2}$")),  # SW1A 1AA
    (re.compile(r"^[A-Z]\d[A-Z]$"), re.compile(r"^\d[A-Z]\d$")),  # K1A 0B1
)
"""Postcodes written in two parts: the parts are one value."""
_ENDS = tuple(".,;:!?)]}\"'\u201d\u2019")
"""A token ending in one of these ends a name: nothing after it belongs to it."""
_OPENS = tuple("([{\"'\u201c\u2018")
_MAX_NAME = 4


def _is_name(raw: str) -> bool:
    """Whether a token is a capitalised word that can name a street or place (no date, no unit)."""
    if not raw[:1].isupper() and not raw.lstrip(_TRIM)[:1].isupper():
        return False  # most tokens: decided before anything is stripped
    word = raw.strip(_TRIM + ".")
    return (
        len(word) > 1
        and word.isalpha()
        and any(c.islower() for c in word[1:])
        and word.casefold() not in words("kinds.months")
        and _unit(word) is None
    )


def _clean(raw: str) -> str:
    return raw.strip(_TRIM).rstrip(".")


def _compounds(text: str, *, openers: bool) -> Iterator[tuple[str, ...]]:
    """Each number of ``text`` with the proper name beside it, as words (the number first or last).

    A name is up to four capitalised words on the same line, without punctuation between them and
    the number. With ``openers`` false, the word that opens a sentence or a line is no part of a
    name (a statement's "Option 3", a listing's "Closed 0"). Years, dates and quantities take no
    name. Postcodes written in two parts come whole.
    """
    for line in text.splitlines():
        if not _DIGIT.search(line):
            continue
        tokens = line.split()
        last = len(tokens) - 1
        for i, raw in enumerate(tokens):
            if raw.isalpha() or not _DIGIT.search(raw):
                continue
            following = tokens[i + 1][:1] if i < last else ""
            if not (
                following.isupper()
                or (i > 0 and tokens[i - 1][:1].isupper())
                or (following.isdigit() and raw[:1].isupper())
            ):
                continue  # no capitalised word beside it, no postcode: most numbers
            number = _clean(raw)
            if _YEAR.match(number):
                continue
            if i < last and any(
                first.match(number) and second.match(_clean(tokens[i + 1]))
                for first, second in _POSTCODES
            ):
                yield (number, _clean(tokens[i + 1]))
                continue
            if i < last and _HOUSE.match(number) and not raw.endswith(_ENDS):
                after = i + 1
                while after <= last and after - i <= _MAX_NAME and _is_name(tokens[after]):
                    after += 1
                    if tokens[after - 1].endswith(_ENDS):
                        break
                if after > i + 1:
                    yield (number, *(_clean(t) for t in tokens[i + 1 : after]))
            if i > 0 and _PLACE.match(number) and not raw.startswith(_OPENS):
                before = i
                while (
                    before > 0
                    and i - before < _MAX_NAME
                    and _is_name(tokens[before - 1])
                    and not tokens[before - 1].endswith(_ENDS)
                ):
                    before -= 1
                    if tokens[before].startswith(_OPENS):
                        break
                if not openers and before < i and _opens(tokens, before):
                    before += 1
                if before < i:
                    yield (*(_clean(t) for t in tokens[before:i]), number)


def _opens(tokens: list[str], at: int) -> bool:
    """Whether the token at ``at`` opens its line or a sentence."""
    return at == 0 or tokens[at - 1].endswith((".", "!", "?"))


@short_text_cache
def named_values(text: str) -> tuple[str, ...]:
    """The numbers of ``text`` stated with their proper name: addresses, places, postcodes.

    The user's statement of one (``"Ship it to 12 Rua Augusta"``) is one value to the ledger
    (`progsum.contract._ledger`): a summary that keeps "12" and drops the street lost it. Invention
    checks stay number by number (`exact_values`).

    Example:
        ``named_values("Meet at Terminal 2, then 12 Rua Augusta.")`` gives
        ``("Terminal 2", "12 Rua Augusta")``.
    """
    found: dict[str, None] = {}
    for words_ in _compounds(text, openers=False):
        found.setdefault(" ".join(words_))
    return tuple(found)


@short_text_cache
def named_keys(text: str) -> frozenset[str]:
    """Every named value ``text`` carries, and each shorter part of it that keeps the number.

    "12 Rua Augusta Sul" carries "12 Rua Augusta" and "12 Rua"; "Rua Augusta 12" carries
    "Augusta 12". A capitalised word that opens a sentence counts here, since a summary's item
    may well begin with the name ("Terminal 2 is the meeting point").
    """
    keys: set[str] = set()
    for words_ in _compounds(text, openers=True):
        if _DIGIT.search(words_[0]):
            keys.update(" ".join(words_[:end]) for end in range(2, len(words_) + 1))
        else:
            keys.update(" ".join(words_[start:]) for start in range(len(words_) - 1))
    return frozenset(keys)


@dataclass(frozen=True, slots=True)
class StatedValue:
    """One exact value the user stated, and where.

    An entry of the ledger (`progsum.contract._ledger`).
    """

    value: str
    at: int
    """Log index of the user's message."""
    sentence: str
    """The user's sentence holding it, verbatim (whitespace collapsed)."""
    rule: bool
    """The sentence is a prohibition or an obligation (restored as binding)."""
