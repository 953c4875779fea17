"""Ids in tool calls: the values under id-like keys of JSON arguments and results.

Pure. `ids_in` walks a JSON value for ``(kind, id)`` pairs (``reservation_id ZFA04Y``), one kind
name per sort of id; `digest` gives the short values of the record a tool returned, the values an
agent reuses from it. `progsum.contract._artifacts` puts both on the identifier lines of the trail.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping

from progsum.judge._lexicon import alternation

__all__ = ["MAX_LEAF_CHARS", "digest", "ids_in"]

MAX_LEAF_CHARS = 30
"""Longest string a record's digest keeps (`digest`)."""

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_ID_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:#/-]{2,63}$")


@functools.cache
def _keys() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The id-key, not-an-id and kind-suffix patterns, from the lexicon's ``identifiers``."""
    suffixes = alternation("identifiers.suffixes")
    collections = alternation("identifiers.collections")
    return (
        re.compile(rf"(?:^|_)(?:{suffixes})$|^(?:{collections})$", re.IGNORECASE),
        re.compile(alternation("identifiers.not_ids"), re.IGNORECASE),
        re.compile(rf"(?:{alternation('identifiers.kinds')})$"),
    )


def digest(result: Mapping[str, object], primary: str, status: str) -> str:
    """The short values of a record a tool returned, in its order, its own id left out.

    ``omar_rossi_1241 LAX SFO round_trip economy; flights LAX SFO HAT034 2024-05-26 165, …;
    passengers Omar Rossi 1970-06-06``: the top level's values, then each list under its key,
    element by element (nested records flattened). These are the values an agent reuses from a
    record: flight numbers, dates, names, amounts, payment ids. Its ``status`` is said already.
    """
    top = [leaf for v in result.values() if not isinstance(v, list) for leaf in _short(v)]
    parts = [" ".join(leaf for leaf in top if leaf not in (primary, status))]
    for key, inner in result.items():
        if isinstance(inner, list) and inner:
            listed = ", ".join(" ".join(_short(element)) for element in inner)
            parts.append(f"{key} {listed}")
    return "; ".join(part for part in parts if part.strip(" ,"))


def _short(value: object) -> list[str]:
    """The short scalar leaves of ``value``: strings of at most 30 characters, numbers."""
    if isinstance(value, Mapping):
        return [leaf for inner in value.values() for leaf in _short(inner)]
    if isinstance(value, list):
        return [leaf for inner in value for leaf in _short(inner)]
    if isinstance(value, bool) or value is None:
        return []
    text = str(value)
    return [text] if isinstance(value, int | float) or 0 < len(text) <= MAX_LEAF_CHARS else []


def ids_in(value: object, parent: str) -> Iterator[tuple[str, str]]:
    """``(kind, id)`` pairs under id-like keys of a JSON value, depth first, in order."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            name = str(key)
            id_key, not_id, _ = _keys()
            if id_key.search(name) and not not_id.search(name):
                kind = _kind(name, parent)
                for leaf in inner if isinstance(inner, list) else [inner]:
                    if _is_id(leaf):
                        yield kind, str(leaf)
            if isinstance(inner, Mapping | list):
                # a mapping keyed by its ids ({"credit_card_95": {...}}) keeps its own name
                yield from ids_in(inner, parent if _is_id(name) and parent else name)
    elif isinstance(value, list):
        for inner in value:
            yield from ids_in(inner, parent)


def _kind(name: str, parent: str) -> str:
    """One name per kind of id: ``reservations``, ``reservation_id`` → ``reservation_id``."""
    base = re.sub(r"(?:^|_)ids?$", "", name) or parent
    base = _singular(base) if base else "item"
    if _keys()[2].search(base):
        return base
    return f"{base}_id"


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def _is_id(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 100  # noqa: PLR2004 - short numbers are counts, not ids
    if not isinstance(value, str) or not _ID_VALUE.match(value) or _DATE.match(value):
        return False
    return any(c.isdigit() for c in value) or (value.isupper() and len(value) >= 5)  # noqa: PLR2004
