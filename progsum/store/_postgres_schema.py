"""The PostgreSQL store's tables, and the versioned migrations that create and upgrade them.

progsum owns its schema: `migrate` applies every migration a database lacks, in order, each in
the same transaction as the row that records it in ``progsum_migrations``. A transaction-level
advisory lock makes it safe for many workers to run at once (the first applies, the others wait,
then find nothing left to do). ``progsum store init URL`` and
`progsum.store._postgres.PostgresStore`
(unless ``migrate=False``) both call it. A database migrated by a newer progsum is refused, never
misread.

The tables mirror the SQLite store's: one row per log message (archived or not), one per
compaction event, one per saved state, and one per recent save in the save ledger (what tells
whether a save whose answer was lost committed: `progsum.store._outcome`). Every read is of one
thread, through its primary-key range, so its cost follows the thread's size, not the
database's; docs/fleet.md says why the ``recall`` tool's substring search uses no trigram or
full-text index (measured: at a million messages their posting lists, which span every thread,
made it 12 times slower). No extension is needed, so a role that owns its database may migrate
it.

Recall's ranking (migration 4) is a term lookup, which a GIN index answers: an archived message's
row holds its recall terms (``terms``, space-joined, and ``length``, their count, both computed
in Python: `progsum.store._rows.indexed`), and ``lexemes`` is the ``tsvector`` of exactly those
terms (``array_to_tsvector``: no parser, no dictionary, so a quoted ``tsquery`` lexeme finds
exactly the messages that hold it). A trigger clears the terms of a row whose message changes.
``lexemes`` is NULL for a row without terms and for terms too long for a ``tsvector`` (its
lexemes may hold at most 1 MB; `MAX_LEXEME_BYTES`): the store reads those rows' terms from the
row instead. Migration 4 computes the terms of every archived message already stored, in the
migration's transaction (`index_archived`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from progsum.errors import ArchiveError
from progsum.store._rows import indexed

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "INDEX_BATCH",
    "LOCK_CLASS",
    "MAX_LEXEME_BYTES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "index_archived",
    "migrate",
    "schema_version",
]

LOCK_CLASS: Final = 0x70726F67
"""First key of progsum's advisory locks ("prog"), so they never collide with an application's."""

_MIGRATION_LOCK: Final = 0
"""Second key of the lock that serialises migrations (thread locks use the thread's hash)."""

MAX_LEXEME_BYTES: Final = 1_048_575
"""Most bytes of lexemes a ``tsvector`` holds (PostgreSQL's MAXSTRPOS). ``array_to_tsvector``
does not check it (beyond it, the vector is corrupt), so ``lexemes`` stays NULL for longer terms
text (its distinct terms are never longer than the text)."""

MIGRATIONS: Final[tuple[tuple[str, str], ...]] = (
    (
        "messages, events and states",
        """
        CREATE TABLE progsum_messages (
            thread_id   text        NOT NULL,
            idx         integer     NOT NULL,
            message     text        NOT NULL,
            archived_at timestamptz,
            event       integer,
            PRIMARY KEY (thread_id, idx)
        );
        CREATE INDEX progsum_messages_by_event ON progsum_messages (thread_id, event)
            WHERE event IS NOT NULL;
        CREATE TABLE progsum_events (
            thread_id text    NOT NULL,
            number    integer NOT NULL,
            event     text    NOT NULL,
            PRIMARY KEY (thread_id, number)
        );
        CREATE TABLE progsum_states (
            thread_id text        PRIMARY KEY,
            version   integer     NOT NULL,
            length    integer     NOT NULL,
            events    integer     NOT NULL,
            state     text        NOT NULL,
            saved_at  timestamptz NOT NULL
        );
        """,
    ),
    (
        "cleared marks in rows of their own",
        """
        CREATE TABLE progsum_cleared (
            thread_id text    NOT NULL,
            number    integer NOT NULL,
            mark      text    NOT NULL,
            PRIMARY KEY (thread_id, number)
        );
        ALTER TABLE progsum_states ADD COLUMN cleared integer;
        """,
    ),
    (
        "a ledger of saves",
        """
        CREATE TABLE progsum_saves (
            thread_id text    NOT NULL,
            version   integer NOT NULL,
            length    integer NOT NULL,
            token     text    NOT NULL,
            PRIMARY KEY (thread_id, version)
        );
        """,
    ),
    (
        "recall's terms of archived messages and their GIN index",
        f"""
        ALTER TABLE progsum_messages ADD COLUMN terms text, ADD COLUMN length integer;
        ALTER TABLE progsum_messages ADD COLUMN lexemes tsvector GENERATED ALWAYS AS (
            CASE WHEN octet_length(terms) <= {MAX_LEXEME_BYTES}
            THEN array_to_tsvector(string_to_array(terms, ' ')) END
        ) STORED;
        CREATE INDEX progsum_messages_lexemes ON progsum_messages USING gin (lexemes)
            WHERE archived_at IS NOT NULL;
        CREATE INDEX progsum_messages_recalled ON progsum_messages (thread_id, idx)
            INCLUDE (length) WHERE archived_at IS NOT NULL AND length IS NOT NULL;
        CREATE INDEX progsum_messages_unranked ON progsum_messages (thread_id, idx)
            WHERE archived_at IS NOT NULL AND lexemes IS NULL;
        CREATE FUNCTION progsum_message_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.terms := NULL; NEW.length := NULL; RETURN NEW; END $$;
        CREATE TRIGGER progsum_message_changed BEFORE UPDATE OF message ON progsum_messages
            FOR EACH ROW WHEN (OLD.message IS DISTINCT FROM NEW.message)
            EXECUTE FUNCTION progsum_message_changed();
        """,
    ),
    (
        "the summary's tombstones and the exact-value ledger in rows of their own",
        """
        CREATE TABLE progsum_retired (
            thread_id text    NOT NULL,
            number    integer NOT NULL,
            tombstone text    NOT NULL,
            PRIMARY KEY (thread_id, number)
        );
        CREATE TABLE progsum_ledger (
            thread_id text    NOT NULL,
            number    integer NOT NULL,
            entry     text    NOT NULL,
            PRIMARY KEY (thread_id, number)
        );
        ALTER TABLE progsum_states ADD COLUMN retired integer, ADD COLUMN ledger integer;
        """,
    ),
)
"""(name, SQL) of each migration; version N is ``MIGRATIONS[N - 1]``. Append, never edit."""

SCHEMA_VERSION: Final = len(MIGRATIONS)
"""The schema version this progsum reads and writes."""

INDEX_BATCH: Final = 500
"""Archived messages `index_archived` reads per statement."""

_UNINDEXED = """
SELECT thread_id, idx, message FROM progsum_messages
WHERE archived_at IS NOT NULL AND lexemes IS NULL AND length IS NULL LIMIT %s
"""
_INDEX_TERMS = (
    "UPDATE progsum_messages SET terms = %s, length = %s WHERE thread_id = %s AND idx = %s"
)

_LEDGER = """
CREATE TABLE IF NOT EXISTS progsum_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


def schema_version(connection: psycopg.Connection[tuple[object, ...]]) -> int:
    """The database's progsum schema version: 0 when it was never migrated."""
    row = connection.execute("SELECT to_regclass('progsum_migrations') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return 0
    found = connection.execute("SELECT max(version) FROM progsum_migrations").fetchone()
    version = found[0] if found is not None else None
    return version if isinstance(version, int) else 0


def migrate(connection: psycopg.Connection[tuple[object, ...]], where: str) -> list[int]:
    """Apply the migrations the database lacks, in one transaction; return their versions.

    Args:
        connection: An open connection, outside a transaction.
        where: The database, as error messages name it.

    Raises:
        ArchiveError: the database was migrated by a newer progsum.
        psycopg.Error: a migration failed; the database is as it was.
    """
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, _MIGRATION_LOCK))
        connection.execute(_LEDGER)
        found = schema_version(connection)
        if found > SCHEMA_VERSION:
            raise ArchiveError(
                f"{where} holds a progsum store of schema version {found}, newer than this "
                f"version of progsum reads ({SCHEMA_VERSION}); upgrade progsum to open it"
            )
        applied = []
        for version in range(found + 1, SCHEMA_VERSION + 1):
            name, sql = MIGRATIONS[version - 1]
            connection.execute(sql.encode())  # several statements: the simple query protocol
            after = _AFTER.get(version)
            if after is not None:
                after(connection)
            connection.execute(
                "INSERT INTO progsum_migrations (version, name) VALUES (%s, %s)", (version, name)
            )
            applied.append(version)
        return applied


def index_archived(connection: psycopg.Connection[tuple[object, ...]]) -> None:
    """Store the recall terms of every archived message that has none (migration 4's data).

    Run in the migration's transaction, whose ``ALTER TABLE`` keeps every writer out until it
    commits, so no message changes under it.
    """
    while rows := connection.execute(_UNINDEXED, (INDEX_BATCH,)).fetchall():
        params = [(*indexed(str(text)), thread, idx) for thread, idx, text in rows]
        with connection.cursor() as cursor:
            cursor.executemany(_INDEX_TERMS, params)


_AFTER: Final[dict[int, Callable[[psycopg.Connection[tuple[object, ...]]], None]]] = {
    4: index_archived,
}
"""What a migration does in Python after its SQL, in its transaction, by version."""
