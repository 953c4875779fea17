"""Routing: the kinds a sentence may state, and which field of a schema takes each kind.

A field takes the kinds it declares (``extract``), else a kind by the words of its name, label or
description: those words are the lexicon's (``routes`` in ``progsum/judge/data/lexicon.toml``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Literal, TypeAlias, get_args

from progsum.contract._guards import constraint_field
from progsum.judge._lexicon import words
from progsum.summary._schema import FieldSpec, SchemaSpec

__all__ = ["KINDS", "Kind", "field_for", "note_fields", "routes"]

Kind: TypeAlias = Literal[
    "questions",
    "constraints",
    "decisions",
    "rejected",
    "dates",
    "people",
    "preferences",
    "profile",
    "facts",
    "answers",
]
"""What a sentence states, and so which field it belongs in
(`progsum.summary._schema.EXTRACTORS`)."""

KINDS: tuple[Kind, ...] = get_args(Kind)
"""Every kind, in the order a sentence that fits several is given to one."""
_FACT_KINDS: tuple[Kind, ...] = ("dates", "people", "preferences", "profile", "answers")
"""Kinds of fact a schema may declare a field for; without one they go to the facts field."""
_NOTE_KINDS: frozenset[Kind] = frozenset({"dates", "people", "preferences", "profile", "facts"})
"""Kinds written as self-contained notes (who and when) in a non-binding, unkeyed field."""
_ROUTED: tuple[Kind, ...] = ("rejected", "questions", "decisions", "facts")
"""Kinds a field takes by the words of its name, label or description (the lexicon's ``routes``),
tried in this order (first match wins)."""


def _keywords() -> Iterator[tuple[Kind, frozenset[str]]]:
    """Each kind of `_ROUTED`, with the words that say a field takes it."""
    for kind in _ROUTED:
        yield kind, words(f"routes.{kind}")


@functools.cache
def routes(spec: SchemaSpec) -> Mapping[Kind, str]:
    """The field each kind of sentence goes to in a schema; kinds without a field are absent.

    Example:
        ``routes(spec_of(Summary))["facts"] == "established_facts"``
    """
    found: dict[Kind, str] = {}
    for kind in KINDS:  # a field that declares ``extract = [kind]`` takes it first
        declared = spec.extracting(kind)
        if declared is not None:
            found[kind] = declared.name
    target = constraint_field(spec)
    if target is not None:
        found.setdefault("constraints", target.name)
    for f in spec.lists:
        if target is not None and f.name == target.name:
            continue
        by_name = _field_kind(f)
        if by_name is not None and by_name not in found and f.name not in found.values():
            found[by_name] = f.name
    return MappingProxyType(found)


def field_for(table: Mapping[Kind, str], kind: Kind) -> str | None:
    """The field ``kind`` goes to: its own, else (for a kind of fact) the facts field."""
    field = table.get(kind)
    if field is None and kind in _FACT_KINDS:
        return table.get("facts")
    return field


def _field_kind(spec: FieldSpec) -> Kind | None:
    """The kind a field takes: by its name and label first, else by its description."""
    name = f"{spec.name} {spec.label}".casefold()
    for kind, found in _keywords():
        if any(word in name for word in found):
            return kind
    description = spec.description.casefold()
    hits = [
        (position, kind)
        for kind, found in _keywords()
        for word in found
        if (position := description.find(word)) >= 0
    ]
    return min(hits)[1] if hits else None


def note_fields(spec: SchemaSpec) -> frozenset[str]:
    """Fields written as self-contained notes: non-binding, unkeyed, taking a kind of fact."""
    table = routes(spec)
    names = {field_for(table, kind) for kind in _NOTE_KINDS}
    return frozenset(
        f.name for f in spec.lists if f.name in names and not f.binding and f.kind != "keyed"
    )
