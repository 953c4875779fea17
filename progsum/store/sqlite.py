"""The durable store: folded messages, compaction events and saved states in one SQLite file.

`SQLiteStore` is the embedded default `progsum.store.archive.Archive`, and it also saves and loads
`ConversationState` values by thread id with optimistic concurrency: every save names the version
it was loaded at, and a save against a stale version raises `ConflictError` and writes nothing, so
two workers never fold the same messages twice. `SQLiteStore.update` reloads and re-applies.

One table holds every log message once, whether the archive wrote it (folded, with the event that
folded it) or a save did (the live tail); a save writes only the messages appended since the last
one, plus one JSON row for the rest of the state. Each save is a single ``BEGIN IMMEDIATE``
transaction in a WAL-mode file with ``synchronous=FULL``: after a crash at any point the thread is
at its old version or its new one, never in between, and a write is durable once it returns.

Archive writes are checked against the saved state when it changes: a worker may archive a segment
and then lose the race to save (it gets `ConflictError`), so each save drops what the archive holds
beyond the new log, clears marks of events the saved state does not have, and marks the segments
its new compactions folded as archived by them. The archive therefore always matches the saved
state, and is complete even when the engine wrote nothing to it first.

Several threads and processes may share one file: each thread of each process uses its own
connection, and writers wait for one another (``busy_timeout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Self

from progsum.errors import ArchiveError, ConfigError, ConflictError, ProgsumError
from progsum.messages.formats import to_record
from progsum.state.conversation import check_thread_id
from progsum.store.archive import ArchivedMessage, check_segment
from progsum.store.export import markdown

STORE_LOGGER = logging.getLogger("progsum.store")
from progsum.state.cleared import Cleared
from progsum.state.conversation import CompactionEvent, ConversationState
from progsum.summary.schema import Summary
from progsum.summary.schema import SummaryT as S

__all__ = ["STORE_FORMAT", "SQLiteStore", "Stored"]

STORE_FORMAT = 2
"""Layout version of the SQLite file, kept in ``PRAGMA user_version``. Format 2 keeps the cleared
tool-data marks in rows of their own; a format-1 file is upgraded when opened."""

DEFAULT_TIMEOUT = 30.0
"""Seconds a writer waits for another one to finish (``busy_timeout``)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    thread_id   TEXT    NOT NULL,
    idx         INTEGER NOT NULL,
    message     TEXT    NOT NULL,
    archived_at TEXT,
    event       INTEGER,
    PRIMARY KEY (thread_id, idx)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS messages_by_event ON messages (thread_id, event)
    WHERE event IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (
    thread_id TEXT    NOT NULL,
    number    INTEGER NOT NULL,
    event     TEXT    NOT NULL,
    PRIMARY KEY (thread_id, number)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS states (
    thread_id TEXT PRIMARY KEY,
    version   INTEGER NOT NULL,
    length    INTEGER NOT NULL,
    events    INTEGER NOT NULL,
    state     TEXT    NOT NULL,
    saved_at  TEXT    NOT NULL
);
"""

_CLEARED_TABLE = """
CREATE TABLE IF NOT EXISTS cleared (
    thread_id TEXT    NOT NULL,
    number    INTEGER NOT NULL,
    mark      TEXT    NOT NULL,
    PRIMARY KEY (thread_id, number)
) WITHOUT ROWID
"""
"""Format 2: one row per cleared block (`ConversationState.cleared`, 0-based), written once."""

_UPGRADES = {
    0: [*filter(str.strip, _SCHEMA.split(";")), "ALTER TABLE states ADD COLUMN cleared INTEGER"],
    1: ["ALTER TABLE states ADD COLUMN cleared INTEGER"],
}
"""Statements that bring a file of format N to `STORE_FORMAT` (the cleared table follows).
``states.cleared`` counts the state's cleared rows; NULL (a row saved by format 1) means its
marks are in the state's JSON."""

_SAVE_CLEARED = "INSERT OR REPLACE INTO cleared (thread_id, number, mark) VALUES (?, ?, ?)"

_PUT_MESSAGE = """
INSERT INTO messages (thread_id, idx, message, archived_at, event)
VALUES (:thread, :idx, :message, :at, :event)
ON CONFLICT (thread_id, idx) DO UPDATE SET
    message = CASE WHEN messages.idx >= :committed THEN excluded.message ELSE messages.message END,
    archived_at = excluded.archived_at,
    event = excluded.event
WHERE messages.archived_at IS NULL
   OR (messages.idx >= :committed AND messages.message != excluded.message)
"""
"""Archive a message: kept as stored when saved or archived already; a provisional one (beyond
the saved log) that differs is replaced."""

_PUT_EVENT = """
INSERT INTO events (thread_id, number, event) VALUES (?, ?, ?)
ON CONFLICT (thread_id, number) DO UPDATE SET event = excluded.event
WHERE events.event != excluded.event
"""

_SAVE_MESSAGE = """
INSERT INTO messages (thread_id, idx, message) VALUES (?, ?, ?)
ON CONFLICT (thread_id, idx) DO UPDATE SET
    message = excluded.message, archived_at = NULL, event = NULL
WHERE messages.message != excluded.message
"""
"""Save a log message; a provisional archived copy of another message at its index is replaced."""

_UNMARK_STALE = """
UPDATE messages SET archived_at = NULL, event = NULL WHERE thread_id = ? AND event > ?
"""
"""Forget archive marks of events the saved state does not have (a stale writer's)."""

_UNMARK_OUTSIDE = """
UPDATE messages SET archived_at = NULL, event = NULL
WHERE thread_id = ? AND event = ? AND (idx < ? OR idx >= ?)
"""
"""Forget marks of a new event's number outside its folded range (a stale writer's)."""

_MARK_FOLDED = """
UPDATE messages SET archived_at = COALESCE(archived_at, ?), event = ?
WHERE thread_id = ? AND idx >= ? AND idx < ? AND event IS NOT ?
"""
"""Mark a new compaction's segment archived by it (when the engine wrote no archive)."""

_SAVE_STATE = """
INSERT INTO states (thread_id, version, length, events, cleared, state, saved_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (thread_id) DO UPDATE SET
    version = excluded.version, length = excluded.length, events = excluded.events,
    cleared = excluded.cleared, state = excluded.state, saved_at = excluded.saved_at
"""


class Stored(NamedTuple, Generic[S]):
    """A saved state and the store's version of it (pass it to the next save)."""

    state: ConversationState[S]
    version: int
    """The store's counter for the thread: 1 after the first save, then 2, 3, ..."""


class _Local(threading.local):
    connection: sqlite3.Connection | None = None
    pid: int = 0


class _Recent(threading.local):
    """This thread's last state saved by ``update``, per thread id, with its saved row's key."""

    def __init__(self) -> None:
        self.states: dict[str, tuple[type, Stored[Any], tuple[object, ...]]] = {}


def _saved(thread_id: str, version: int, state: ConversationState[Any]) -> int:
    """``version``, after the DEBUG line on ``progsum.store.sqlite`` each store writes per save."""
    STORE_LOGGER.debug(
        "saved thread %s version %d: %d messages, %d events",
        thread_id,
        version,
        len(state),
        len(state.events),
    )
    return version


class _Updating:
    """``update``/``aupdate`` for a store with ``load`` and ``save`` (SQLite and PostgreSQL).

    ``update`` remembers, per calling thread, the state its last save wrote; the next ``update``
    of that thread id starts from it when the saved row is still that save's (the same version,
    length, event count and time), instead of reloading the whole log. Only states whose
    messages are the plain JSON a load would give back are remembered, so the change sees what
    it would have loaded.
    """

    if TYPE_CHECKING:  # provided by the store classes

        def _saved_key(self, thread_id: str) -> tuple[object, ...] | None:
            """The saved row's version, length, event count and time (None: never saved)."""

        def load(self, thread_id: str, *, schema: type[S] = ...) -> Stored[S]:
            """The thread's saved state and its version."""

        def save(self, state: ConversationState[Any], *, expected_version: int | None) -> int:
            """Save ``state`` if the stored version is still ``expected_version``."""

    def update(
        self,
        thread_id: str,
        change: Callable[[ConversationState[S]], ConversationState[S]],
        *,
        schema: type[S] = Summary,  # type: ignore[assignment]  # see load
        attempts: int = 5,
    ) -> Stored[S]:
        """Load the thread, apply ``change`` and save; on a conflict, reload and apply it again.

        ``change`` may run several times, each time on the freshly loaded state, so it must not
        have side effects that cannot repeat. When it returns the state it was given, nothing is
        saved.

        Args:
            thread_id: The conversation's thread id.
            change: A function from the stored state to the new one, e.g.
                ``lambda state: compactor.maybe_compact(state.append(message))``.
            schema: The summary schema.
            attempts: How many times to try before giving up (1 or more).

        Raises:
            ConflictError: every attempt lost the race to another writer.
            ConfigError: the thread was never saved.
        """
        _check_attempts(attempts)
        for attempt in range(attempts):
            stored = self._recalled(thread_id, schema) or self.load(thread_id, schema=schema)
            changed = change(stored.state)
            try:
                saved = self._save_changed(thread_id, stored, changed)
            except ConflictError:
                if attempt + 1 == attempts:
                    raise
            else:
                self._remember(thread_id, schema, stored, saved)
                return saved
            time.sleep(_backoff(attempt))
        raise AssertionError  # pragma: no cover - the loop returns or raises

    def _recent(self) -> _Recent:
        recent = self.__dict__.get("_recent_states")
        if recent is None:
            recent = self.__dict__.setdefault("_recent_states", _Recent())
        return recent  # type: ignore[no-any-return]  # a _Recent, set just above

    def _recalled(self, thread_id: str, schema: type) -> Stored[Any] | None:
        """This thread's remembered state of ``thread_id``, if the saved row is still its save."""
        found = self._recent().states.get(thread_id)
        if found is None or found[0] is not schema:
            return None
        if self._saved_key(thread_id) != found[2]:
            del self._recent().states[thread_id]
            return None
        return found[1]

    def _remember(
        self, thread_id: str, schema: type, before: Stored[Any], saved: Stored[Any]
    ) -> None:
        """Remember ``saved`` when its new messages are plain JSON (what a load gives back)."""
        states = self._recent().states
        states.pop(thread_id, None)
        if saved is before:
            return
        log = saved.state.log
        if not all(_plain(log[i]) for i in range(len(before.state), len(log))):
            return
        key = self._saved_key(thread_id)
        if key is not None and key[0] == saved.version:
            states[thread_id] = (schema, saved, key)

    async def aupdate(
        self,
        thread_id: str,
        change: Callable[
            [ConversationState[S]], ConversationState[S] | Awaitable[ConversationState[S]]
        ],
        *,
        schema: type[S] = Summary,  # type: ignore[assignment]  # see load
        attempts: int = 5,
    ) -> Stored[S]:
        """Async `update`: ``change`` may be async; the store runs in worker threads."""
        _check_attempts(attempts)
        for attempt in range(attempts):
            stored = await asyncio.to_thread(self.load, thread_id, schema=schema)
            result = change(stored.state)
            changed = await result if inspect.isawaitable(result) else result
            try:
                return await asyncio.to_thread(self._save_changed, thread_id, stored, changed)
            except ConflictError:
                if attempt + 1 == attempts:
                    raise
            await asyncio.sleep(_backoff(attempt))
        raise AssertionError  # pragma: no cover - the loop returns or raises

    def _save_changed(
        self, thread_id: str, stored: Stored[S], changed: ConversationState[S]
    ) -> Stored[S]:
        if changed is stored.state:
            return stored
        if not isinstance(changed, ConversationState) or changed.thread_id != thread_id:
            raise ConfigError(
                f"the change returned {changed!r}, not a ConversationState of thread "
                f"{thread_id!r}; return the state it was given, changed"
            )
        return Stored(changed, self.save(changed, expected_version=stored.version))


class SQLiteStore(_Updating):
    """Archive and saved states of many conversations in one SQLite file (WAL mode).

    Example:
        ``store = SQLiteStore("agents.db")``, then ``store.save(state, expected_version=None)``
        for a new thread and ``store.update(thread_id, lambda s: s.append(message))`` after.

    Safe to share between threads and processes; each thread opens its own connection.

    Raises:
        ArchiveError: the file cannot be opened or is not a progsum store.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Open (creating if needed) the store at ``path``.

        Args:
            path: The SQLite file; its directory must exist.
            timeout: Seconds to wait for another writer before failing.
        """
        self.path = Path(path)
        self.timeout = timeout
        self._local = _Local()
        self._opened: list[tuple[int, sqlite3.Connection]] = []
        self._lock = threading.Lock()
        with self._errors("open"):
            connection = self._connection()
            found = connection.execute("PRAGMA user_version").fetchone()[0]
            if found != STORE_FORMAT:
                self._upgrade()

    def _upgrade(self) -> None:
        """Create the tables, or upgrade an older file, in one transaction (re-checked in it)."""
        with self._transaction() as db:
            found = db.execute("PRAGMA user_version").fetchone()[0]
            if found not in (*_UPGRADES, STORE_FORMAT):
                raise ArchiveError(
                    f"{self.path} is a progsum store of format {found}, newer than this version "
                    f"of progsum reads ({STORE_FORMAT}); upgrade progsum to open it"
                )
            if found == STORE_FORMAT:
                return  # another process upgraded it meanwhile
            for statement in _UPGRADES[found]:
                db.execute(statement)
            db.execute(_CLEARED_TABLE)
            db.execute(f"PRAGMA user_version = {STORE_FORMAT}")

    # -- connections -----------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (a fresh one in a forked child)."""
        local = self._local
        connection = local.connection
        if connection is None or local.pid != os.getpid():
            connection = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
            if mode != "wal":
                connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = FULL")
            connection.create_function("progsum_contains", 2, _contains, deterministic=True)
            local.connection, local.pid = connection, os.getpid()
            with self._lock:
                self._opened.append((os.getpid(), connection))
        return connection

    def close(self) -> None:
        """Close the connections this process opened; the store reopens them when used again."""
        pid = os.getpid()
        with self._lock:
            opened, self._opened = self._opened, []
        for owner, connection in opened:
            if owner == pid:  # a connection inherited through fork belongs to the parent
                connection.close()
        self._local = _Local()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    @contextlib.contextmanager
    def _transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction: ``BEGIN IMMEDIATE`` for writes, a consistent snapshot for reads."""
        db = self._connection()
        db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # a failed COMMIT may have rolled back already
                db.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn SQLite failures into ArchiveError naming the file and the action."""
        try:
            yield
        except sqlite3.Error as exc:
            raise ArchiveError(
                f"could not {action} in {self.path}: {type(exc).__name__}: {exc}; nothing was "
                "changed by it, so retry once the file is a writable progsum store that no stuck "
                "process holds locked"
            ) from exc
        except ProgsumError:
            raise
        except (UnicodeError, ValueError, OverflowError) as exc:
            raise ArchiveError(
                f"could not {action} in {self.path}: {type(exc).__name__}: {exc}; nothing was "
                "changed by it; the data could not be stored as it is (report it as a progsum "
                "bug with the message that caused it)"
            ) from exc

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
        now = _now()
        rows = [
            {
                "thread": thread_id,
                "idx": start + offset,
                "message": _dump(message),
                "at": now,
                "event": event.number,
            }
            for offset, message in enumerate(messages)
        ]
        with self._errors(f"archive messages of thread {thread_id!r}"), self._transaction() as db:
            length, events = _committed(db, thread_id)
            if event.number <= events:
                return  # the saved state has this event: its save archived the segment already
            db.executemany(_PUT_MESSAGE, [{**row, "committed": length} for row in rows])
            db.execute(_PUT_EVENT, (thread_id, event.number, event.model_dump_json()))

    def get(self, thread_id: str, start: int = 0, end: int | None = None) -> list[ArchivedMessage]:
        """Archived entries with ``start <= index < end``, in log order."""
        with self._errors(f"read the archive of thread {thread_id!r}"):
            return _read_archive(self._connection(), thread_id, start, end)

    def search(self, thread_id: str, text: str, *, limit: int = 20) -> list[ArchivedMessage]:
        """Archived entries whose JSON contains ``text`` (ignoring case), in log order."""
        query = (
            "SELECT idx, message, archived_at, event FROM messages WHERE thread_id = ? "
            "AND archived_at IS NOT NULL AND progsum_contains(message, ?) ORDER BY idx LIMIT ?"
        )
        with self._errors(f"search the archive of thread {thread_id!r}"):
            rows = self._connection().execute(query, (thread_id, text, limit)).fetchall()
        return [_archived(thread_id, row) for row in rows]

    def events(self, thread_id: str) -> list[CompactionEvent]:
        """The compaction events archived for the thread, in order."""
        with self._errors(f"read the events of thread {thread_id!r}"):
            return _read_events(self._connection(), thread_id)

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
        record = _dump_state(state)
        now = _now()
        with self._errors(f"save thread {thread_id!r}"), self._transaction() as db:
            row = db.execute(
                "SELECT version, length, events, cleared FROM states WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            version, length, events, cleared = row if row is not None else (0, 0, 0, 0)
            _check_version(thread_id, expected_version, row is not None, version)
            _check_extends(db, state, thread_id, length)
            _write_state(db, state, thread_id=thread_id, length=length, events=events, now=now)
            marks = state.cleared
            db.executemany(
                _SAVE_CLEARED,
                ((thread_id, n, _dump_mark(marks[n])) for n in range(cleared or 0, len(marks))),
            )
            db.execute(
                "DELETE FROM cleared WHERE thread_id = ? AND number >= ?", (thread_id, len(marks))
            )
            db.execute(
                _SAVE_STATE,
                (thread_id, version + 1, len(state), len(state.events), len(marks), record, now),
            )
        return _saved(thread_id, int(version) + 1, state)

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
        with self._errors(f"load thread {thread_id!r}"), self._transaction(write=False) as db:
            found = self._read_state(db, thread_id)
            if found is None:
                known = [t for (t,) in db.execute("SELECT thread_id FROM states LIMIT 6")]
                raise self._unknown(thread_id, known)
        version, data = found
        return Stored(ConversationState.from_dict(data, schema=schema), version)

    def _saved_key(self, thread_id: str) -> tuple[object, ...] | None:
        """The saved row's version, length, event count and save time (None: never saved)."""
        query = "SELECT version, length, events, saved_at FROM states WHERE thread_id = ?"
        with self._errors(f"read thread {thread_id!r}"):
            row = self._connection().execute(query, (thread_id,)).fetchone()
        return None if row is None else tuple(row)

    def _read_state(
        self, db: sqlite3.Connection, thread_id: str
    ) -> tuple[int, dict[str, Any]] | None:
        """The thread's version and `ConversationState.to_dict` data, or None if never saved."""
        row = db.execute(
            "SELECT version, length, events, cleared, state FROM states WHERE thread_id = ?",
            (thread_id,),
        ).fetchone()
        if row is None:
            return None
        version, length, count, cleared, text = row
        messages = db.execute(
            "SELECT message FROM messages WHERE thread_id = ? AND idx < ? ORDER BY idx",
            (thread_id, length),
        ).fetchall()
        if len(messages) != length:
            raise ArchiveError(
                f"thread {thread_id!r} in {self.path} is damaged: its state has {length} "
                f"messages but {len(messages)} are stored; restore the file from a backup"
            )
        data = json.loads(text)
        data["log"] = json.loads("[" + ",".join(message for (message,) in messages) + "]")
        if "events" not in data:  # saved since the events stay in their own table only
            query = "SELECT event FROM events WHERE thread_id = ? AND number <= ? ORDER BY number"
            rows = db.execute(query, (thread_id, count)).fetchall()
            data["events"] = _event_rows(thread_id, count, [e for (e,) in rows], self.path)
        if cleared is not None:  # format 2: the marks are rows (NULL: in the JSON, format 1)
            query = "SELECT mark FROM cleared WHERE thread_id = ? AND number < ? ORDER BY number"
            marks = db.execute(query, (thread_id, cleared)).fetchall()
            data["cleared"] = _mark_rows(thread_id, cleared, [m for (m,) in marks], self.path)
        return int(version), data

    def threads(self) -> list[str]:
        """Thread ids with a saved state or archived messages, sorted."""
        query = (
            "SELECT thread_id FROM states UNION "
            "SELECT DISTINCT thread_id FROM messages WHERE archived_at IS NOT NULL ORDER BY 1"
        )
        with self._errors("list threads"):
            return [t for (t,) in self._connection().execute(query)]

    def _unknown(self, thread_id: str, known: list[str]) -> ConfigError:
        listed = ", ".join(repr(t) for t in known[:5]) + (", ..." if len(known) > 5 else "")  # noqa: PLR2004 - a short list
        return ConfigError(
            f"no conversation with thread_id={thread_id!r} is saved in {self.path} (saved: "
            f"{listed or 'none'}); create it with store.save(ConversationState(messages, "
            f"thread_id={thread_id!r}), expected_version=None)"
        )

    # -- load, change, save ---------------------------------------------------------------------

    # -- export ---------------------------------------------------------------------------------

    def export_markdown(
        self,
        thread_id: str,
        *,
        schema: type[Any] = Summary,
    ) -> str:
        """A readable Markdown record of the thread: summary, folded segments, live tail.

        Args:
            thread_id: The conversation's thread id.
            schema: The summary schema it was saved with (default `Summary`).

        Raises:
            ConfigError: nothing is stored for ``thread_id``.
        """
        with self._errors(f"export thread {thread_id!r}"), self._transaction(write=False) as db:
            found = self._read_state(db, thread_id)
            archived = _read_archive(db, thread_id, 0, None)
            events = _read_events(db, thread_id)
        if found is None and not archived:
            raise self._unknown(thread_id, self.threads())
        stored = None
        if found is not None:
            version, data = found
            stored = Stored(ConversationState.from_dict(data, schema=schema), version)
        return markdown(thread_id, stored, archived, events)


def _read_archive(
    db: sqlite3.Connection, thread_id: str, start: int, end: int | None
) -> list[ArchivedMessage]:
    query = (
        "SELECT idx, message, archived_at, event FROM messages WHERE thread_id = ? "
        "AND archived_at IS NOT NULL AND idx >= ? AND idx < ? ORDER BY idx"
    )
    stop = 2**62 if end is None else end
    return [_archived(thread_id, row) for row in db.execute(query, (thread_id, start, stop))]


def _read_events(db: sqlite3.Connection, thread_id: str) -> list[CompactionEvent]:
    query = "SELECT event FROM events WHERE thread_id = ? ORDER BY number"
    return [CompactionEvent.model_validate_json(e) for (e,) in db.execute(query, (thread_id,))]


def _committed(db: sqlite3.Connection, thread_id: str) -> tuple[int, int]:
    """The saved log length and event count of the thread (0, 0 when never saved)."""
    row = db.execute(
        "SELECT length, events FROM states WHERE thread_id = ?", (thread_id,)
    ).fetchone()
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


def _write_state(
    db: sqlite3.Connection,
    state: ConversationState[Any],
    *,
    thread_id: str,
    length: int,
    events: int,
    now: str,
) -> None:
    """Write the messages and events new since the saved state, and reconcile the archive.

    Any archive write the saved state does not account for comes from a writer that lost the
    race (it will get a ConflictError): rows beyond the new log are dropped, and marks of
    events the state does not have, or outside a new event's folded range, are cleared.
    """
    log = state.log
    db.executemany(_SAVE_MESSAGE, ((thread_id, i, _dump(log[i])) for i in range(length, len(log))))
    db.execute("DELETE FROM messages WHERE thread_id = ? AND idx >= ?", (thread_id, len(log)))
    db.execute(_UNMARK_STALE, (thread_id, len(state.events)))
    db.execute(
        "DELETE FROM events WHERE thread_id = ? AND number > ?", (thread_id, len(state.events))
    )
    new_events = state.events[events:]
    db.executemany(_PUT_EVENT, ((thread_id, e.number, e.model_dump_json()) for e in new_events))
    folded = [
        (e.number, *e.folded)
        for e in new_events
        if e.outcome == "compacted" and e.folded is not None
    ]
    db.executemany(_UNMARK_OUTSIDE, ((thread_id, n, a, b) for n, a, b in folded))
    db.executemany(_MARK_FOLDED, ((now, n, thread_id, a, b, n) for n, a, b in folded))


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
    db: sqlite3.Connection, state: ConversationState[Any], thread_id: str, length: int
) -> None:
    """Refuse a state that does not extend the stored log (shorter, or another last message)."""
    if len(state) < length:
        raise ConfigError(
            f"the state has {len(state)} messages but thread {thread_id!r} has {length} saved; "
            "the log is append-only, so load the thread and append to it"
        )
    if length:
        (last,) = db.execute(
            "SELECT message FROM messages WHERE thread_id = ? AND idx = ?",
            (thread_id, length - 1),
        ).fetchone()
        if last != _dump(state.log[length - 1]):
            raise ConfigError(
                f"message {length - 1} of the state differs from the one saved for thread "
                f"{thread_id!r}; a saved state must extend the loaded one, so load it and append"
            )


def _check_attempts(attempts: int) -> None:
    if attempts < 1:
        raise ConfigError(f"attempts={attempts} must be at least 1; use the default 5")


def _backoff(attempt: int) -> float:
    """Seconds to wait after a lost race: jittered, doubling from 1 ms, at most 50 ms."""
    return random.uniform(0, min(0.05, 0.001 * 2**attempt))  # noqa: S311 - jitter, not secrecy


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(text: str) -> str:
    r"""JSON text with each lone surrogate written as its ``\\uXXXX`` escape.

    ``json.dumps(..., ensure_ascii=False)`` keeps a lone surrogate (text cut inside a UTF-16
    pair) as a raw code point, which SQLite's UTF-8 encoder refuses; json.dumps only emits such
    code points inside strings, where the escape reads back as the same character.
    """
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _plain(message: object) -> bool:
    """Whether ``message`` is the JSON a load would give back for it: equal, and of JSON types."""
    if type(message) is not dict:
        return False
    try:
        return bool(json.loads(_dump(message)) == message) and _json_typed(message)
    except (TypeError, ValueError):
        return False


def _json_typed(value: object) -> bool:
    """Whether ``value`` is built from JSON's own types only (no tuples, subclasses or objects)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _json_typed(v) for k, v in value.items())  # type: ignore[attr-defined]
    if kind is list:
        return all(_json_typed(v) for v in value)  # type: ignore[attr-defined]
    return kind in (str, int, float, bool, type(None))


def _dump(message: Any) -> str:  # noqa: ANN401 - messages are provider dicts or SDK objects
    """The stored text of a message (the JSON `progsum.store.archive.matches` searches)."""
    return _escaped(json.dumps(to_record(message), ensure_ascii=False))


def _dump_state(state: ConversationState[Any]) -> str:
    """`ConversationState.to_dict` without the log, the events and the cleared marks, as JSON.

    The messages, the events and the cleared marks are rows of their own, written once each, so
    a save costs O(what is new), not O(history). Rows saved before kept the events and the marks
    in the JSON too; `load` reads both layouts.
    """
    data = state.to_dict(log=False, events=False, cleared=False)
    return _escaped(json.dumps(data, ensure_ascii=False))


def _dump_mark(mark: Cleared) -> str:
    """The stored text of one cleared mark (the list `ConversationState.to_dict` writes)."""
    return _escaped(json.dumps(list(mark), ensure_ascii=False))


def _mark_rows(thread_id: str, count: int, rows: list[str], where: object) -> list[Any]:
    """The saved state's ``count`` cleared marks, from their rows (JSON text, in order)."""
    if len(rows) != count:
        raise ArchiveError(
            f"thread {thread_id!r} in {where} is damaged: its state has {count} cleared blocks "
            f"but {len(rows)} are stored; restore the file from a backup"
        )
    return [json.loads(row) for row in rows]


def _event_rows(thread_id: str, count: int, rows: list[str], where: object) -> list[Any]:
    """The saved state's ``count`` events, from their rows (JSON text, in number order)."""
    if len(rows) != count:
        raise ArchiveError(
            f"thread {thread_id!r} in {where} is damaged: its state has {count} events but "
            f"{len(rows)} are stored; restore the file from a backup"
        )
    return [json.loads(row) for row in rows]


def _archived(thread_id: str, row: tuple[int, str, str, int | None]) -> ArchivedMessage:
    idx, message, archived_at, event = row
    return ArchivedMessage(
        thread_id, idx, json.loads(message), datetime.fromisoformat(archived_at), event
    )


def _contains(message: str, text: str) -> bool:
    return text.casefold() in message.casefold()


def _now() -> str:
    return datetime.now(UTC).isoformat()
