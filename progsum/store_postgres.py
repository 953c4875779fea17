"""Public import path of `PostgresStore` (defined in `progsum.store.postgres`)."""

from progsum.store.postgres import PostgresStore

__all__ = ["PostgresStore"]
