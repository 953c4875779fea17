"""The prompt cache: whether a call's prefix asks for it, and the one note when it is not read."""

from __future__ import annotations

import threading

from progsum.policy._windows import find_profile
from progsum.summarizers.anthropic._call import Call
from progsum.summarizers.anthropic._sizes import prefix_tokens
from progsum.summarizers.anthropic._usage import Meter
from progsum.summary._update import SummarizerUsage

__all__ = ["CacheNotes", "caches"]


def caches(call: Call, model: str | None) -> bool:
    """Whether to mark the prefix for caching: unless it is below the model's minimum."""
    found = find_profile(model) if model else None
    minimum = found.cache_minimum if found is not None else None
    return minimum is None or prefix_tokens(call, model) >= minimum


class CacheNotes:
    """What one summarizer has seen of its prompt caches, to say once when one is not read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: set[str] = set()
        self._writes: dict[str, int] = {}
        self._noted = False

    def noted(self, meter: Meter, model: str | None) -> SummarizerUsage:
        """The call's usage, with the one note that a cache asked for is not being read.

        Each prefix (the summary and the consolidation tool) is followed apart: a note when its
        first call neither wrote nor read the cache (below the model's minimum), or when it was
        written again instead of read. Said once per summarizer.
        """
        usage = meter.usage()
        key = meter.cached
        if key is None:
            return usage
        with self._lock:
            if self._noted:
                return usage
            if usage.cache_read_input_tokens:
                self._reads.add(key)
                return usage
            writes = self._writes.get(key, 0)
            self._writes[key] = writes + 1
            note = ""
            if key in self._reads:
                return usage
            if not usage.cache_creation_input_tokens:
                note = (
                    f"{model} neither wrote nor read the prompt cache although the request "
                    "asked for it (cache_control on the system prompt): the prefix is below the "
                    "model's cache minimum, so each call pays full input price"
                )
            elif writes:
                note = (
                    f"{model} wrote the prompt cache again instead of reading it: the "
                    "cached prefix changes between calls, or calls are more than the cache "
                    "lifetime (5 minutes) apart"
                )
            if not note:
                return usage
            self._noted = True
        return usage.model_copy(update={"cache_note": note})
