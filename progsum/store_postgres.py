"""Public import path of `PostgresStore` (defined in `progsum.store._postgres`)."""

from progsum.store._postgres import PostgresStore

__all__ = ["PostgresStore"]
