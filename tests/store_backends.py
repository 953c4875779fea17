"""The two store backends behind one test interface, so one suite checks both.

Each backend opens stores on one database and reaches it at its own boundary to inspect rows and
inject faults: SQLite through `sqlite3.connect` (authorizer, trace), PostgreSQL through triggers
created over a second connection.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from progsum.store._postgres import PostgresStore
from progsum.store._sqlite import SQLiteStore

Store = SQLiteStore | PostgresStore

SQLITE_FORMAT_3 = """
CREATE TABLE messages (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, message TEXT NOT NULL,
    archived_at TEXT, event INTEGER, PRIMARY KEY (thread_id, idx)) WITHOUT ROWID;
CREATE INDEX messages_by_event ON messages (thread_id, event) WHERE event IS NOT NULL;
CREATE TABLE events (thread_id TEXT NOT NULL, number INTEGER NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (thread_id, number)) WITHOUT ROWID;
CREATE TABLE states (thread_id TEXT PRIMARY KEY, version INTEGER NOT NULL,
    length INTEGER NOT NULL, events INTEGER NOT NULL, state TEXT NOT NULL,
    saved_at TEXT NOT NULL, cleared INTEGER);
CREATE TABLE cleared (thread_id TEXT NOT NULL, number INTEGER NOT NULL, mark TEXT NOT NULL,
    PRIMARY KEY (thread_id, number)) WITHOUT ROWID;
CREATE TABLE saves (thread_id TEXT NOT NULL, version INTEGER NOT NULL, length INTEGER NOT NULL,
    token TEXT NOT NULL, PRIMARY KEY (thread_id, version)) WITHOUT ROWID;
PRAGMA user_version = 3;
"""
"""The SQLite store's format-3 layout (before recall's columns, with the tombstones and the
ledger in the state's JSON), as an older progsum wrote it."""

BACKENDS = ["sqlite", "postgres"]


def hooked_connect(
    monkeypatch: pytest.MonkeyPatch, hook: Callable[[sqlite3.Connection], None]
) -> None:
    """Every SQLite connection opened from now on is passed to ``hook`` first (the boundary)."""
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = real(*args, **kwargs)
        hook(connection)
        return connection

    monkeypatch.setattr(sqlite3, "connect", connect)


@dataclass
class SQLiteBackend:
    """Stores on one SQLite file."""

    path: Path
    name = "sqlite"

    def open(self) -> SQLiteStore:
        """A new store object on the file."""
        return SQLiteStore(self.path)

    def damage(self, table: str, column: str, value: str, thread_id: str) -> None:
        """Overwrite ``column`` of the thread's rows in ``table`` with ``value``, directly."""
        with sqlite3.connect(self.path) as db:
            db.execute(f"UPDATE {table} SET {column} = ? WHERE thread_id = ?", (value, thread_id))  # noqa: S608 - a test's names

    def message_rows(self, thread_id: str) -> list[tuple[int, str]]:
        """Every stored message row of a thread, archived or not, read directly."""
        with sqlite3.connect(self.path) as db:
            query = "SELECT idx, message FROM messages WHERE thread_id = ? ORDER BY idx"
            return list(db.execute(query, (thread_id,)))

    @contextlib.contextmanager
    def refusing_writes(self, table: str) -> Iterator[SQLiteStore]:
        """A store whose inserts into ``table`` the database refuses, as a full disk would."""

        def authorize(action: int, arg1: str | None, *_: str | None) -> int:
            denied = action == sqlite3.SQLITE_INSERT and arg1 == table
            return sqlite3.SQLITE_DENY if denied else sqlite3.SQLITE_OK

        with pytest.MonkeyPatch.context() as patch:
            hooked_connect(patch, lambda connection: connection.set_authorizer(authorize))
            failing = SQLiteStore(self.path)
            try:
                yield failing
            finally:
                failing.close()

    def rows(self, table: str, thread_id: str) -> list[tuple[Any, ...]]:
        """Every row of a thread in one of the store's tables, read directly, in key order."""
        with contextlib.closing(sqlite3.connect(self.path)) as db:
            query = f"SELECT * FROM {table} WHERE thread_id = ? ORDER BY 2"  # noqa: S608 - a test's table name
            return list(db.execute(query, (thread_id,)))

    @contextlib.contextmanager
    def counting_writes(self, *tables: str) -> Iterator[Callable[[], tuple[int, ...]]]:
        """Count the statements that insert into each of ``tables`` (one per row written)."""
        counts = dict.fromkeys(tables, 0)

        def trace(statement: str) -> None:
            words = statement.split(maxsplit=3)
            if words[:2] == ["INSERT", "INTO"] and len(words) > 2 and words[2] in counts:
                counts[words[2]] += 1

        with pytest.MonkeyPatch.context() as patch:
            hooked_connect(patch, lambda connection: connection.set_trace_callback(trace))
            yield lambda: tuple(counts[table] for table in tables)


_REFUSE = """
CREATE OR REPLACE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'disk full (test)' USING ERRCODE = 'disk_full'; END $$;
"""

_COUNT = """
CREATE TABLE IF NOT EXISTS row_writes_{table} (n integer);
CREATE OR REPLACE FUNCTION count_write_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO row_writes_{table} VALUES (1); RETURN NULL; END $$;
CREATE TRIGGER count_writes AFTER INSERT OR UPDATE ON progsum_{table}
    FOR EACH ROW EXECUTE FUNCTION count_write_{table}();
"""


@dataclass
class PostgresBackend:
    """Stores on one PostgreSQL database."""

    url: str
    name = "postgres"

    def open(self) -> PostgresStore:
        """A new store object (with a pool of its own) on the database."""
        return PostgresStore(self.url)

    def execute(self, sql: str, params: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]]:
        """Run ``sql`` on a connection of the test's own, committed; return its rows.

        Without ``params`` it may hold several statements (and ``%`` means itself).
        """
        with psycopg.connect(self.url, autocommit=True) as db:
            cursor = db.execute(sql.encode()) if params is None else db.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def damage(self, table: str, column: str, value: str, thread_id: str) -> None:
        """Overwrite ``column`` of the thread's rows in ``table`` with ``value``, directly."""
        self.execute(
            f"UPDATE progsum_{table} SET {column} = %s WHERE thread_id = %s",  # noqa: S608 - a test's names
            (value, thread_id),
        )

    def message_rows(self, thread_id: str) -> list[tuple[int, str]]:
        """Every stored message row of a thread, archived or not, read directly."""
        query = "SELECT idx, message FROM progsum_messages WHERE thread_id = %s ORDER BY idx"
        return [(int(i), str(m)) for i, m in self.execute(query, (thread_id,))]

    @contextlib.contextmanager
    def refusing_writes(self, table: str) -> Iterator[PostgresStore]:
        """A store whose writes into ``table`` the database refuses (a trigger: disk_full)."""
        self.execute(
            _REFUSE + f"CREATE TRIGGER refuse BEFORE INSERT OR UPDATE OR DELETE ON progsum_{table} "
            "FOR EACH ROW EXECUTE FUNCTION refuse();"
        )
        failing = self.open()
        try:
            yield failing
        finally:
            failing.close()
            self.execute(f"DROP TRIGGER refuse ON progsum_{table}")

    def rows(self, table: str, thread_id: str) -> list[tuple[Any, ...]]:
        """Every row of a thread in one of the store's tables, read directly, in key order."""
        query = f"SELECT * FROM progsum_{table} WHERE thread_id = %s ORDER BY 2"  # noqa: S608 - a test's table name
        return self.execute(query, (thread_id,))

    @contextlib.contextmanager
    def counting_writes(self, *tables: str) -> Iterator[Callable[[], tuple[int, ...]]]:
        """Count the rows of each of ``tables`` inserted or updated (a row-level trigger each)."""
        self.open().close()  # the tables, so that the triggers have one to count on
        for table in tables:
            self.execute(_COUNT.format(table=table))

        def count() -> tuple[int, ...]:
            found = []
            for table in tables:
                ((n,),) = self.execute(f"SELECT count(*) FROM row_writes_{table}")  # noqa: S608 - a test's table name
                found.append(int(n))
            return tuple(found)

        try:
            yield count
        finally:
            for table in tables:
                self.execute(
                    f"DROP TRIGGER count_writes ON progsum_{table}; DROP TABLE row_writes_{table};"
                )


Backend = SQLiteBackend | PostgresBackend


def make_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The backend named by the test's parameter (the PostgreSQL server starts on first use)."""
    if request.param == "sqlite":
        return SQLiteBackend(tmp_path / "store.db")
    return PostgresBackend(request.getfixturevalue("postgres_url"))
