"""The store for fleets: folded messages, events and saved states in a shared PostgreSQL database.

`PostgresStore` answers like `progsum.store._sqlite.SQLiteStore` (the
`progsum.store._archive.Archive` protocol, saved states with optimistic versions,
``update``/``aupdate``, Markdown export; the flows and statements are `progsum.store._sql`'s, which
both stores share), for many worker processes on many machines. It needs the ``postgres`` extra:
``pip install "progsum[postgres]"`` (psycopg 3 and psycopg-pool).

Every write is one transaction that first takes a transaction-level advisory lock on its thread,
so writers of one thread queue up while writers of other threads run in parallel; at the default
READ COMMITTED level each statement after the lock sees what the previous holder committed. A save
against a stale version raises `ConflictError` and writes nothing; a save writes the messages
appended since the saved state, one JSON row for the rest (``ConversationState.to_dict(log=False)``,
so new state fields are stored as they appear), and reconciles the archive with the saved state as
the SQLite store does. Writes are pipelined (two round trips per save); a load is one statement,
so one snapshot. A failure before the COMMIT is sent rolls the transaction back and raises
`ArchiveError`; when the connection drops after it (a restart, a terminated backend, a cut
network), the store asks its save ledger whether the save committed, under the thread's lock, and
returns the save's version if it did (`progsum.store._outcome`). Design and measurements:
docs/fleet.md.

The schema is created and upgraded by `progsum.store._postgres_schema.migrate`, through `init` or
``progsum store init URL``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from progsum.errors import ArchiveError, ConfigError
from progsum.store import _outcome as outcome
from progsum.store import _postgres_schema as postgres_schema
from progsum.store._postgres_schema import LOCK_CLASS, SCHEMA_VERSION, schema_version
from progsum.store._rows import SavedHead, SavedRows
from progsum.store._sql import Dialect, SQLStore, Statements

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    _Db = psycopg.Connection[tuple[Any, ...]]

__all__ = ["DEFAULT_POOL_SIZE", "PostgresStore", "init"]

UPDATE_LOCK_CLASS: Final = LOCK_CLASS + 1
"""The advisory lock class of the update lock (a session lock held from an update's load to its
save), apart from the save's own transaction lock (`LOCK_CLASS`)."""
DEFAULT_POOL_SIZE = 4
"""Connections a store opens at most when it makes its own pool (one per concurrent call)."""

DEFAULT_TIMEOUT = 30.0
"""Seconds a call waits for a free connection of the pool before failing."""

_STATEMENTS = Statements(
    threads="SELECT thread_id FROM {states} UNION SELECT thread_id FROM {events}",
    ranked=(
        "SELECT idx, length, terms FROM {messages} WHERE lexemes @@ ?::tsquery "
        "AND thread_id = ? AND archived_at IS NOT NULL AND ({within})"
    ),
    unranked=(
        "SELECT idx, length, terms, CASE WHEN length IS NULL THEN message END FROM {messages} "
        "WHERE thread_id = ? AND archived_at IS NOT NULL AND lexemes IS NULL AND ({within})"
    ),
    ranked_stats=(
        "SELECT count(*), coalesce(sum(length), 0) FROM {messages} WHERE thread_id = ? "
        "AND archived_at IS NOT NULL AND length IS NOT NULL AND ({within})"
    ),
    unindexed=(
        "SELECT thread_id, idx, message FROM {messages} WHERE thread_id = ? "
        "AND archived_at IS NOT NULL AND lexemes IS NULL AND length IS NULL ORDER BY idx LIMIT ?"
    ),
    index_terms="UPDATE {messages} SET terms = ?, length = ? WHERE thread_id = ? AND idx = ?",
)
"""PostgreSQL's own statements: the thread list, and recall's (`postgres_schema` says how the
GIN index of ``lexemes`` holds the terms, and why some messages have none)."""

_STATE_AND_LAST = """
SELECT s.version, s.length, s.events, s.cleared, m.message, s.retired, s.ledger
FROM progsum_states s
LEFT JOIN progsum_messages m ON m.thread_id = s.thread_id AND m.idx = s.length - 1
WHERE s.thread_id = %s
"""
"""The saved state's counters and its last message (to check that a save extends it)."""

_STATE_AND_LOG = """
SELECT s.version, s.length, s.state, m.stored, m.log, s.events, e.events, s.cleared, c.marks,
       s.retired, r.tombstones, s.ledger, l.entries
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
) c CROSS JOIN LATERAL (
    SELECT array_agg(tombstone ORDER BY number) AS tombstones
    FROM progsum_retired WHERE thread_id = s.thread_id AND number < s.retired
) r CROSS JOIN LATERAL (
    SELECT array_agg(entry ORDER BY number) AS entries
    FROM progsum_ledger WHERE thread_id = s.thread_id AND number < s.ledger
) l
WHERE s.thread_id = %s
"""
"""The saved state with its log as one JSON array, its events, marks, tombstones and ledger, in
one statement (one snapshot)."""

_MAX_INDEX = 2**31 - 1
"""The largest ``integer`` (the type of ``idx``)."""


def _terms_query(terms: Sequence[str]) -> str:
    """A ``tsquery`` for any of ``terms``, each a quoted lexeme (compared as it is: no parser)."""
    quoted = ("'" + term.replace("\\", "\\\\").replace("'", "''") + "'" for term in terms)
    return " | ".join(quoted)


def _now() -> datetime:
    return datetime.now(UTC)


def _timestamp(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _bounds(start: int, end: int | None) -> tuple[int, int]:
    return max(start, 0), _MAX_INDEX if end is None else min(end, _MAX_INDEX)


DIALECT: Final = Dialect(
    prefix="progsum_",
    placeholder="%s",
    medium="database",
    now=_now,
    timestamp=_timestamp,
    bounds=_bounds,
    terms_query=_terms_query,
)
"""PostgreSQL's spelling: tables named ``progsum_*`` in a shared database, ``%s``, timestamptz
times, ``tsquery`` text."""


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
        raise _init_error(where, "migrate the progsum tables", exc) from exc


_REMEDY = "once the database is reachable and the role may write to it"


def _reason(where: str, action: str, exc: BaseException) -> str:
    """What failed, in one line: the action, the database and the error's first line.

    The server's CONTEXT and HINT lines would break the one-line message.
    """
    lines = str(exc).strip().splitlines() or ["(no message)"]
    return f"could not {action} in {where}: {type(exc).__name__}: {lines[0]}"


def _init_error(where: str, action: str, exc: BaseException) -> ArchiveError:
    return ArchiveError(outcome.unchanged(_reason(where, action, exc), _REMEDY))


class PostgresStore(SQLStore["_Db"]):
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

    dialect = DIALECT
    sql = _STATEMENTS.spelled(DIALECT)
    remedy = _REMEDY

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
            timeout: Seconds a call waits for a connection before it fails, and the longest a
                save whose answer was lost tries to find out whether it committed.
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
        size = url.max_size if isinstance(url, psycopg_pool.ConnectionPool) else max_size
        self._spare = threading.BoundedSemaphore(max(1, size - 1))
        """Connections that may hold update locks at once: all of the pool's but one, so that
        loads and saves always find one (a pool of one holds no update lock)."""
        self._lockless = size < 2  # noqa: PLR2004 - one connection serves the loads and saves
        self._inherited: list[ConnectionPool[Any]] = []
        try:
            self._open(migrate=migrate)
        except BaseException:
            self.close()
            raise

    @contextlib.contextmanager
    def _first_connection(self) -> Iterator[_Db]:
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
    def _connect(self) -> Iterator[_Db]:
        """A connection of the pool for one transaction (committed on success, else rolled back)."""
        with self._pool_now().connection(timeout=self.timeout) as connection:
            yield connection

    @contextlib.contextmanager
    def _writing(self, thread_id: str) -> Iterator[_Db]:
        """A write transaction holding the thread's advisory lock until it ends, pipelined.

        Statements are sent without waiting for their results; only a fetch waits. A save is then
        two round trips (the lock with the state row, then every write with the COMMIT), not one
        per statement.
        """
        with self._connect() as db, db.pipeline(), db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, thread_id))
            yield db

    @contextlib.contextmanager
    def _locked(self, thread_id: str, wait: float) -> Iterator[_Db]:
        """A transaction holding the thread's advisory lock, waiting at most ``wait`` seconds.

        The lock is held by a write transaction until it ends, so once this one has it, a save
        whose answer was lost has committed or rolled back for good (its backend may need a
        moment to notice a dropped client; the wait covers it).
        """
        with self._pool_now().connection(timeout=wait) as db, db.transaction():
            milliseconds = f"{max(1, round(wait * 1000))}ms"
            db.execute("SELECT set_config('lock_timeout', %s, true)", (milliseconds,))
            db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, thread_id))
            yield db

    @contextlib.contextmanager
    def _fleet_queue(self, thread_id: str, wait: float) -> Iterator[bool]:
        """Hold ``thread_id``'s update lock: a session advisory lock on a connection of the pool.

        Every worker of the fleet updating the thread queues on it, whatever machine it runs
        on; the database releases it if the worker dies. Waits at most ``wait`` seconds; goes
        on without when no spare connection or no lock can be had in time.
        """
        held = None
        if not self._lockless and self._spare.acquire(blocking=False):
            held = self._lock_session(thread_id, wait)
            if held is None:
                self._spare.release()
        try:
            yield held is not None
        finally:
            if held is not None:
                self._unlock_session(held, thread_id)
                self._spare.release()

    def _lock_session(
        self, thread_id: str, wait: float
    ) -> tuple[contextlib.AbstractContextManager[_Db], _Db] | None:
        """A pool connection holding ``thread_id``'s update lock, with its context; None: none."""
        borrowed = self._pool_now().connection(timeout=max(wait, 0.001))
        try:
            db = borrowed.__enter__()
        except self._failures:
            return None
        milliseconds = f"{max(1, round(wait * 1000))}ms"
        try:  # autocommit statements: no transaction is left open while the update runs
            db.execute("SELECT set_config('lock_timeout', %s, false)", (milliseconds,))
            try:
                lock = "SELECT pg_advisory_lock(%s, hashtext(%s))"
                db.execute(lock, (UPDATE_LOCK_CLASS, thread_id))
            finally:
                db.execute("RESET lock_timeout")
        except self._failures:
            borrowed.__exit__(None, None, None)
            return None
        return borrowed, db

    def _unlock_session(
        self, held: tuple[contextlib.AbstractContextManager[_Db], _Db], thread_id: str
    ) -> None:
        """Release the update lock and give its connection back (a lost session released it)."""
        borrowed, db = held
        with contextlib.suppress(*self._failures):
            db.execute(
                "SELECT pg_advisory_unlock(%s, hashtext(%s))", (UPDATE_LOCK_CLASS, thread_id)
            )
        borrowed.__exit__(None, None, None)

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[_Db]:
        """A read-only transaction on one snapshot (for reads of several statements)."""
        with self._connect() as db, db.transaction():
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield db

    def _reading(self) -> contextlib.AbstractContextManager[_Db]:
        """A connection of the pool (in autocommit mode: a read is one round trip)."""
        return self._connect()

    def _loading(self) -> contextlib.AbstractContextManager[_Db]:
        """A connection of the pool: the saved state is read in one statement (one snapshot)."""
        return self._connect()

    def _executemany(self, db: _Db, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Send ``sql`` for every row (pipelined in a write transaction); nothing for no rows."""
        if rows:
            with db.cursor() as cursor:
                cursor.executemany(sql, rows)

    @property
    def _failures(self) -> tuple[type[BaseException], ...]:
        """The errors of psycopg (the pool's timeouts included)."""
        psycopg, _ = _psycopg()
        return (psycopg.Error,)

    def _failure(self, action: str, exc: BaseException) -> str:
        return _reason(self.where, action, exc)

    def close(self) -> None:
        """Close the pool this process opened (not a pool it was given); reopened when used."""
        pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self.where})"

    def _read_head(self, db: _Db, thread_id: str) -> SavedHead | None:
        """The saved state's counters and last message: one statement (after the lock)."""
        row = db.execute(_STATE_AND_LAST, (thread_id,)).fetchone()
        return None if row is None else SavedHead(*row)

    def _read_saved(self, db: _Db, thread_id: str) -> SavedRows | None:
        """The state row with its log, events and marks aggregated: one statement."""
        row = db.execute(_STATE_AND_LOG, (thread_id,)).fetchone()
        if row is None:
            return None
        version, length, text, stored, log, count, events, cleared, marks, *history = row
        retired, tombstones, ledger, entries = history
        return SavedRows(
            version,
            length,
            text,
            stored,
            log,
            count,
            events or [],
            cleared,
            marks or [],
            retired,
            tombstones or [],
            ledger,
            entries or [],
        )
