"""The summary's history in rows: which tombstones and ledger entries a save must write.

A saved state's tombstones (``summary.retired``) and exact-value ledger are rows of their own,
numbered from 0, so the state row holds the live summary only. Both grow with the session and
change only at the end, almost always: a save writes the rows from the first one that differs
from what is stored. A store cannot compare with the stored rows without reading them all, so it
remembers, per thread, the tuples it last saved or loaded and the version they are stored at
(`Remembered`); a save based on that version compares with them, in memory (the tuples share
their items with the state, so the comparison is one identity check per item). A save that is
not based on what this store object saw (another process saved or loaded it) rewrites every row.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

from progsum.judge._values import StatedValue
from progsum.state._conversation import ConversationState
from progsum.summary._schema import Tombstone

__all__ = ["REMEMBERED_THREADS", "History", "Remembered", "history", "kept"]

REMEMBERED_THREADS = 256
"""Threads whose stored history a store object remembers (a worker's recent threads)."""


class History(NamedTuple):
    """A state's tombstones and ledger entries, as a store saves them in rows."""

    retired: tuple[Tombstone, ...]
    ledger: tuple[StatedValue, ...]


def history(state: ConversationState[Any]) -> History:
    """The tombstones and ledger entries of ``state``."""
    summary = state.summary
    return History(() if summary is None else summary.retired, state.ledger)


def kept(stored: Sequence[object], new: Sequence[object]) -> int:
    """How many of the ``stored`` rows ``new`` keeps as they are: their common prefix."""
    if len(new) >= len(stored) and new[: len(stored)] == stored:
        return len(stored)
    for at, (old, now) in enumerate(zip(stored, new, strict=False)):
        if old is not now and old != now:
            return at
    return min(len(stored), len(new))


class Remembered:
    """Per thread, the version a store last saved or loaded and the history stored with it.

    Thread-safe; the oldest of more than `REMEMBERED_THREADS` threads is forgotten (its next
    save rewrites its rows).
    """

    def __init__(self) -> None:
        self._threads: OrderedDict[str, tuple[int, History]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, thread_id: str, version: int, state: ConversationState[Any]) -> None:
        """Remember that ``state``'s history is what is stored at ``version``."""
        with self._lock:
            self._threads[thread_id] = (version, history(state))
            self._threads.move_to_end(thread_id)
            while len(self._threads) > REMEMBERED_THREADS:
                self._threads.popitem(last=False)

    def forget(self, thread_id: str) -> None:
        """Forget the thread (what is stored is not known any more)."""
        with self._lock:
            self._threads.pop(thread_id, None)

    def at(self, thread_id: str, version: int) -> History | None:
        """The history stored at ``version``, if this is the version remembered; else None."""
        with self._lock:
            found = self._threads.get(thread_id)
        return found[1] if found is not None and found[0] == version else None
