"""One SQL layer under both durable stores: the statements, written once, and the flows over them.

`SQLStore` is what `progsum.store.sqlite.SQLiteStore` and `progsum.store.postgres.PostgresStore`
share: the `progsum.store.archive.Archive` protocol (put, get, search, events), saved states
with optimistic versions (save, load, ``update``), the thread list and the Markdown export. Its
statements are written once, in `Statements` (a store gives the few it spells its own way: the
text search, the thread list), and a `Dialect` spells them for one database (table names,
placeholders) and reads its values (timestamps, search patterns, index bounds). A store subclass
supplies only its connections: its write transaction (and how the writers of one thread queue),
its read snapshot, how it sends many rows at once, and how its driver's failures become
`ArchiveError`; it may read a saved state in fewer statements than the portable reads here.

One table holds every log message once, whether the archive wrote it (folded, with the event that
folded it) or a save did (the live tail); a save writes only the messages appended since the last
one, plus one JSON row for the rest of the state. Every save is a single transaction: after a
crash at any point the thread is at its old version or its new one, never in between, and a
save against a stale version raises `ConflictError` and writes nothing.

Archive writes are checked against the saved state when it changes: a worker may archive a segment
and then lose the race to save (it gets `ConflictError`), so each save drops what the archive holds
beyond the new log, clears marks of events the saved state does not have, and marks the segments
its new compactions folded as archived by them. The archive therefore always matches the saved
state, and is complete even when the engine wrote nothing to it first.
"""

from __future__ import annotations

import dataclasses
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from progsum.errors import ConfigError, ConflictError
from progsum.state.conversation import ConversationState
from progsum.state.events import CompactionEvent
from progsum.state.log import check_thread_id
from progsum.store.archive import ArchivedMessage, check_segment
from progsum.store.export import markdown
from progsum.store.rows import (
    SavedHead,
    SavedRows,
    archived,
    dump,
    dump_mark,
    dump_state,
    state_data,
)
from progsum.store.updating import Stored, Updating
from progsum.summary.schema import Summary
from progsum.summary.schema import SummaryT as S

__all__ = ["STORE_LOGGER", "Connection", "Dialect", "SQLStore", "Statements"]

STORE_LOGGER = logging.getLogger("progsum.store")

TABLES = ("messages", "events", "states", "cleared")
"""The store's tables, as `Statements` name them (``{messages}``, ...)."""


class Rows(Protocol):
    """The result of one statement, as both drivers' cursors return it."""

    def fetchone(self) -> Any:  # noqa: ANN401 - a driver's row
        """The next row, or None."""

    def fetchall(self) -> list[Any]:
        """The remaining rows."""


class Connection(Protocol):
    """What the shared flows ask of a driver's connection: one statement at a time."""

    def execute(self, sql: str, params: tuple[Any, ...], /) -> Rows:
        """Run ``sql`` with positional ``params``."""


C = TypeVar("C", bound=Connection)


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    """What one database spells differently in the store's SQL, and how its values come back."""

    prefix: str
    """Prefix of every table name."""
    placeholder: str
    """The driver's positional parameter."""
    medium: str
    """What holds the store ("file", "database"), as a damage message names it."""
    now: Callable[[], object]
    """The current time, as the driver writes it into a timestamp column."""
    timestamp: Callable[[Any], datetime]
    """A timestamp column's value as an aware UTC datetime."""
    pattern: Callable[[str], str]
    """Search text as the parameter of `Statements.search`."""
    bounds: Callable[[int, int | None], tuple[int, int]]
    """``get``'s ``start`` and ``end`` (None: to the end) as the query's index bounds."""

    def spell(self, template: str) -> str:
        """``template`` for this database: its table names and placeholders."""
        tables = {name: self.prefix + name for name in TABLES}
        return template.format(**tables).replace("?", self.placeholder)


@dataclass(frozen=True, slots=True, kw_only=True)
class Statements:
    """The store's SQL, written once: ``{messages}`` and the like name tables, ``?`` a parameter.

    Both databases read the upserts (``INSERT ... AS alias ... ON CONFLICT``) alike; a store
    gives the two statements that differ (`search`, `threads`) and may replace any other, then
    `spelled` gives the statements in its `Dialect`.
    """

    search: str
    """Archived entries of a thread whose ``message`` contains a text, ignoring case, in log
    order: parameters thread id, `Dialect.pattern` of the text, limit."""
    threads: str
    """The thread ids with a saved state or anything archived."""

    put_message: str = """
INSERT INTO {messages} AS m (thread_id, idx, message, archived_at, event)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (thread_id, idx) DO UPDATE SET
    message = CASE WHEN m.idx >= ? THEN excluded.message ELSE m.message END,
    archived_at = excluded.archived_at,
    event = excluded.event
WHERE m.archived_at IS NULL OR (m.idx >= ? AND m.message <> excluded.message)
"""
    """Archive a message: kept as stored when saved or archived already; a provisional one (beyond
    the saved log, whose length is both last parameters) that differs is replaced."""
    put_event: str = """
INSERT INTO {events} AS e (thread_id, number, event) VALUES (?, ?, ?)
ON CONFLICT (thread_id, number) DO UPDATE SET event = excluded.event
WHERE e.event <> excluded.event
"""
    """Archive an event (one a stale writer left under its number is replaced)."""
    save_message: str = """
INSERT INTO {messages} AS m (thread_id, idx, message) VALUES (?, ?, ?)
ON CONFLICT (thread_id, idx) DO UPDATE SET
    message = excluded.message, archived_at = NULL, event = NULL
WHERE m.message <> excluded.message
"""
    """Save a log message; a provisional archived copy of another message at its index is
    replaced."""
    unmark_stale: str = """
UPDATE {messages} SET archived_at = NULL, event = NULL WHERE thread_id = ? AND event > ?
"""
    """Forget archive marks of events the saved state does not have (a stale writer's)."""
    unmark_outside: str = """
UPDATE {messages} SET archived_at = NULL, event = NULL
WHERE thread_id = ? AND event = ? AND (idx < ? OR idx >= ?)
"""
    """Forget marks of a new event's number outside its folded range (a stale writer's)."""
    mark_folded: str = """
UPDATE {messages} SET archived_at = COALESCE(archived_at, ?), event = ?
WHERE thread_id = ? AND idx >= ? AND idx < ? AND (event IS NULL OR event <> ?)
"""
    """Mark a new compaction's segment archived by it (when the engine wrote no archive)."""
    save_state: str = """
INSERT INTO {states} (thread_id, version, length, events, cleared, state, saved_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (thread_id) DO UPDATE SET
    version = excluded.version, length = excluded.length, events = excluded.events,
    cleared = excluded.cleared, state = excluded.state, saved_at = excluded.saved_at
"""
    """The saved state's row: its new version, counters and JSON."""
    save_cleared: str = """
INSERT INTO {cleared} (thread_id, number, mark) VALUES (?, ?, ?)
ON CONFLICT (thread_id, number) DO UPDATE SET mark = excluded.mark
"""
    """One cleared mark of the saved state; ``states.cleared`` counts them (NULL for a row of the
    first layout, whose marks are in its JSON)."""
    drop_messages: str = "DELETE FROM {messages} WHERE thread_id = ? AND idx >= ?"
    """Drop the messages beyond the saved log (a stale writer's provisional archive)."""
    drop_events: str = "DELETE FROM {events} WHERE thread_id = ? AND number > ?"
    """Drop the events the saved state does not have."""
    drop_cleared: str = "DELETE FROM {cleared} WHERE thread_id = ? AND number >= ?"
    """Drop the cleared marks the saved state does not have."""
    head: str = "SELECT version, length, events, cleared FROM {states} WHERE thread_id = ?"
    """The saved state's counters, which a save reads first."""
    last_message: str = "SELECT message FROM {messages} WHERE thread_id = ? AND idx = ?"
    """One stored message (the saved log's last, which a save must extend)."""
    state: str = "SELECT version, length, events, cleared, state FROM {states} WHERE thread_id = ?"
    """The saved state's row: counters and JSON (then its log, events and marks)."""
    log: str = "SELECT message FROM {messages} WHERE thread_id = ? AND idx < ? ORDER BY idx"
    """The saved log's messages, in order."""
    event_rows: str = (
        "SELECT event FROM {events} WHERE thread_id = ? AND number <= ? ORDER BY number"
    )
    """The saved state's events, in order."""
    mark_rows: str = "SELECT mark FROM {cleared} WHERE thread_id = ? AND number < ? ORDER BY number"
    """The saved state's cleared marks, in order."""
    committed: str = "SELECT length, events FROM {states} WHERE thread_id = ?"
    """The saved log length and event count, which an archive write checks."""
    saved_key: str = "SELECT version, length, events, saved_at FROM {states} WHERE thread_id = ?"
    """What tells one save of the thread from another (see `Updating`)."""
    some_threads: str = "SELECT thread_id FROM {states} LIMIT 6"
    """A few saved thread ids, for the message about an unknown one."""
    archived: str = (
        "SELECT idx, message, archived_at, event FROM {messages} WHERE thread_id = ? "
        "AND archived_at IS NOT NULL AND idx >= ? AND idx < ? ORDER BY idx"
    )
    """Archived entries of a log range, in order."""
    events: str = "SELECT event FROM {events} WHERE thread_id = ? ORDER BY number"
    """Every archived event of the thread, in order."""

    def spelled(self, dialect: Dialect) -> Statements:
        """Every statement as ``dialect`` spells it."""
        fields = dataclasses.fields(self)
        return Statements(**{f.name: dialect.spell(getattr(self, f.name)) for f in fields})


def _saved(thread_id: str, version: int, state: ConversationState[Any]) -> int:
    """``version``, after the DEBUG line on ``progsum.store`` each store writes per save."""
    STORE_LOGGER.debug(
        "saved thread %s version %d: %d messages, %d events",
        thread_id,
        version,
        len(state),
        len(state.events),
    )
    return version


class SQLStore(Updating, ABC, Generic[C]):
    """The archive and saved states of many conversations in one SQL database.

    A subclass sets `dialect` and `sql` (its `Statements`, spelled in its dialect) and supplies
    the connections; it may read a saved state in fewer statements (`_read_head`, `_read_saved`,
    with `_loading`). Everything else is here.
    """

    dialect: ClassVar[Dialect]
    sql: ClassVar[Statements]
    where: str
    """The store, as messages name it."""

    # -- what a database supplies ----------------------------------------------------------------

    @abstractmethod
    def _writing(self, thread_id: str) -> AbstractContextManager[C]:
        """A write transaction in which the writers of ``thread_id`` queue.

        Committed when the block ends, rolled back when it raises.
        """

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[C]:
        """A read-only transaction on one snapshot (for reads of several statements)."""

    @abstractmethod
    def _reading(self) -> AbstractContextManager[C]:
        """A connection for a read of one statement."""

    def _loading(self) -> AbstractContextManager[C]:
        """A connection for `_read_saved`: a snapshot, as it reads several statements."""
        return self._snapshot()

    @abstractmethod
    def _errors(self, action: str) -> AbstractContextManager[None]:
        """Turn the driver's failures into ArchiveError naming the store and the action."""

    @abstractmethod
    def _executemany(self, db: C, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Run ``sql`` once per row of ``rows`` in the current transaction."""

    @abstractmethod
    def close(self) -> None:
        """Close the connections this process opened; the store reopens them when used again."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the Archive protocol ---------------------------------------------------------------------

    def put(
        self,
        thread_id: str,
        start: int,
        messages: Sequence[Any],
        event: CompactionEvent,
    ) -> None:
        """Archive ``messages`` as log entries ``start, start + 1, ...`` with ``event``.

        Idempotent and durable on return (see `progsum.store.archive.Archive.put`).

        Raises:
            ConfigError: ``thread_id`` or ``start`` is invalid.
            ArchiveError: the write failed; nothing of it is stored.
        """
        check_segment(thread_id, start)
        now = self.dialect.now()
        rows = [
            (thread_id, start + offset, dump(message), now, event.number)
            for offset, message in enumerate(messages)
        ]
        action = f"archive messages of thread {thread_id!r}"
        with self._errors(action), self._writing(thread_id) as db:
            length, events = self._committed(db, thread_id)
            if event.number <= events:
                return  # the saved state has this event: its save archived the segment already
            self._executemany(db, self.sql.put_message, [(*row, length, length) for row in rows])
            db.execute(self.sql.put_event, (thread_id, event.number, event.model_dump_json()))

    def get(self, thread_id: str, start: int = 0, end: int | None = None) -> list[ArchivedMessage]:
        """Archived entries with ``start <= index < end``, in log order."""
        with self._errors(f"read the archive of thread {thread_id!r}"), self._reading() as db:
            return self._read_archive(db, thread_id, start, end)

    def search(self, thread_id: str, text: str, *, limit: int = 20) -> list[ArchivedMessage]:
        """Archived entries whose JSON contains ``text`` (ignoring case), in log order."""
        params = (thread_id, self.dialect.pattern(text), limit)
        with self._errors(f"search the archive of thread {thread_id!r}"), self._reading() as db:
            rows = db.execute(self.sql.search, params).fetchall()
        return [archived(thread_id, row, self.dialect.timestamp) for row in rows]

    def events(self, thread_id: str) -> list[CompactionEvent]:
        """The compaction events archived for the thread, in order."""
        with self._errors(f"read the events of thread {thread_id!r}"), self._reading() as db:
            return self._read_events(db, thread_id)

    # -- saved states -----------------------------------------------------------------------------

    def save(self, state: ConversationState[Any], *, expected_version: int | None) -> int:
        """Save ``state`` under ``state.thread_id`` and return the thread's new version.

        Only the messages appended since the stored state are written. Everything happens in one
        transaction: on any failure the stored state is the old one.

        Args:
            state: The state; it must extend the stored one (the log is append-only).
            expected_version: The version it was loaded at, or None to create a new thread.

        Raises:
            ConfigError: the state has no thread id, is shorter than the stored log or differs
                from it, or ``expected_version`` names a thread that was never saved.
            ConflictError: another writer saved the thread since (or created it, for None);
                nothing was written.
            ArchiveError: the write failed; nothing was written.
        """
        thread_id = state.thread_id
        if thread_id is None:
            raise ConfigError(
                "the state has no thread_id, so the store cannot file it; build it with "
                "ConversationState(messages, thread_id='...')"
            )
        record = dump_state(state)
        now = self.dialect.now()
        with self._errors(f"save thread {thread_id!r}"), self._writing(thread_id) as db:
            head = self._read_head(db, thread_id)
            version, length, events, cleared, last = head or SavedHead(0, 0, 0, 0, None)
            _check_version(thread_id, expected_version, head is not None, version)
            _check_extends(state, thread_id, length, last)
            self._write_log(db, state, thread_id=thread_id, length=length, events=events, now=now)
            marks = state.cleared
            self._executemany(
                db,
                self.sql.save_cleared,
                [(thread_id, n, dump_mark(marks[n])) for n in range(cleared or 0, len(marks))],
            )
            db.execute(self.sql.drop_cleared, (thread_id, len(marks)))
            db.execute(
                self.sql.save_state,
                (thread_id, version + 1, len(state), len(state.events), len(marks), record, now),
            )
        return _saved(thread_id, int(version) + 1, state)

    def _write_log(
        self,
        db: C,
        state: ConversationState[Any],
        *,
        thread_id: str,
        length: int,
        events: int,
        now: object,
    ) -> None:
        """Write the messages and events new since the saved state, and reconcile the archive.

        Any archive write the saved state does not account for comes from a writer that lost the
        race (it will get a ConflictError): rows beyond the new log are dropped, and marks of
        events the state does not have, or outside a new event's folded range, are cleared.
        """
        sql, log, count = self.sql, state.log, len(state.events)
        new_events = state.events[events:]
        folded = [
            (e.number, *e.folded)
            for e in new_events
            if e.outcome == "compacted" and e.folded is not None
        ]
        rows = [(thread_id, i, dump(log[i])) for i in range(length, len(log))]
        self._executemany(db, sql.save_message, rows)
        db.execute(sql.drop_messages, (thread_id, len(log)))
        db.execute(sql.unmark_stale, (thread_id, count))
        db.execute(sql.drop_events, (thread_id, count))
        rows = [(thread_id, e.number, e.model_dump_json()) for e in new_events]
        self._executemany(db, sql.put_event, rows)
        self._executemany(db, sql.unmark_outside, [(thread_id, n, a, b) for n, a, b in folded])
        self._executemany(db, sql.mark_folded, [(now, n, thread_id, a, b, n) for n, a, b in folded])

    def load(
        self,
        thread_id: str,
        *,
        schema: type[S] = Summary,  # type: ignore[assignment]  # mypy cannot default a TypeVar-typed parameter
    ) -> Stored[S]:
        """The thread's saved state and its version.

        Args:
            thread_id: The conversation's thread id.
            schema: The summary schema it was saved with (default `Summary`).

        Raises:
            ConfigError: no state was saved for ``thread_id``, or it was saved with another
                schema.
            ArchiveError: the read failed or the stored data is damaged.
        """
        check_thread_id(thread_id)
        with self._errors(f"load thread {thread_id!r}"), self._loading() as db:
            found = self._read_state(db, thread_id)
            if found is None:
                known = db.execute(self.sql.some_threads, ()).fetchall()
                raise self._unknown(thread_id, [t for (t,) in known])
        version, data = found
        return Stored(ConversationState.from_dict(data, schema=schema), version)

    def _read_head(self, db: C, thread_id: str) -> SavedHead | None:
        """The saved state's counters and last message (None: never saved), in two reads."""
        row = db.execute(self.sql.head, (thread_id,)).fetchone()
        if row is None:
            return None
        version, length, events, cleared = row
        last = None
        if length:
            found = db.execute(self.sql.last_message, (thread_id, length - 1)).fetchone()
            last = None if found is None else found[0]
        return SavedHead(version, length, events, cleared, last)

    def _read_saved(self, db: C, thread_id: str) -> SavedRows | None:
        """What is stored of the thread's saved state (None: never saved), in four reads."""
        sql = self.sql
        row = db.execute(sql.state, (thread_id,)).fetchone()
        if row is None:
            return None
        version, length, count, cleared, text = row
        messages = db.execute(sql.log, (thread_id, length)).fetchall()
        events = db.execute(sql.event_rows, (thread_id, count)).fetchall()
        marks = (
            [] if cleared is None else db.execute(sql.mark_rows, (thread_id, cleared)).fetchall()
        )
        return SavedRows(
            version=version,
            length=length,
            state=text,
            stored=len(messages),
            log="[" + ",".join(message for (message,) in messages) + "]",
            events=count,
            event_rows=[event for (event,) in events],
            cleared=cleared,
            mark_rows=[mark for (mark,) in marks],
        )

    def _saved_key(self, thread_id: str) -> tuple[object, ...] | None:
        """The saved row's version, length, event count and save time (None: never saved)."""
        with self._errors(f"read thread {thread_id!r}"), self._reading() as db:
            row = db.execute(self.sql.saved_key, (thread_id,)).fetchone()
        return None if row is None else tuple(row)

    def _read_state(self, db: C, thread_id: str) -> tuple[int, dict[str, Any]] | None:
        """The thread's version and `ConversationState.to_dict` data, or None if never saved."""
        saved = self._read_saved(db, thread_id)
        if saved is None:
            return None
        return state_data(thread_id, saved, where=self.where, medium=self.dialect.medium)

    def threads(self) -> list[str]:
        """Thread ids with a saved state or anything archived, sorted."""
        with self._errors("list threads"), self._reading() as db:
            return sorted(t for (t,) in db.execute(self.sql.threads, ()).fetchall())

    def _unknown(self, thread_id: str, known: list[str]) -> ConfigError:
        listed = ", ".join(repr(t) for t in known[:5]) + (", ..." if len(known) > 5 else "")  # noqa: PLR2004 - a short list
        return ConfigError(
            f"no conversation with thread_id={thread_id!r} is saved in {self.where} (saved: "
            f"{listed or 'none'}); create it with store.save(ConversationState(messages, "
            f"thread_id={thread_id!r}), expected_version=None)"
        )

    # -- reads of several statements ---------------------------------------------------------------

    def export_markdown(self, thread_id: str, *, schema: type[Any] = Summary) -> str:
        """A readable Markdown record of the thread: summary, folded segments, live tail.

        Args:
            thread_id: The conversation's thread id.
            schema: The summary schema it was saved with (default `Summary`).

        Raises:
            ConfigError: nothing is stored for ``thread_id``.
        """
        with self._errors(f"export thread {thread_id!r}"), self._snapshot() as db:
            found = self._read_state(db, thread_id)
            archive = self._read_archive(db, thread_id, 0, None)
            events = self._read_events(db, thread_id)
        if found is None and not archive:
            raise self._unknown(thread_id, self.threads())
        stored = None
        if found is not None:
            version, data = found
            stored = Stored(ConversationState.from_dict(data, schema=schema), version)
        return markdown(thread_id, stored, archive, events)

    def _read_archive(
        self, db: C, thread_id: str, start: int, end: int | None
    ) -> list[ArchivedMessage]:
        low, high = self.dialect.bounds(start, end)
        rows = db.execute(self.sql.archived, (thread_id, low, high)).fetchall()
        return [archived(thread_id, row, self.dialect.timestamp) for row in rows]

    def _read_events(self, db: C, thread_id: str) -> list[CompactionEvent]:
        rows = db.execute(self.sql.events, (thread_id,)).fetchall()
        return [CompactionEvent.model_validate_json(e) for (e,) in rows]

    def _committed(self, db: C, thread_id: str) -> tuple[int, int]:
        """The saved log length and event count of the thread (0, 0 when never saved)."""
        row = db.execute(self.sql.committed, (thread_id,)).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))


def _check_version(thread_id: str, expected: int | None, exists: bool, actual: int) -> None:
    if expected is None:
        if exists:
            raise ConflictError(thread_id, expected=0, actual=actual)
        return
    if not exists:
        raise ConfigError(
            f"thread {thread_id!r} was never saved, so it has no version {expected}; create it "
            "with expected_version=None"
        )
    if expected != actual:
        raise ConflictError(thread_id, expected=expected, actual=actual)


def _check_extends(
    state: ConversationState[Any], thread_id: str, length: int, last: str | None
) -> None:
    """Refuse a state that does not extend the stored log (shorter, or another last message)."""
    if len(state) < length:
        raise ConfigError(
            f"the state has {len(state)} messages but thread {thread_id!r} has {length} saved; "
            "the log is append-only, so load the thread and append to it"
        )
    if length and last != dump(state.log[length - 1]):
        raise ConfigError(
            f"message {length - 1} of the state differs from the one saved for thread "
            f"{thread_id!r}; a saved state must extend the loaded one, so load it and append"
        )
