"""A bounded cache for pure functions of short texts, such as a summary item's.

A compaction reads every live item of the summary again (its values, its inert form, what it
says); those reads depend on the item's text alone, so each text is read once and remembered
(`progsum._memo.memoized`: an owner and a byte budget). Only texts up to `SHORT` characters are
remembered, so whole messages and tool results pass through uncached.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar, overload

from progsum._memo import memoized

__all__ = ["SHORT", "TEXTS_BUDGET", "short_text_cache"]

R = TypeVar("R")

SHORT = 2_000
"""The longest text remembered: an item's, a sentence's; not a message's or a tool result's."""
TEXTS_BUDGET = 256 * 1024
"""Bytes a `short_text_cache` keeps, unless the decorated function says otherwise."""


@overload
def short_text_cache(function: Callable[[str], R]) -> Callable[[str], R]: ...
@overload
def short_text_cache(*, budget: int) -> Callable[[Callable[[str], R]], Callable[[str], R]]: ...
def short_text_cache(
    function: Callable[[str], R] | None = None, *, budget: int = TEXTS_BUDGET
) -> Callable[[str], R] | Callable[[Callable[[str], R]], Callable[[str], R]]:
    """``function`` with its results for texts up to `SHORT` characters remembered (`memoized`).

    Used bare (``@short_text_cache``: `TEXTS_BUDGET`) or with a budget
    (``@short_text_cache(budget=...)``); the owner is the function's module and name.
    """

    def wrap(function: Callable[[str], R]) -> Callable[[str], R]:
        owner = f"{function.__module__}.{function.__qualname__}"
        cached = memoized(owner, budget)(function)

        @functools.wraps(function)
        def read(text: str) -> R:
            return cached(text) if len(text) <= SHORT else function(text)

        read.memo = cached.memo  # type: ignore[attr-defined]  # what a test or a report reads
        read.cache_clear = cached.cache_clear  # type: ignore[attr-defined]  # as functools'
        return read

    return wrap if function is None else wrap(function)
