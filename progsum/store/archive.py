"""Where folded messages go: the `Archive` protocol and an in-memory implementation.

Compaction is for the model, not for storage. Before the engine returns a state whose cutoff has
moved, it writes the folded segment (every message in full, with its log index) and the compaction
event to the compactor's archive (invariant 4 in DESIGN.md). If that write fails, the engine keeps
the old state. `progsum.store.sqlite.SQLiteStore` is the durable default; `MemoryArchive` serves
tests and single-process agents that persist nothing.

Writes are idempotent: writing the same segment again (a retry after a crash between archiving and
saving the state) stores nothing twice.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from progsum.errors import ConfigError
from progsum.messages.formats import to_record
from progsum.state.log import check_thread_id

if TYPE_CHECKING:
    from progsum.state.events import CompactionEvent

__all__ = [
    "Archive",
    "ArchivedMessage",
    "MemoryArchive",
    "check_segment",
    "matches",
]


@dataclass(frozen=True, slots=True)
class ArchivedMessage:
    """One archived log message."""

    thread_id: str
    index: int
    """Position in the conversation's log (0-based)."""
    message: Any
    """The message as JSON-compatible data (SDK objects are stored as their dicts)."""
    archived_at: datetime
    """When it was first written (UTC)."""
    event: int | None
    """Number of the compaction event that archived it."""


@runtime_checkable
class Archive(Protocol):
    """Append-only storage of folded messages and compaction events, by thread id."""

    def put(
        self,
        thread_id: str,
        start: int,
        messages: Sequence[Any],
        event: CompactionEvent,
    ) -> None:
        """Store ``messages`` as log entries ``start, start + 1, ...`` with the event.

        Must be durable when it returns, and idempotent: entries already stored are kept as they
        are.

        Raises:
            ArchiveError: the write failed; nothing of it is visible.
        """
        ...

    def get(self, thread_id: str, start: int = 0, end: int | None = None) -> list[ArchivedMessage]:
        """Archived entries with ``start <= index < end``, in log order."""
        ...

    def search(self, thread_id: str, text: str, *, limit: int = 20) -> list[ArchivedMessage]:
        """Archived entries whose JSON contains ``text`` (case-insensitive), in log order."""
        ...

    def events(self, thread_id: str) -> list[CompactionEvent]:
        """The compaction events archived for the thread, in order."""
        ...


def matches(message: Any, text: str) -> bool:  # noqa: ANN401 - an archived JSON value
    """Whether ``text`` occurs in the archived message's text, ignoring case."""
    return text.casefold() in json.dumps(message, ensure_ascii=False).casefold()


class MemoryArchive:
    """An `Archive` in a dict: for tests and agents that keep nothing across processes.

    States forked from one another share their thread id; when two forks archive different
    messages at the same log index, the archive keeps both and serves neither, so a fork's recall
    reads its own log instead of the other fork's message.
    """

    def __init__(self) -> None:
        self._messages: dict[str, dict[int, list[ArchivedMessage]]] = {}
        self._events: dict[str, dict[int, CompactionEvent]] = {}
        self._lock = threading.Lock()

    def put(
        self,
        thread_id: str,
        start: int,
        messages: Sequence[Any],
        event: CompactionEvent,
    ) -> None:
        """Store the segment (see `Archive.put`)."""
        check_segment(thread_id, start)
        now = datetime.now(UTC)
        with self._lock:
            stored = self._messages.setdefault(thread_id, {})
            for offset, message in enumerate(messages):
                index = start + offset
                record = to_record(message)
                versions = stored.setdefault(index, [])
                if all(version.message != record for version in versions):
                    versions.append(ArchivedMessage(thread_id, index, record, now, event.number))
            self._events.setdefault(thread_id, {}).setdefault(event.number, event)

    def get(self, thread_id: str, start: int = 0, end: int | None = None) -> list[ArchivedMessage]:
        """Archived entries in ``[start, end)`` (see `Archive.get`)."""
        stored = self._messages.get(thread_id, {})
        return [
            stored[i][0]
            for i in sorted(stored)
            if i >= start and (end is None or i < end) and len(stored[i]) == 1
        ]

    def search(self, thread_id: str, text: str, *, limit: int = 20) -> list[ArchivedMessage]:
        """Archived entries containing ``text`` (see `Archive.search`)."""
        found = [entry for entry in self.get(thread_id) if matches(entry.message, text)]
        return found[:limit]

    def events(self, thread_id: str) -> list[CompactionEvent]:
        """The thread's archived compaction events (see `Archive.events`)."""
        stored = self._events.get(thread_id, {})
        return [stored[n] for n in sorted(stored)]

    def threads(self) -> list[str]:
        """Thread ids with anything archived, sorted."""
        return sorted(self._messages)


def check_segment(thread_id: object, start: int) -> None:
    """Refuse the arguments of an `Archive.put` that would file a segment nowhere.

    Raises:
        ConfigError: a bad thread id, or a negative start.
    """
    check_thread_id(thread_id)
    if start < 0:
        raise ConfigError(f"start={start} must be a log index (0 or more)")
