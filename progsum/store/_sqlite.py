"""The embedded store: folded messages, compaction events and saved states in one SQLite file.

`SQLiteStore` is the default `progsum.store._archive.Archive`, and it also saves and loads
`ConversationState` values by thread id with optimistic concurrency (`progsum.store._sql` holds
the flows and the statements both SQL stores share). This module holds what is SQLite's own:
the file's layout and its upgrades, the connections, the transactions and the error messages.

Each save is a single ``BEGIN IMMEDIATE`` transaction in a WAL-mode file with
``synchronous=FULL``: after a crash at any point the thread is at its old version or its new one,
never in between, and a write is durable once it returns. Several threads and processes may share
one file: each thread of each process uses its own connection, and writers wait for one another
(``busy_timeout``).

Recall ranks archived messages through an FTS5 table, ``recall``: each archived message row holds
its recall terms (``terms``, space-joined; ``length``, their count) and the FTS row it is filed
under (``doc``). The table is contentless and tokenizes with ``ascii`` (every non-ASCII character
and ``_`` a token character), so each stored term is exactly one FTS token and a quoted term finds
exactly the messages that hold it. Triggers keep it right whatever writes the file: a row whose
message changes loses its terms, and the FTS rows follow the terms. A file without them (made by
an earlier progsum) gets them when opened, and every archived message is indexed then.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from progsum.errors import ArchiveError, ConfigError
from progsum.store._queueing import FileLocks
from progsum.store._sql import INDEX_BATCH, Dialect, SQLStore, Statements
from progsum.store._updating import Stored

__all__ = ["STORE_FORMAT", "SQLiteStore", "Stored"]

STORE_FORMAT = 4
"""Layout version of the SQLite file, kept in ``PRAGMA user_version``. Format 2 keeps the cleared
tool-data marks in rows of their own, format 3 adds the save ledger, format 4 keeps the summary's
tombstones and the exact-value ledger in rows of their own; an older file is upgraded when
opened. Recall's columns, table and triggers (`_RECALL`) need no format of their own: they are
added to a file that lacks them, and an older progsum writing the file keeps them right (its
writes fire the triggers)."""

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
"""Format 3: the save ledger, one row per recent save (`progsum.store._outcome`)."""

_HISTORY_TABLES = """
CREATE TABLE IF NOT EXISTS retired (
    thread_id TEXT    NOT NULL,
    number    INTEGER NOT NULL,
    tombstone TEXT    NOT NULL,
    PRIMARY KEY (thread_id, number)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger (
    thread_id TEXT    NOT NULL,
    number    INTEGER NOT NULL,
    entry     TEXT    NOT NULL,
    PRIMARY KEY (thread_id, number)
) WITHOUT ROWID
"""
"""Format 4: one row per tombstone of the saved summary and per ledger entry (0-based)."""

_FORMAT_4 = [
    "ALTER TABLE states ADD COLUMN retired INTEGER",
    "ALTER TABLE states ADD COLUMN ledger INTEGER",
]
_UPGRADES = {
    0: [
        *filter(str.strip, _SCHEMA.split(";")),
        "ALTER TABLE states ADD COLUMN cleared INTEGER",
        *_FORMAT_4,
    ],
    1: ["ALTER TABLE states ADD COLUMN cleared INTEGER", *_FORMAT_4],
    2: _FORMAT_4,
    3: _FORMAT_4,
}
"""Statements that bring a file of format N to `STORE_FORMAT` (the tables of the cleared marks,
the save ledger, the tombstones and the ledger follow). ``states.cleared``, ``states.retired``
and ``states.ledger`` count the state's rows of each; NULL (a row saved by an older format)
means those are in the state's JSON."""

_RECALL_COLUMNS = {"terms": "TEXT", "length": "INTEGER", "doc": "INTEGER"}
"""Recall's columns of ``messages``: the terms, their count (NULL: not indexed) and the FTS row."""

_RECALL = (
    """CREATE VIRTUAL TABLE recall USING fts5(
        terms, content='', detail='none', columnsize=0, tokenize="ascii tokenchars '_'"
    )""",
    "CREATE UNIQUE INDEX messages_by_doc ON messages (doc) WHERE doc IS NOT NULL",
    """CREATE INDEX messages_recalled ON messages (thread_id, idx, length, archived_at)
        WHERE archived_at IS NOT NULL AND length IS NOT NULL""",
    """CREATE INDEX messages_unindexed ON messages (thread_id, idx)
        WHERE archived_at IS NOT NULL AND length IS NULL""",
    """CREATE TRIGGER messages_changed AFTER UPDATE OF message ON messages
        WHEN old.message IS NOT new.message AND old.terms IS NOT NULL
    BEGIN
        UPDATE messages SET terms = NULL, length = NULL
        WHERE thread_id = new.thread_id AND idx = new.idx;
    END""",
    """CREATE TRIGGER messages_terms AFTER UPDATE OF terms, doc ON messages
        WHEN old.terms IS NOT new.terms OR old.doc IS NOT new.doc
    BEGIN
        INSERT INTO recall (recall, rowid, terms)
            SELECT 'delete', old.doc, old.terms WHERE old.terms IS NOT NULL;
        INSERT INTO recall (rowid, terms) SELECT new.doc, new.terms WHERE new.terms IS NOT NULL;
    END""",
    """CREATE TRIGGER messages_dropped AFTER DELETE ON messages WHEN old.terms IS NOT NULL
    BEGIN
        INSERT INTO recall (recall, rowid, terms) VALUES ('delete', old.doc, old.terms);
    END""",
)
"""Recall's FTS5 table (contentless: the terms are in ``messages``), its indexes (stats, messages
not indexed yet) and the triggers that keep the FTS rows those of the rows' terms. A row is
inserted without terms (`progsum.store._sql.SQLStore.put` stores them after), so no insert
trigger is needed."""

_RECALL_OBJECTS = (
    ("TABLE", "recall"),
    ("INDEX", "messages_by_doc"),
    ("INDEX", "messages_recalled"),
    ("INDEX", "messages_unindexed"),
    ("TRIGGER", "messages_changed"),
    ("TRIGGER", "messages_terms"),
    ("TRIGGER", "messages_dropped"),
)
"""What `_RECALL` creates; when one is missing, all of it is built anew."""

_UNINDEXED = """
SELECT thread_id, idx, message FROM messages INDEXED BY messages_unindexed
WHERE archived_at IS NOT NULL AND length IS NULL LIMIT ?
"""
"""Archived messages of any thread without recall terms (what opening a file indexes)."""

_REMEDY = "once the file is a writable progsum store that no stuck process holds locked"

_STATEMENTS = Statements(
    threads=(
        "SELECT thread_id FROM {states} UNION "
        "SELECT DISTINCT thread_id FROM {messages} WHERE archived_at IS NOT NULL ORDER BY 1"
    ),
    save_cleared="INSERT OR REPLACE INTO {cleared} (thread_id, number, mark) VALUES (?, ?, ?)",
    ranked=(
        "SELECT m.idx, m.length, m.terms FROM {recall} CROSS JOIN {messages} AS m "
        "ON m.doc = {recall}.rowid WHERE {recall} MATCH ? AND m.thread_id = ? "
        "AND m.archived_at IS NOT NULL AND m.length IS NOT NULL AND ({within})"
    ),
    unranked=(
        "SELECT idx, length, terms, message FROM {messages} INDEXED BY messages_unindexed "
        "WHERE thread_id = ? AND archived_at IS NOT NULL AND length IS NULL AND ({within})"
    ),
    ranked_stats=(
        "SELECT count(*), coalesce(sum(length), 0) FROM {messages} "
        "INDEXED BY messages_recalled WHERE thread_id = ? AND archived_at IS NOT NULL "
        "AND length IS NOT NULL AND ({within})"
    ),
    unindexed=(
        "SELECT thread_id, idx, message FROM {messages} INDEXED BY messages_unindexed "
        "WHERE thread_id = ? AND archived_at IS NOT NULL AND length IS NULL ORDER BY idx LIMIT ?"
    ),
    index_terms=(
        "UPDATE {messages} SET terms = ?, length = ?, doc = coalesce(doc, "
        "(SELECT ifnull(max(doc), 0) + 1 FROM {messages} WHERE doc IS NOT NULL)) "
        "WHERE thread_id = ? AND idx = ?"
    ),
)
"""SQLite's own statements: the thread list, an upsert of a cleared mark, and recall's (the FTS
table first, then its rows: ``CROSS JOIN`` fixes that order; ``INDEXED BY`` the small indexes)."""


def _terms_query(terms: Sequence[str]) -> str:
    """An FTS5 query for any of ``terms``: each a quoted string (one token: see `_RECALL`)."""
    quoted = ('"' + term.replace('"', '""') + '"' for term in terms)
    return " OR ".join(quoted)


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
    terms_query=_terms_query,
)
"""SQLite's spelling: plain table names, ``?``, times as ISO text, FTS5 queries."""


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
        if not isinstance(path, str | os.PathLike):
            raise ConfigError(
                f"path={path!r} is not a file path; pass a str or pathlib.Path, e.g. "
                "SQLiteStore('agents.db')"
            )
        self.path = Path(path)
        self.where = str(self.path)
        self.timeout = timeout
        self._files = None if str(path) in ("", ":memory:") else FileLocks(self.path)
        self._local = _Local()
        self._opened: list[tuple[int, sqlite3.Connection]] = []
        self._lock = threading.Lock()
        with self._errors("open"):
            connection = self._connection()
            found = connection.execute("PRAGMA user_version").fetchone()[0]
            if found != STORE_FORMAT:
                self._upgrade()
            if not _has_recall(connection):
                self._add_recall()

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
            for statement in _HISTORY_TABLES.split(";"):
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {STORE_FORMAT}")

    def _add_recall(self) -> None:
        """Add recall's columns, FTS table and triggers, and index every archived message.

        One transaction, re-checked in it. A file that has some of it (altered by hand) has all
        of it built anew: the terms are computed again from the messages.
        """
        with self._transaction() as db:
            if _has_recall(db):
                return  # another process added it meanwhile
            columns = {row[1] for row in db.execute("PRAGMA table_info(messages)")}
            for kind, name in _RECALL_OBJECTS[::-1]:  # the triggers first: they name the table
                db.execute(f"DROP {kind} IF EXISTS {name}")
            missing = [name for name in _RECALL_COLUMNS if name not in columns]
            for name in missing:
                db.execute(f"ALTER TABLE messages ADD COLUMN {name} {_RECALL_COLUMNS[name]}")
            if len(missing) < len(_RECALL_COLUMNS):
                db.execute("UPDATE messages SET terms = NULL, length = NULL, doc = NULL")
            for statement in _RECALL:
                db.execute(statement)
            while rows := db.execute(_UNINDEXED, (INDEX_BATCH,)).fetchall():
                self._store_terms(db, rows)

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

    @contextlib.contextmanager
    def _fleet_queue(self, thread_id: str, wait: float) -> Iterator[bool]:
        """Hold ``thread_id``'s byte of the lock file beside the database (other processes)."""
        if self._files is None:
            yield False
            return
        with self._files.holding(thread_id, wait) as had:
            yield had

    def close(self) -> None:
        """Close the connections this process opened; the store reopens them when used again."""
        if self._files is not None:
            self._files.close()
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


def _has_recall(db: sqlite3.Connection) -> bool:
    """Whether the file has every table, index and trigger of recall's (`_RECALL`)."""
    names = [name for _, name in _RECALL_OBJECTS]
    marks = ", ".join("?" * len(names))
    query = f"SELECT count(*) FROM sqlite_master WHERE name IN ({marks})"  # noqa: S608 - placeholders only
    (count,) = db.execute(query, names).fetchone()
    return bool(count == len(names))
