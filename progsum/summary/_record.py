"""`Record`: a frozen pydantic model kept by the thousand, whose instances share their fields-set.

pydantic gives every instance a set of the field names it was given (``model_fields_set``, what
``exclude_unset`` reads): a set of five names or more takes 728 bytes, more than the rest of a
tombstone. A session keeps a tombstone per retired item and a compaction event with its merge
report per fold, so those sets were most of what a long session's summary and events held
(bench/costs_turns.md). A `Record` swaps its set for the one shared instance holding the same
names: equal in content, so ``model_fields_set``, ``exclude_unset`` and copies read as before.
The model is frozen, so pydantic never adds to the set in place; a copy (`model_copy`) gets a
set of its own, which is then swapped too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict

__all__ = ["SHARED_SETS", "Record"]

SHARED_SETS = 4_096
"""Distinct fields-sets shared at most; past it, an instance keeps its own set (still correct)."""

_shared: dict[frozenset[str], set[str]] = {}
"""One set per distinct combination of given field names, by its names (bounded by
`SHARED_SETS`: a schema has few such combinations)."""


class Record(BaseModel):
    """A frozen model whose fields-set is one shared instance per distinct set of names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def model_post_init(self, _context: Any, /) -> None:  # noqa: ANN401 - pydantic's signature
        """Share the fields-set just validated (pydantic's hook after every validation)."""
        _share(self)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """Pydantic's copy, whose fields-set (copied, then updated) is shared again."""
        copied = super().model_copy(update=update, deep=deep)
        _share(copied)
        return copied


def _share(record: BaseModel) -> None:
    names = record.__pydantic_fields_set__
    key = frozenset(names)
    shared = _shared.get(key)
    if shared is None:
        if len(_shared) >= SHARED_SETS:
            return
        shared = _shared.setdefault(key, set(names))
    object.__setattr__(record, "__pydantic_fields_set__", shared)
