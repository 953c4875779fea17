"""The store for fleets: folded messages, events and saved states in a shared PostgreSQL database.

`PostgresStore` answers like `progsum.store.sqlite.SQLiteStore` (the `progsum.store.archive.Archive` protocol,
saved states with optimistic versions, ``update``/``aupdate``, Markdown export), for many worker
processes on many machines. It needs the ``postgres`` extra: ``pip install "progsum[postgres]"``
(psycopg 3 and psycopg-pool).

Every write is one transaction that first takes a transaction-level advisory lock on its thread,
so writers of one thread queue up while writers of other threads run in parallel; at the default
READ COMMITTED level each statement after the lock sees what the previous holder committed. A save
against a stale version raises `ConflictError` and writes nothing; a save writes the messages
appended since the saved state, one JSON row for the rest (``ConversationState.to_dict(log=False)``,
so new state fields are stored as they appear), and reconciles the archive with the saved state as
the SQLite store does. Writes are pipelined (two round trips per save); a load is one statement,
so one snapshot. A failure of any kind, the connection dropped mid-transaction included, rolls the
transaction back and raises `ArchiveError`. Design and measurements: docs/fleet.md.

The schema is created and upgraded by `progsum.store.postgres_schema.migrate`, through `init` or
``progsum store init URL``.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Self

from progsum.errors import ArchiveError, ConfigError
from progsum.state.conversation import CompactionEvent, ConversationState, check_thread_id
from progsum.store import postgres_schema
from progsum.store.archive import ArchivedMessage, check_segment
from progsum.store.export import markdown
from progsum.store.postgres_schema import LOCK_CLASS, SCHEMA_VERSION, schema_version
from progsum.store.sqlite import (
    Stored,
    _check_version,
    _dump,
    _dump_mark,
    _dump_state,
    _event_rows,
    _mark_rows,
    _saved,
    _Updating,
)
from progsum.summary.schema import Summary
from progsum.summary.schema import SummaryT as S

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["DEFAULT_POOL_SIZE", "PostgresStore", "init"]

DEFAULT_POOL_SIZE = 4
"""Connections a store opens at most when it makes its own pool (one per concurrent call)."""

DEFAULT_TIMEOUT = 30.0
"""Seconds a call waits for a free connection of the pool before failing."""

_PUT_MESSAGE = """
INSERT INTO progsum_messages AS m (thread_id, idx, message, archived_at, event)
VALUES (%(thread)s, %(idx)s, %(message)s, %(at)s, %(event)s)
ON CONFLICT (thread_id, idx) DO UPDATE SET
    message = CASE WHEN m.idx >= %(committed)s THEN excluded.message ELSE m.message END,
    archived_at = excluded.archived_at,
    event = excluded.event
WHERE m.archived_at IS NULL OR (m.idx >= %(committed)s AND m.message <> excluded.message)
"""
"""Archive a message: kept as stored when saved or archived already; a provisional one (beyond
the saved log) that differs is replaced."""

_PUT_EVENT = """
INSERT INTO progsum_events AS e (thread_id, number, event) VALUES (%s, %s, %s)
ON CONFLICT (thread_id, number) DO UPDATE SET event = excluded.event
WHERE e.event <> excluded.event
"""

_SAVE_MESSAGE = """
INSERT INTO progsum_messages AS m (thread_id, idx, message) VALUES (%s, %s, %s)
ON CONFLICT (thread_id, idx) DO UPDATE SET
    message = excluded.message, archived_at = NULL, event = NULL
WHERE m.message <> excluded.message
"""
"""Save a log message; a provisional archived copy of another message at its index is replaced."""

_UNMARK_STALE = """
UPDATE progsum_messages SET archived_at = NULL, event = NULL WHERE thread_id = %s AND event > %s
"""
"""Forget archive marks of events the saved state does not have (a stale writer's)."""

_UNMARK_OUTSIDE = """
UPDATE progsum_messages SET archived_at = NULL, event = NULL
WHERE thread_id = %s AND event = %s AND (idx < %s OR idx >= %s)
"""
"""Forget marks of a new event's number outside its folded range (a stale writer's)."""

_MARK_FOLDED = """
UPDATE progsum_messages SET archived_at = COALESCE(archived_at, %s), event = %s
WHERE thread_id = %s AND idx >= %s AND idx < %s AND event IS DISTINCT FROM %s
"""
"""Mark a new compaction's segment archived by it (when the engine wrote no archive)."""

_SAVE_STATE = """
INSERT INTO progsum_states (thread_id, version, length, events, cleared, state, saved_at)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (thread_id) DO UPDATE SET
    version = excluded.version, length = excluded.length, events = excluded.events,
    cleared = excluded.cleared, state = excluded.state, saved_at = excluded.saved_at
"""

_SAVE_CLEARED = """
INSERT INTO progsum_cleared (thread_id, number, mark) VALUES (%s, %s, %s)
ON CONFLICT (thread_id, number) DO UPDATE SET mark = excluded.mark
"""
"""One cleared mark of the saved state (schema 2); ``progsum_states.cleared`` counts them, NULL
for a row saved by schema 1, whose marks are in its JSON."""

_STATE_AND_LAST = """
SELECT s.version, s.length, s.events, m.message, s.cleared
FROM progsum_states s
LEFT JOIN progsum_messages m ON m.thread_id = s.thread_id AND m.idx = s.length - 1
WHERE s.thread_id = %s
"""
"""The saved state's counters and its last message (to check that a save extends it)."""

_STATE_AND_LOG = """
SELECT s.version, s.length, s.state, m.stored, m.log, s.events, e.events, s.cleared, c.marks
FROM progsum_states s CROSS JOIN LATERAL (
    SELECT count(*) AS stored,
           '[' || coalesce(string_agg(message, ',' ORDER BY idx), '') || ']' AS log
    FROM progsum_messages WHERE thread_id = s.thread_id AND idx < s.length
) m CROSS JOIN LATERAL (
    SELECT array_agg(event ORDER BY number) AS events
    FROM progsum_events WHERE thread_id = s.thread_id AND number <= s.events
) e CROSS JOIN LATERAL (
    SELECT array_agg(mark ORDER BY number) AS marks
    FROM progsum_cleared WHERE thread_id = s.thread_id AND number < s.cleared
) c
WHERE s.thread_id = %s
"""
"""The saved state, its log as one JSON array and its events, in one statement (one snapshot)."""

_ARCHIVED = "SELECT idx, message, archived_at, event FROM progsum_messages WHERE thread_id = %s "


def _psycopg() -> tuple[Any, Any]:
    """The psycopg and psycopg_pool modules, or a ConfigError naming the extra."""
    try:
        import psycopg  # noqa: PLC0415 - optional: only this backend needs it
        import psycopg_pool  # noqa: PLC0415 - same as psycopg
    except ImportError as exc:
        raise ConfigError(
            f"the PostgreSQL store needs psycopg 3 and psycopg-pool ({exc}); install them with "
            'pip install "progsum[postgres]"'
        ) from exc
    return psycopg, psycopg_pool


def _describe(url: str) -> str:
    """The database as messages name it: user, host and name, never the password."""
    psycopg, _ = _psycopg()
    try:
        parts = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(
            f"{url.rsplit('@', maxsplit=1)[-1]!r} is not a PostgreSQL connection URL ({exc}); "
            "pass e.g. 'postgresql://user:password@host:5432/agents'"
        ) from exc
    host = parts.get("host") or "localhost"
    return f"PostgreSQL database {parts.get('dbname') or '(default)'!r} on {host}"


def init(url: str) -> list[int]:
    """Create or upgrade progsum's tables in the database at ``url``; return what was applied.

    Safe to run from many workers at once. ``progsum store init URL`` calls it.

    Raises:
        ConfigError: psycopg is not installed, or ``url`` is not a connection URL.
        ArchiveError: the database cannot be reached, refuses the migration, or was migrated by
            a newer progsum.
    """
    psycopg, _ = _psycopg()
    where = _describe(url)
    try:
        with psycopg.connect(url, autocommit=True) as connection:
            return postgres_schema.migrate(connection, where)
    except psycopg.Error as exc:
        raise _failure(where, "migrate the progsum tables", exc) from exc


def _failure(where: str, action: str, exc: BaseException) -> ArchiveError:
    lines = str(exc).strip().splitlines() or ["(no message)"]
    reason = lines[0]  # the server's CONTEXT and HINT lines would break the one-line message
    return ArchiveError(
        f"could not {action} in {where}: {type(exc).__name__}: {reason}; nothing was "
        "changed by it, so retry once the database is reachable and the role may write to it"
    )


class PostgresStore(_Updating):
    """Archive and saved states of many conversations in one PostgreSQL database.

    Example:
        ``store = PostgresStore("postgresql://agents@db/agents")``, then, as with `SQLiteStore`,
        ``store.save(state, expected_version=None)`` for a new thread and
        ``store.update(thread_id, lambda s: compactor.maybe_compact(s.append(message)))`` after.

    Safe to share between threads (each call borrows a connection of the pool) and processes (a
    forked child opens a pool of its own when the store made the pool).

    Raises:
        ConfigError: psycopg is missing or the URL is malformed.
        ArchiveError: the database cannot be reached, lacks the schema and ``migrate=False``,
            or was migrated by a newer progsum.
    """

    def __init__(
        self,
        url: str | ConnectionPool[Any],
        *,
        max_size: int = DEFAULT_POOL_SIZE,
        timeout: float = DEFAULT_TIMEOUT,
        migrate: bool = True,
    ) -> None:
        """Connect to the database and check (or, with ``migrate``, bring up to date) its schema.

        Args:
            url: A connection URL (``postgresql://user:password@host:5432/dbname``), or an open
                ``psycopg_pool.ConnectionPool`` to borrow connections from; the store never
                closes a pool it was given.
            max_size: Connections of the store's own pool (ignored with a pool).
            timeout: Seconds a call waits for a connection before it fails.
            migrate: Create or upgrade the tables when the database lacks them (safe from many
                workers at once); False to require ``progsum store init URL`` first.
        """
        _, psycopg_pool = _psycopg()
        self.timeout = timeout
        self.max_size = max_size
        self._given: ConnectionPool[Any] | None
        if isinstance(url, str):
            self._url, self._given = url, None
            self.where = _describe(url)
        elif isinstance(url, psycopg_pool.ConnectionPool):
            self._url, self._given = "", url
            self.where = _describe(url.conninfo)
        else:
            raise ConfigError(
                f"url={url!r} is neither a connection URL nor a psycopg_pool.ConnectionPool; pass "
                "e.g. 'postgresql://user:password@host:5432/agents'"
            )
        self._pool: ConnectionPool[Any] | None = None
        self._pid = 0
        self._lock = threading.Lock()
        self._inherited: list[ConnectionPool[Any]] = []
        try:
            self._open(migrate=migrate)
        except BaseException:
            self.close()
            raise

    @contextlib.contextmanager
    def _first_connection(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A connection for the schema check: a pool's, or a direct one that fails fast.

        A pool retries an unreachable server until its timeout; a direct connection reports a
        wrong URL or a server that is down at once.
        """
        if self._given is not None:
            with self._connect() as connection:
                yield connection
            return
        psycopg, _ = _psycopg()
        with psycopg.connect(self._url, connect_timeout=max(1, round(self.timeout))) as connection:
            yield connection

    def _open(self, *, migrate: bool) -> None:
        """Check the schema version; migrate when behind and allowed."""
        with self._errors("open the progsum tables"), self._first_connection() as connection:
            found = schema_version(connection)
            if not connection.autocommit:
                connection.rollback()
            if found == SCHEMA_VERSION:
                return
            if found < SCHEMA_VERSION and not migrate:
                raise ArchiveError(
                    f"{self.where} has progsum schema version {found}, not {SCHEMA_VERSION}; "
                    "run 'progsum store init URL' (or open it with migrate=True)"
                )
            autocommit, connection.autocommit = connection.autocommit, True
            try:
                postgres_schema.migrate(connection, self.where)
            finally:
                connection.autocommit = autocommit

    # -- connections -----------------------------------------------------------------------------

    def _pool_now(self) -> ConnectionPool[Any]:
        """The pool: the one given, or this process's own (a fresh one in a forked child)."""
        if self._given is not None:
            return self._given
        with self._lock:
            if self._pool is not None and self._pid == os.getpid():
                return self._pool
            if self._pool is not None:  # a parent's: never closed here, as closing it would end
                self._inherited.append(self._pool)  # the parent's sessions on the server
            _, psycopg_pool = _psycopg()
            pool: ConnectionPool[Any] = psycopg_pool.ConnectionPool(
                self._url,
                min_size=1,
                max_size=self.max_size,
                timeout=self.timeout,
                open=True,
                name="progsum",
                kwargs={"autocommit": True},  # one round trip per read; writes open transactions
            )
            self._pool, self._pid = pool, os.getpid()
            return pool

    @contextlib.contextmanager
    def _connect(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A connection of the pool for one transaction (committed on success, else rolled back)."""
        with self._pool_now().connection(timeout=self.timeout) as connection:
            yield connection

    @contextlib.contextmanager
    def _writing(self, thread_id: str) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A write transaction holding the thread's advisory lock until it ends, pipelined.

        Statements are sent without waiting for their results; only a fetch waits. A save is then
        two round trips (the lock with the state row, then every write with the COMMIT), not one
        per statement.
        """
        with self._connect() as db, db.pipeline(), db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, thread_id))
            yield db

    @contextlib.contextmanager
    def _reading(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A read-only transaction on one snapshot (for reads of several statements)."""
        with self._connect() as db, db.transaction():
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield db

    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn psycopg and pool failures into ArchiveError naming the database and the action."""
        psycopg, _ = _psycopg()
        try:
            yield
        except psycopg.Error as exc:
            raise _failure(self.where, action, exc) from exc

    def close(self) -> None:
        """Close the pool this process opened (not a pool it was given); reopened when used."""
        pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self.where})"

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
        now = datetime.now(UTC)
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
        action = f"archive messages of thread {thread_id!r}"
        with self._errors(action), self._writing(thread_id) as db:
            length, events = _committed(db, thread_id)
            if event.number <= events:
                return  # the saved state has this event: its save archived the segment already
            with db.cursor() as cursor:
                cursor.executemany(_PUT_MESSAGE, [{**row, "committed": length} for row in rows])
            db.execute(_PUT_EVENT, (thread_id, event.number, event.model_dump_json()))

    def get(self, thread_id: str, start: int = 0, end: int | None = None) -> list[ArchivedMessage]:
        """Archived entries with ``start <= index < end``, in log order."""
        with self._errors(f"read the archive of thread {thread_id!r}"), self._connect() as db:
            return _read_archive(db, thread_id, start, end)

    def search(self, thread_id: str, text: str, *, limit: int = 20) -> list[ArchivedMessage]:
        """Archived entries whose JSON contains ``text`` (ignoring case), in log order."""
        query = (
            _ARCHIVED + "AND archived_at IS NOT NULL "
            "AND lower(message) LIKE '%%' || lower(%s) || '%%' ORDER BY idx LIMIT %s"
        )
        pattern = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        with self._errors(f"search the archive of thread {thread_id!r}"), self._connect() as db:
            rows = db.execute(query, (thread_id, pattern, limit)).fetchall()
        return [_archived(thread_id, row) for row in rows]

    def events(self, thread_id: str) -> list[CompactionEvent]:
        """The compaction events archived for the thread, in order."""
        with self._errors(f"read the events of thread {thread_id!r}"), self._connect() as db:
            return _read_events(db, thread_id)

    # -- saved states -----------------------------------------------------------------------------

    def save(self, state: ConversationState[Any], *, expected_version: int | None) -> int:
        """Save ``state`` under ``state.thread_id`` and return the thread's new version.

        Only the messages appended since the stored state are written, in one transaction: on
        any failure the stored state is the old one. Arguments and errors as `SQLiteStore.save`.

        Raises:
            ConfigError: no thread id, a log that does not extend the stored one, or an
                ``expected_version`` for a thread that was never saved.
            ConflictError: another writer saved the thread since; nothing was written.
            ArchiveError: the write failed; nothing was written.
        """
        thread_id = state.thread_id
        if thread_id is None:
            raise ConfigError(
                "the state has no thread_id, so the store cannot file it; build it with "
                "ConversationState(messages, thread_id='...')"
            )
        record = _dump_state(state)
        now = datetime.now(UTC)
        with self._errors(f"save thread {thread_id!r}"), self._writing(thread_id) as db:
            row = db.execute(_STATE_AND_LAST, (thread_id,)).fetchone()
            version, length, events, last, cleared = row if row is not None else (0, 0, 0, None, 0)
            _check_version(thread_id, expected_version, row is not None, version)
            _check_extends(state, thread_id, length, last)
            _write_state(db, state, thread_id=thread_id, length=length, events=events, now=now)
            marks = state.cleared
            if len(marks) > (cleared or 0):
                with db.cursor() as cursor:
                    cursor.executemany(
                        _SAVE_CLEARED,
                        [
                            (thread_id, n, _dump_mark(marks[n]))
                            for n in range(cleared or 0, len(marks))
                        ],
                    )
            db.execute(
                "DELETE FROM progsum_cleared WHERE thread_id = %s AND number >= %s",
                (thread_id, len(marks)),
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
        """The thread's saved state and its version (see `SQLiteStore.load`).

        Raises:
            ConfigError: nothing was saved for ``thread_id``, or with another schema.
            ArchiveError: the read failed or the stored data is damaged.
        """
        check_thread_id(thread_id)
        with self._errors(f"load thread {thread_id!r}"), self._connect() as db:
            found = self._read_state(db, thread_id)  # one statement: one snapshot
            if found is None:
                known = db.execute("SELECT thread_id FROM progsum_states LIMIT 6").fetchall()
                raise self._unknown(thread_id, [t for (t,) in known])
        version, data = found
        return Stored(ConversationState.from_dict(data, schema=schema), version)

    def _saved_key(self, thread_id: str) -> tuple[object, ...] | None:
        """The saved row's version, length, event count and save time (None: never saved)."""
        query = "SELECT version, length, events, saved_at FROM progsum_states WHERE thread_id = %s"
        with self._errors(f"read thread {thread_id!r}"), self._connect() as db:
            row = db.execute(query, (thread_id,)).fetchone()
        return None if row is None else tuple(row)

    def _read_state(
        self, db: psycopg.Connection[tuple[Any, ...]], thread_id: str
    ) -> tuple[int, dict[str, Any]] | None:
        """The thread's version and `ConversationState.to_dict` data, or None if never saved."""
        row = db.execute(_STATE_AND_LOG, (thread_id,)).fetchone()
        if row is None:
            return None
        version, length, text, stored, log, count, events, cleared, marks = row
        if stored != length:
            raise ArchiveError(
                f"thread {thread_id!r} in {self.where} is damaged: its state has {length} "
                f"messages but {stored} are stored; restore the database from a backup"
            )
        data = json.loads(text)
        data["log"] = json.loads(log)
        if "events" not in data:  # saved since the events stay in their own table only
            data["events"] = _event_rows(thread_id, count, events or [], self.where)
        if cleared is not None:  # schema 2: the marks are rows (NULL: in the JSON, schema 1)
            data["cleared"] = _mark_rows(thread_id, cleared, marks or [], self.where)
        return int(version), data

    def threads(self) -> list[str]:
        """Thread ids with a saved state or archived events, sorted."""
        query = "SELECT thread_id FROM progsum_states UNION SELECT thread_id FROM progsum_events"
        with self._errors("list threads"), self._connect() as db:
            return sorted(t for (t,) in db.execute(query))

    def _unknown(self, thread_id: str, known: list[str]) -> ConfigError:
        listed = ", ".join(repr(t) for t in known[:5]) + (", ..." if len(known) > 5 else "")  # noqa: PLR2004 - a short list
        return ConfigError(
            f"no conversation with thread_id={thread_id!r} is saved in {self.where} (saved: "
            f"{listed or 'none'}); create it with store.save(ConversationState(messages, "
            f"thread_id={thread_id!r}), expected_version=None)"
        )

    # -- load, change, save ---------------------------------------------------------------------

    # -- export ---------------------------------------------------------------------------------

    def export_markdown(self, thread_id: str, *, schema: type[Any] = Summary) -> str:
        """A readable Markdown record of the thread (see `SQLiteStore.export_markdown`).

        Raises:
            ConfigError: nothing is stored for ``thread_id``.
        """
        with self._errors(f"export thread {thread_id!r}"), self._reading() as db:
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
    db: psycopg.Connection[tuple[Any, ...]], thread_id: str, start: int, end: int | None
) -> list[ArchivedMessage]:
    query = _ARCHIVED + "AND archived_at IS NOT NULL AND idx >= %s AND idx < %s ORDER BY idx"
    stop = 2**31 - 1 if end is None else min(end, 2**31 - 1)
    rows = db.execute(query, (thread_id, max(start, 0), stop)).fetchall()
    return [_archived(thread_id, row) for row in rows]


def _read_events(db: psycopg.Connection[tuple[Any, ...]], thread_id: str) -> list[CompactionEvent]:
    query = "SELECT event FROM progsum_events WHERE thread_id = %s ORDER BY number"
    rows = db.execute(query, (thread_id,)).fetchall()
    return [CompactionEvent.model_validate_json(e) for (e,) in rows]


def _committed(db: psycopg.Connection[tuple[Any, ...]], thread_id: str) -> tuple[int, int]:
    """The saved log length and event count of the thread (0, 0 when never saved)."""
    row = db.execute(
        "SELECT length, events FROM progsum_states WHERE thread_id = %s", (thread_id,)
    ).fetchone()
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


def _write_state(
    db: psycopg.Connection[tuple[Any, ...]],
    state: ConversationState[Any],
    *,
    thread_id: str,
    length: int,
    events: int,
    now: datetime,
) -> None:
    """Write what is new since the saved state and reconcile the archive (as the SQLite store)."""
    log, count = state.log, len(state.events)
    new_events = state.events[events:]
    folded = [
        (e.number, *e.folded)
        for e in new_events
        if e.outcome == "compacted" and e.folded is not None
    ]
    with db.cursor() as cursor:
        cursor.executemany(
            _SAVE_MESSAGE, [(thread_id, i, _dump(log[i])) for i in range(length, len(log))]
        )
        cursor.execute(
            "DELETE FROM progsum_messages WHERE thread_id = %s AND idx >= %s", (thread_id, len(log))
        )
        cursor.execute(_UNMARK_STALE, (thread_id, count))
        cursor.execute(
            "DELETE FROM progsum_events WHERE thread_id = %s AND number > %s", (thread_id, count)
        )
        cursor.executemany(
            _PUT_EVENT, [(thread_id, e.number, e.model_dump_json()) for e in new_events]
        )
        cursor.executemany(_UNMARK_OUTSIDE, [(thread_id, n, a, b) for n, a, b in folded])
        cursor.executemany(_MARK_FOLDED, [(now, n, thread_id, a, b, n) for n, a, b in folded])


def _check_extends(
    state: ConversationState[Any], thread_id: str, length: int, last: str | None
) -> None:
    """Refuse a state that does not extend the stored log (shorter, or another last message)."""
    if len(state) < length:
        raise ConfigError(
            f"the state has {len(state)} messages but thread {thread_id!r} has {length} saved; "
            "the log is append-only, so load the thread and append to it"
        )
    if length and last != _dump(state.log[length - 1]):
        raise ConfigError(
            f"message {length - 1} of the state differs from the one saved for thread "
            f"{thread_id!r}; a saved state must extend the loaded one, so load it and append"
        )


def _archived(thread_id: str, row: tuple[int, str, datetime, int | None]) -> ArchivedMessage:
    idx, message, archived_at, event = row
    return ArchivedMessage(thread_id, idx, json.loads(message), archived_at.astimezone(UTC), event)
