"""Saves whose answer was lost: how a save is recognised, and what the store says about it.

A connection can drop after a save's COMMIT was sent and before its answer arrives (a server
restart, a terminated backend, a cut network): the save may or may not have committed, and
retrying a save that did would store its change twice. So every save also writes a row of the
store's ledger (the ``saves`` table): the version it wrote, the log length it was based on and a
`digest` of what it wrote. After a lost answer the store asks the ledger, holding the thread's
write lock (so the lost transaction has ended), whether that version holds that digest
(`settle`):

- yes: the save committed, and it returns its version as if nothing had happened;
- no: it raises an `ArchiveError` saying it was not committed (`not_committed`);
- the database cannot be asked within the store's ``timeout``: it raises one saying the outcome
  is unknown and a retry is safe (`unknown`), because a retry is recognised: a save of the same
  state on the same version finds its digest in the ledger and returns the version it wrote
  without writing anything, and `Pending` keeps an ``update``'s unknown save so that the retry of
  that update (from the same calling thread or task) returns the save if it committed instead of
  applying the change a second time.

The ledger keeps the last `KEEP` versions of each thread. When later saves pruned a save's row
before the store could ask, the stored log answers: the save committed when the messages it
appended stand where it wrote them (`progsum.store._saving.Saving`).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from progsum.errors import ArchiveError
from progsum.state._conversation import ConversationState

__all__ = [
    "KEEP",
    "PRUNE_EVERY",
    "Pending",
    "Save",
    "digest",
    "may_be_written",
    "not_committed",
    "settle",
    "unchanged",
    "unknown",
]

KEEP = 64
"""Ledger rows kept per thread: a save is recognised until 64 later saves of its thread."""
PRUNE_EVERY = 16
"""Every 16th version of a thread, its save drops the ledger rows older than `KEEP`."""


@dataclass(frozen=True, slots=True)
class Save:
    """One save as the ledger records it: what tells it from any other save of the thread."""

    thread_id: str
    base: int
    """The version it was based on (0 for a new thread)."""
    length: int
    """Messages of the saved log it was based on."""
    token: str
    """`digest` of what it wrote."""

    @property
    def version(self) -> int:
        """The version it writes."""
        return self.base + 1


def digest(
    base: int, length: int, state: ConversationState[Any], record: str, new: Sequence[str]
) -> str:
    """A digest of what a save based on ``base`` (``length`` messages) writes for ``state``.

    It covers the state row (``record``), the messages new since the base (their stored text,
    ``new``), the counts and last entry of the events and cleared marks, and the counts and last
    entry of the tombstones and the ledger: two saves on one version with the same digest wrote
    the same state, so telling them apart never matters.
    """
    events, ledger = state.events, state.ledger
    retired = () if state.summary is None else state.summary.retired
    parts = [
        f"{base}:{length}:{len(state)}:{len(events)}:{len(state.cleared)}",
        f"{len(retired)}:{len(ledger)}",
        record,
        *new,
        events[-1].model_dump_json() if events else "",
        retired[-1].model_dump_json() if retired else "",
        repr(ledger[-1]) if ledger else "",
    ]
    hashed = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        hashed.update(len(data).to_bytes(8, "big") + data)
    return hashed.hexdigest()


def settle(ask: Callable[[float], bool], timeout: float) -> bool | None:
    """Whether a save committed, asking ``ask(seconds left)`` until it answers or time runs out.

    ``ask`` raises `ArchiveError` while the database cannot be reached (a restart); it is asked
    again after 50 ms, doubling to 1 s. None: no answer within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    pause = 0.05
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            return ask(left)
        except ArchiveError:
            if time.monotonic() + pause >= deadline:
                return None
            time.sleep(pause)
            pause = min(1.0, pause * 2)


class Pending:
    """The unknown saves of ``update`` calls, by thread id and caller, until their retry.

    A caller is a thread or an asyncio task; the entry belongs to the process that made it (a
    forked child does not take its parent's retry for its own).
    """

    def __init__(self) -> None:
        self._saves: dict[tuple[str, Hashable], tuple[int, Save, ConversationState[Any]]] = {}
        self._lock = threading.Lock()

    def keep(self, caller: Hashable, save: Save, state: ConversationState[Any]) -> None:
        """Remember ``save`` of ``state``, whose outcome is unknown, for ``caller``'s retry."""
        with self._lock:
            self._saves[save.thread_id, caller] = (os.getpid(), save, state)

    def take(self, thread_id: str, caller: Hashable) -> tuple[Save, ConversationState[Any]] | None:
        """Forget and return ``caller``'s unknown save of ``thread_id``, if it has one."""
        with self._lock:
            found = self._saves.pop((thread_id, caller), None)
        if found is None or found[0] != os.getpid():
            return None
        return found[1], found[2]


def unchanged(failure: str, remedy: str) -> str:
    """The message of a call that failed before it could change anything."""
    return f"{failure}; nothing was changed by it, so retry {remedy}"


def not_committed(failure: str, medium: str, remedy: str) -> str:
    """The message of a save whose answer was lost and which the ledger says did not commit."""
    return (
        f"{failure}; it was not committed (the {medium} says so), so nothing was changed: "
        f"retry {remedy}"
    )


def unknown(failure: str, medium: str, timeout: float, save: Save) -> str:
    """The message of a save whose answer was lost and whose outcome the store cannot learn."""
    return (
        f"{failure}; the answer to its COMMIT was lost and whether it committed is unknown (the "
        f"{medium} could not be asked within {timeout:g} s); retry is safe: the store recognises "
        f"the save by its versions ({save.base} to {save.version}), so retrying this update or "
        "this save is a no-op if it committed"
    )


def may_be_written(failure: str) -> str:
    """The message of an archive write whose answer was lost (archive writes are idempotent)."""
    return (
        f"{failure}; it may have been written before the answer was lost; retry is safe: "
        "archive writes are idempotent"
    )
