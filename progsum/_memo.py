"""Bounded caches of pure functions, each with an owner and a byte budget (the bottom layer).

A compaction reads the same texts several times (a sentence's values by the extract pass, the
contract and the ledger; every live item of the summary again on each fold); those reads depend
on the text alone, so each is read once and remembered, within a budget in bytes: a session adds
nothing to these caches past their budgets, however long it runs.

The cache is `functools.lru_cache`'s (a hit costs a dict lookup, in C); its `Memo` counts each
new entry at the mean size of a sample of entries (`sizeof`: an entry's arguments and result and
what they hold directly, counted in full even when shared; the exact figure is `tracemalloc`'s)
and empties the cache when the count reaches the budget. So a cache holds at most its budget,
as estimated. Every memo is registered under its owner (`memos`), so a test or a benchmark can
add up what the process keeps, and may keep.

`memoized` decorates a pure function of hashable arguments
(`progsum.judge._memo.short_text_cache`: one of a short text).
"""

from __future__ import annotations

import functools
import inspect
import sys
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, ParamSpec, Protocol, TypeVar, cast

__all__ = ["Memo", "MemoReport", "Memoized", "memoized", "memos", "sizeof"]

P = ParamSpec("P")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

SAMPLE = 16
"""A `Memo` measures its first entries, then one in ``16 * SAMPLE`` (`sizeof` is slow)."""
_registry: weakref.WeakSet[Memo] = weakref.WeakSet()


def sizeof(value: object) -> int:
    """Estimated bytes of ``value`` and of what it holds directly (and what those hold).

    Containers are followed two levels down (a tuple of tuples of strings, a dict of strings);
    a string or number shared with other objects is counted in full.
    """
    return _sizeof(value, 2)


def _sizeof(value: object, depth: int) -> int:
    size = sys.getsizeof(value)
    if depth and isinstance(value, tuple | list | frozenset | set):
        size += sum(_sizeof(item, depth - 1) for item in value)
    elif depth and isinstance(value, dict):
        size += sum(_sizeof(k, depth - 1) + _sizeof(v, depth - 1) for k, v in value.items())
    return size


class Memo:
    """What one cached pure function remembers: its owner, its byte budget, its estimated size.

    The cache itself is `functools.lru_cache` (a hit costs what a dict lookup costs); a miss
    counts the new entry, and at `due` entries `turn` measures one and empties the cache
    when the count at the mean size reaches the budget. Not locked: the results are a pure
    function's, so a cache two threads fill at once loses only work.
    """

    __slots__ = (
        "__weakref__",
        "budget",
        "count",
        "due",
        "empty",
        "entries",
        "measured",
        "owner",
        "unit",
    )

    def __init__(
        self, owner: str, budget: int, empty: Callable[[], None], entries: Callable[[], int]
    ) -> None:
        self.owner = owner
        """Who keeps it: the function (``module.function``) or the object it serves."""
        self.budget = budget
        """Bytes it may hold at most, as estimated (`unit`)."""
        self.empty = empty
        """Forgets every entry (the cache's ``cache_clear``)."""
        self.entries = entries
        """How many entries it holds now."""
        self.count = 0
        """Entries added since it was last emptied."""
        self.due = 1
        """The count at which `turn` measures an entry (and may empty the cache)."""
        self.measured = 0
        self.unit = 0.0
        """Mean bytes of an entry (`sizeof` of its arguments and result), over those measured."""
        _registry.add(self)

    def turn(self, key: object, value: object) -> None:
        """At the `due` count: measure the entry just added; empty the cache when full.

        The first `SAMPLE` entries are measured, then one in sixteen times as many (`sizeof`
        is slow); the cache is full when its count at the mean size reaches the budget.
        """
        self.measured += 1
        self.unit += (sizeof(key) + sizeof(value) - self.unit) / self.measured
        full = max(1, int(self.budget / max(self.unit, 1.0)))
        if self.count >= full:
            self.clear()
        step = 1 if self.measured < SAMPLE else 16 * SAMPLE
        self.due = min(full, self.count + step)

    def clear(self) -> None:
        """Forget every entry."""
        self.empty()
        self.count = 0
        self.due = 1

    @property
    def size(self) -> int:
        """Estimated bytes held now (at most `budget`)."""
        return int(self.count * self.unit)

    def __len__(self) -> int:
        return self.entries()


@dataclass(frozen=True, slots=True)
class MemoReport:
    """One live `Memo`: its owner, its entries, its estimated bytes and its budget."""

    owner: str
    entries: int
    size: int
    budget: int


def memos() -> list[MemoReport]:
    """Every live memo of the process, by owner (what a session's caches hold, and may hold)."""
    found = [MemoReport(m.owner, len(m), m.size, m.budget) for m in list(_registry)]
    return sorted(found, key=lambda report: report.owner)


class Memoized(Protocol[P, T_co]):
    """A function `memoized` wraps: called as the function, with its `Memo` and its cache."""

    memo: Memo
    """What it remembers (owner, budget, estimated size)."""

    @property
    def __wrapped__(self) -> Callable[P, T_co]:
        """The function itself, uncached."""
        ...

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> T_co:
        """The function's result, remembered."""
        ...

    def cache_clear(self) -> None:
        """Forget every entry (`functools.lru_cache`'s)."""
        ...


def memoized(owner: str, budget: int) -> Callable[[Callable[P, T]], Memoized[P, T]]:
    """Remember a pure function's results within ``budget`` bytes (`Memo`), keyed by its arguments.

    The function takes hashable arguments. The wrapper is `functools.lru_cache`'s, unbounded
    in entries and emptied at the budget; it has ``memo`` (the `Memo`) besides ``cache_clear()``
    and ``cache_info()``.
    """

    def wrap(function: Callable[P, T]) -> Memoized[P, T]:
        call: Callable[..., T] = function  # called with the arguments the cache was given

        def added(*args: Hashable, **named: Hashable) -> object:
            value = call(*args, **named)
            memo.count += 1
            if memo.count >= memo.due:
                memo.turn((args, named) if named else args, value)
            return value

        def added_one(key: Hashable) -> object:  # the same, for a function of one argument
            value = call(key)
            memo.count += 1
            if memo.count >= memo.due:
                memo.turn(key, value)
            return value

        cached = functools.lru_cache(maxsize=None)(added_one if _takes_one(function) else added)
        functools.update_wrapper(cached, function)
        memo = Memo(owner, budget, cached.cache_clear, lambda: cached.cache_info().currsize)
        cached.memo = memo  # type: ignore[attr-defined]  # what a test or a report reads
        return cast("Memoized[P, T]", cached)

    return wrap


def _takes_one(function: Callable[..., Any]) -> bool:
    """Whether ``function`` takes exactly one argument, by position."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    return len(parameters) == 1 and parameters[0].kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )
