"""A bounded cache for pure functions of short texts, such as a summary item's.

A compaction reads every live item of the summary again (its values, its inert form, what it
says); those reads depend on the item's text alone, so each text is read once and remembered.
Only texts up to `SHORT` characters are remembered, so whole messages and tool results pass
through uncached and the cache stays small (at most `ENTRIES` texts).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

__all__ = ["ENTRIES", "SHORT", "short_text_cache"]

R = TypeVar("R")

SHORT = 2_000
"""The longest text remembered: an item's, a sentence's; not a message's or a tool result's."""
ENTRIES = 16_384
"""Texts remembered per function, least recently used first out."""


def short_text_cache(function: Callable[[str], R]) -> Callable[[str], R]:
    """``function`` with its results for short texts remembered (it must be pure)."""
    cached = functools.lru_cache(maxsize=ENTRIES)(function)

    @functools.wraps(function)
    def read(text: str) -> R:
        return cached(text) if len(text) <= SHORT else function(text)

    return read
