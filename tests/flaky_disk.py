"""A SQLite file whose writes fail at random, as intermittent I/O errors do: a fault injector.

SQLite's own authorizer, installed on every connection opened while `flaky_sqlite` is active (at
the `sqlite3.connect` boundary), refuses COMMITs and inserts at `FlakyWrites.rate`; reads and
ROLLBACKs always pass. Statements are not cached, so each one is judged (the pattern of
tests/test_store_soak.py). Used by tests/test_window_archive.py and bench/windows.py.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
from collections.abc import Iterator
from typing import Any

__all__ = ["FlakyWrites", "flaky_sqlite"]


class FlakyWrites:
    """SQLite's authorizer refusing COMMITs and inserts at ``rate`` (0: none), as I/O errors do."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)  # noqa: S311 - fault timings, not secrets
        self.rate = 0.0
        self.refused = 0

    def authorize(self, action: int, arg1: str | None, *_: str | None) -> int:
        """Refuse a write at the current rate (reads and ROLLBACKs always pass)."""
        writes = action == sqlite3.SQLITE_INSERT or (
            action == sqlite3.SQLITE_TRANSACTION and arg1 == "COMMIT"
        )
        if not writes or self.rng.random() >= self.rate:
            return sqlite3.SQLITE_OK
        self.refused += 1
        return sqlite3.SQLITE_DENY


@contextlib.contextmanager
def flaky_sqlite(seed: int) -> Iterator[FlakyWrites]:
    """Every SQLite connection opened inside refuses writes at the yielded object's rate."""
    faults = FlakyWrites(seed)
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = real(*args, **{**kwargs, "cached_statements": 0})
        connection.set_authorizer(faults.authorize)
        return connection

    sqlite3.connect = connect  # type: ignore[assignment]  # the boundary, while inside
    try:
        yield faults
    finally:
        sqlite3.connect = real
