"""Pytest fixtures over `progsum.testing.postgres`: one throwaway server, one database per session.

Each test starts from empty progsum tables; without the PostgreSQL binaries the tests fail, naming
the package to install (they are never skipped: CI installs ``postgresql``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from progsum.testing.postgres import PostgresServer, running_server

__all__ = ["PostgresServer", "postgres_server", "postgres_url"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server for the whole session."""
    with running_server() as server:
        yield server


@pytest.fixture(scope="session")
def _shared_database(postgres_server: PostgresServer) -> str:
    """One database for the store tests, emptied before each (creating one takes ~1 s)."""
    return postgres_server.database()


@pytest.fixture
def postgres_url(_shared_database: str) -> str:
    """The URL of a database with no progsum rows (and no tables before the first store opens).

    Tests that need a database never migrated (schema, migrations) call
    ``postgres_server.database()`` instead.
    """
    import psycopg  # noqa: PLC0415 - only store tests need the postgres extra

    with psycopg.connect(_shared_database, autocommit=True) as db:
        db.execute(_EMPTY)
    return _shared_database


_EMPTY = b"""
DO $$ BEGIN
  IF to_regclass('progsum_messages') IS NOT NULL THEN
    TRUNCATE progsum_messages, progsum_events, progsum_states;
  END IF;
END $$;
"""
