"""``progsum store init URL``: create or upgrade a store's tables before a fleet starts.

A ``postgresql://`` (or ``postgres://``) URL runs the PostgreSQL migrations
(`progsum.store._postgres.init`, safe from many workers at once); anything else is a SQLite file,
created if needed. Either way the command prints one line: what it applied, or that the store was
up to date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from progsum.store._postgres_schema import MIGRATIONS, SCHEMA_VERSION
from progsum.store._sqlite import STORE_FORMAT, SQLiteStore

__all__ = ["add_store_command"]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def add_store_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``progsum store init URL`` on the command line's subcommands."""
    store = commands.add_parser(
        "store",
        help="set up a durable store (SQLite file or PostgreSQL database)",
        description="Set up a durable store for saved states and the archive.",
    )
    actions = store.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = actions.add_parser(
        "init",
        help="create or upgrade progsum's tables",
        description="Create or upgrade progsum's tables: a PostgreSQL database "
        "(postgresql://user:password@host:5432/dbname; safe to run from many workers at once) "
        "or a SQLite file (a path).",
    )
    init.add_argument("url", metavar="URL", help="a postgresql:// URL or a SQLite file path")
    init.set_defaults(run=_init)


def _init(args: argparse.Namespace) -> int:
    url: str = args.url
    if url.startswith(_POSTGRES_SCHEMES):
        from progsum.store._postgres import init  # noqa: PLC0415 - needs the postgres extra

        applied = init(url)
        done = ", ".join(f"{v} ({MIGRATIONS[v - 1][0]})" for v in applied)
        plural = "s" if len(applied) > 1 else ""
        what = f"applied migration{plural} {done}" if applied else "already up to date"
        sys.stdout.write(f"progsum store: {what}; schema version {SCHEMA_VERSION}\n")
        return 0
    path = Path(url.removeprefix("sqlite:///"))
    SQLiteStore(path).close()
    sys.stdout.write(f"progsum store: {path} is a SQLite store of format {STORE_FORMAT}\n")
    return 0
