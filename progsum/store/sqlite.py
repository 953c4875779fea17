"""The embedded store: folded messages, compaction events and saved states in one SQLite file.

`SQLiteStore` is the default `progsum.store.archive.Archive`, and it also saves and loads
`ConversationState` values by thread id with optimistic concurrency (`progsum.store.sql` holds
the flows and the statements both SQL stores share). This module holds what is SQLite's own:
the file's layout and its upgrades, the connections, the transactions and the error messages.

Each save is a single ``BEGIN IMMEDIATE`` transaction in a WAL-mode file with
``synchronous=FULL``: after a crash at any point the thread is at its old version or its new one,
never in between, and a write is durable once it returns. Several threads and processes may share
one file: each thread of each process uses its own connection, and writers wait for one another
(``busy_timeout``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from progsum.errors import ArchiveError
from progsum.store.sql import Dialect, SQLStore, Statements
from progsum.store.updating import Stored

__all__ = ["STORE_FORMAT", "SQLiteStore", "Stored"]

STORE_FORMAT = 3
"""Layout version of the SQLite file, kept in ``PRAGMA user_version``. Format 2 keeps the cleared
tool-data marks in rows of their own, format 3 adds the save ledger; an older file is upgraded
when opened."""

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

_SAVES_TABLE = """
CREATE TABLE IF NOT EXISTS saves (
    thread_id TEXT    NOT NULL,
    version   INTEGER NOT NULL,
    length    INTEGER NOT NULL,
    token     TEXT    NOT NULL,
    PRIMARY KEY (thread_id, version)
) WITHOUT ROWID
"""
"""Format 3: the save ledger, one row per recent save (`progsum.store.outcome`)."""

_UPGRADES = {
    0: [*filter(str.strip, _SCHEMA.split(";")), "ALTER TABLE states ADD COLUMN cleared INTEGER"],
    1: ["ALTER TABLE states ADD COLUMN cleared INTEGER"],
    2: [],
}
"""Statements that bring a file of format N to `STORE_FORMAT` (the cleared table and the save
ledger follow). ``states.cleared`` counts the state's cleared rows; NULL (a row saved by format
1) means its marks are in the state's JSON."""

_REMEDY = "once the file is a writable progsum store that no stuck process holds locked"

_STATEMENTS = Statements(
    threads=(
        "SELECT thread_id FROM {states} UNION "
        "SELECT DISTINCT thread_id FROM {messages} WHERE archived_at IS NOT NULL ORDER BY 1"
    ),
    save_cleared="INSERT OR REPLACE INTO {cleared} (thread_id, number, mark) VALUES (?, ?, ?)",
)
"""SQLite's own statements: the thread list, and an upsert of a cleared mark."""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _bounds(start: int, end: int | None) -> tuple[int, int]:
    return start, 2**62 if end is None else end


DIALECT: Final = Dialect(
    prefix="",
    placeholder="?",
    medium="file",
    now=_now,
    timestamp=datetime.fromisoformat,
    bounds=_bounds,
)
"""SQLite's spelling: plain table names, ``?``, times as ISO text."""


class _Local(threading.local):
    connection: sqlite3.Connection | None = None
    pid: int = 0


class SQLiteStore(SQLStore[sqlite3.Connection]):
    """Archive and saved states of many conversations in one SQLite file (WAL mode).

    Example:
        ``store = SQLiteStore("agents.db")``, then ``store.save(state, expected_version=None)``
        for a new thread and ``store.update(thread_id, lambda s: s.append(message))`` after.

    Safe to share between threads and processes; each thread opens its own connection.

    Raises:
        ArchiveError: the file cannot be opened or is not a progsum store.
    """

    dialect = DIALECT
    sql = _STATEMENTS.spelled(DIALECT)
    remedy = _REMEDY

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Open (creating if needed) the store at ``path``.

        Args:
            path: The SQLite file; its directory must exist.
            timeout: Seconds to wait for another writer before failing.
        """
        self.path = Path(path)
        self.where = str(self.path)
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
            db.execute(_SAVES_TABLE)
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

    def _writing(self, thread_id: str) -> contextlib.AbstractContextManager[sqlite3.Connection]:  # noqa: ARG002 - SQLite locks the whole file
        """A ``BEGIN IMMEDIATE`` transaction: every writer of the file waits for it."""
        return self._transaction()

    def _locked(
        self,
        thread_id: str,  # noqa: ARG002 - SQLite locks the whole file
        wait: float,  # noqa: ARG002 - the connection's busy_timeout bounds the wait
    ) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: no other write of the file runs meanwhile."""
        return self._transaction()

    def _snapshot(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._transaction(write=False)

    def _reading(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return contextlib.nullcontext(self._connection())

    def _executemany(self, db: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
        db.executemany(sql, rows)

    @property
    def _failures(self) -> tuple[type[BaseException], ...]:
        return (sqlite3.Error,)

    def _failure(self, action: str, exc: BaseException) -> str:
        return f"could not {action} in {self.path}: {type(exc).__name__}: {exc}"
