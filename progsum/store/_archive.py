"""Where folded messages go: the `Archive` protocol and an in-memory implementation.

Compaction is for the model, not for storage. Before the engine returns a state whose cutoff has
moved, it writes the folded segment (every message in full, with its log index) and the compaction
event to the compactor's archive (invariant 4 in DESIGN.md). If that write fails, the engine keeps
the old state. `progsum.store._sqlite.SQLiteStore` is the durable default; `MemoryArchive` serves
tests and single-process agents that persist nothing.

Writes are idempotent: writing the same segment again (a retry after a crash between archiving and
saving the state) stores nothing twice.

Every store keeps one contract, which this module states in code: `check_thread` says which
thread ids any store can hold (the same `ConfigError` everywhere), `check_search` which search
requests are valid, and `fold` and `stored_text` how `search` matches (the same results
everywhere). A store that also ranks (`Ranker`: every store progsum ships) answers recall's
queries from its own index, with the one tokenisation and scorer of `progsum.recall`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from progsum.errors import ConfigError
from progsum.messages._formats import to_record
from progsum.recall._index import Index, Ranges
from progsum.recall._terms import document, fold
from progsum.state._events import CompactionEvent
from progsum.state._log import check_thread_id

__all__ = [
    "MAX_THREAD_ID",
    "Archive",
    "ArchivedMessage",
    "MemoryArchive",
    "Ranker",
    "check_range",
    "check_search",
    "check_segment",
    "check_thread",
    "escaped",
    "fold",
    "matches",
    "stored_text",
]

MAX_THREAD_ID = 500
"""Most characters of a thread id: PostgreSQL's key index holds at most ~2,700 bytes per row,
and 500 characters of UTF-8 are at most 2,000."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_NUL = "\0"


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
        """Archived entries whose JSON contains ``text``, in log order, at most ``limit``.

        Both sides are compared after `fold` (NFKC, then case folding), on the JSON text
        `stored_text` gives.

        Raises:
            ConfigError: a bad thread id (see `check_thread`), or see `check_search`.
        """
        ...

    def events(self, thread_id: str) -> list[CompactionEvent]:
        """The compaction events archived for the thread, in order."""
        ...


@runtime_checkable
class Ranker(Protocol):
    """An archive that ranks its folded messages for recall (`progsum.recall`)."""

    def rank(
        self, thread_id: str, query: Sequence[str], within: Ranges, *, limit: int
    ) -> list[tuple[int, float]]:
        """``(log index, score)`` of the best ``limit`` archived messages for ``query``.

        ``query`` holds `progsum.recall._terms.query_terms`; only messages whose log index lies
        in one of the ``within`` ranges count, for the ranking and for its statistics alike.
        The order and scores are `progsum.recall._rank`'s over the messages' `document` text,
        the same in every store.

        Raises:
            ArchiveError: the index could not be read.
            ConfigError: a bad thread id.
        """
        ...


def escaped(text: str) -> str:
    r"""JSON text with each lone surrogate written as its ``\\uXXXX`` escape.

    ``json.dumps(..., ensure_ascii=False)`` keeps a lone surrogate (text cut inside a UTF-16
    pair) as a raw code point, which no UTF-8 database accepts; json.dumps only emits such code
    points inside strings, where the escape reads back as the same character.
    """
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def stored_text(record: Any) -> str:  # noqa: ANN401 - an archived JSON value
    """The JSON text every store keeps for a message record, and the text `search` reads."""
    return escaped(json.dumps(record, ensure_ascii=False))


def matches(message: Any, text: str) -> bool:  # noqa: ANN401 - an archived JSON value
    """Whether ``text`` occurs in the archived message's JSON text, compared after `fold`."""
    return fold(text) in fold(stored_text(message))


class MemoryArchive:
    """An `Archive` in a dict: for tests and agents that keep nothing across processes.

    States forked from one another share their thread id; when two forks archive different
    messages at the same log index, the archive keeps both and serves neither, so a fork's recall
    reads its own log instead of the other fork's message.
    """

    def __init__(self) -> None:
        self._messages: dict[str, dict[int, list[ArchivedMessage]]] = {}
        self._events: dict[str, dict[int, CompactionEvent]] = {}
        self._indexes: dict[str, Index] = {}
        self._lock = threading.Lock()

    def put(
        self,
        thread_id: str,
        start: int,
        messages: Sequence[Any],
        event: CompactionEvent,
    ) -> None:
        """Store the segment (see `Archive.put`)."""
        check_segment(thread_id, start, messages, event)
        now = datetime.now(UTC)
        with self._lock:
            stored = self._messages.setdefault(thread_id, {})
            ranked = self._indexes.setdefault(thread_id, Index())
            for offset, message in enumerate(messages):
                index = start + offset
                record = to_record(message)
                versions = stored.setdefault(index, [])
                if all(version.message != record for version in versions):
                    versions.append(ArchivedMessage(thread_id, index, record, now, event.number))
                    if len(versions) == 1:
                        ranked.add(index, document(record))
                    else:  # two forks disagree: neither is served, nor ranked
                        ranked.remove(index)
            self._events.setdefault(thread_id, {}).setdefault(event.number, event)

    def get(self, thread_id: str, start: int = 0, end: int | None = None) -> list[ArchivedMessage]:
        """Archived entries in ``[start, end)`` (see `Archive.get`)."""
        check_thread(thread_id)
        check_range(start, end)
        stored = self._messages.get(thread_id, {})
        return [
            stored[i][0]
            for i in sorted(stored)
            if i >= start and (end is None or i < end) and len(stored[i]) == 1
        ]

    def search(self, thread_id: str, text: str, *, limit: int = 20) -> list[ArchivedMessage]:
        """Archived entries containing ``text`` (see `Archive.search`)."""
        check_thread(thread_id)
        check_search(text, limit)
        needle = fold(text)
        found = [e for e in self.get(thread_id) if needle in fold(stored_text(e.message))]
        return found[:limit]

    def rank(
        self, thread_id: str, query: Sequence[str], within: Ranges, *, limit: int
    ) -> list[tuple[int, float]]:
        """The best archived messages for a recall query (see `Ranker.rank`)."""
        check_thread(thread_id)
        index = self._indexes.get(thread_id)
        return [] if index is None else index.search(query, within, limit=limit)

    def events(self, thread_id: str) -> list[CompactionEvent]:
        """The thread's archived compaction events (see `Archive.events`)."""
        check_thread(thread_id)
        stored = self._events.get(thread_id, {})
        return [stored[n] for n in sorted(stored)]

    def threads(self) -> list[str]:
        """Thread ids with anything archived, sorted."""
        return sorted(self._messages)


def check_segment(thread_id: object, start: object, messages: object, event: object) -> None:
    """Refuse the arguments of an `Archive.put` that would file a segment nowhere.

    Raises:
        ConfigError: a bad thread id, start, message list or event, naming it and the fix.
    """
    check_thread(thread_id)
    _check_index("start", start)
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ConfigError(
            f"messages={messages!r} is not a list of the messages to archive; pass the folded "
            "messages as a list, in log order"
        )
    if not isinstance(event, CompactionEvent):
        raise ConfigError(
            f"event={event!r} is not a CompactionEvent; pass the event of the compaction that "
            "folded the messages"
        )


def check_range(start: object, end: object) -> None:
    """Refuse the bounds of an `Archive.get` that name no range of log indices.

    Raises:
        ConfigError: naming the bound and the fix.
    """
    _check_index("start", start)
    if end is None:
        return
    _check_index("end", end)
    assert isinstance(start, int)  # noqa: S101 - checked just above
    assert isinstance(end, int)  # noqa: S101 - checked just above
    if end < start:
        raise ConfigError(
            f"end={end} is before start={start}; give end >= start, or None for everything "
            "from start on"
        )


def _check_index(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        hint = " (or None: to the end)" if name == "end" else ""
        raise ConfigError(f"{name}={value!r} must be a log index (0 or more){hint}")


def check_thread(thread_id: object) -> None:
    """Refuse a thread id that some store could not hold, the same way in every store.

    A thread id is a non-blank string (`progsum.state._log.check_thread_id`) of at most
    `MAX_THREAD_ID` characters that UTF-8 can encode and PostgreSQL's ``text`` can hold: no
    lone surrogate, no NUL.

    Raises:
        ConfigError: naming the id, what is wrong with it and an id that works.
    """
    check_thread_id(thread_id)
    assert isinstance(thread_id, str)  # noqa: S101 - check_thread_id refused anything else
    if len(thread_id) > MAX_THREAD_ID:
        problem = f"has {len(thread_id)} characters, more than the {MAX_THREAD_ID} a store keys"
    elif _NUL in thread_id:
        problem = f"holds a NUL character (U+0000) at position {thread_id.index(_NUL)}"
    elif found := _LONE_SURROGATE.search(thread_id):
        problem = _surrogate(found)
    else:
        return
    raise ConfigError(
        f"thread_id={thread_id!r} {problem}, which no store can keep; name the conversation with "
        "printable text, e.g. 'support-4821'"
    )


def check_search(text: object, limit: object) -> None:
    """Refuse a search no store can answer, the same way in every store.

    Search text must be a string without a lone surrogate (no stored message contains one: the
    stores keep it escaped), and ``limit`` a count (0 or more).

    Raises:
        ConfigError: naming the value and the fix.
    """
    if not isinstance(text, str):
        raise ConfigError(f"text={text!r} must be the string to search for, e.g. 'A-1234'")
    if found := _LONE_SURROGATE.search(text):
        raise ConfigError(
            f"text={text!r} {_surrogate(found)}, which no stored message contains; search for "
            "the text around it, or decode the text with errors='replace'"
        )
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise ConfigError(f"limit={limit!r} must be 0 or more; use the default 20")


def _surrogate(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"holds a lone surrogate (U+{code:04X}) at position {found.start()}"
