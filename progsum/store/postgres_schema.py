"""The PostgreSQL store's tables, and the versioned migrations that create and upgrade them.

progsum owns its schema: `migrate` applies every migration a database lacks, in order, each in
the same transaction as the row that records it in ``progsum_migrations``. A transaction-level
advisory lock makes it safe for many workers to run at once (the first applies, the others wait,
then find nothing left to do). ``progsum store init URL`` and `progsum.store.postgres.PostgresStore`
(unless ``migrate=False``) both call it. A database migrated by a newer progsum is refused, never
misread.

The tables mirror the SQLite store's: one row per log message (archived or not), one per
compaction event, one per saved state, and one per recent save in the save ledger (what tells
whether a save whose answer was lost committed: `progsum.store.outcome`). Every read is of one
thread, through its primary-key range, so its cost follows the thread's size, not the
database's; docs/fleet.md says why recall search uses no trigram or full-text index (measured:
at a million messages their posting lists, which span every thread, made it 12 times slower).
No extension is needed, so a role that owns its database may migrate it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from progsum.errors import ArchiveError

if TYPE_CHECKING:
    import psycopg

__all__ = ["LOCK_CLASS", "MIGRATIONS", "SCHEMA_VERSION", "migrate", "schema_version"]

LOCK_CLASS: Final = 0x70726F67
"""First key of progsum's advisory locks ("prog"), so they never collide with an application's."""

_MIGRATION_LOCK: Final = 0
"""Second key of the lock that serialises migrations (thread locks use the thread's hash)."""

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
)
"""(name, SQL) of each migration; version N is ``MIGRATIONS[N - 1]``. Append, never edit."""

SCHEMA_VERSION: Final = len(MIGRATIONS)
"""The schema version this progsum reads and writes."""

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
            connection.execute(
                "INSERT INTO progsum_migrations (version, name) VALUES (%s, %s)", (version, name)
            )
            applied.append(version)
        return applied
