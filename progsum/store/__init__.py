"""Where conversations are kept: archives of folded messages and stores of whole states.

`MemoryArchive` (in memory), `SQLiteStore` (one file, any number of processes) and
`PostgresStore` (a fleet; needs the ``postgres`` extra, imported on first use).
"""

import typing as _typing

from progsum.store._archive import Archive, ArchivedMessage, MemoryArchive
from progsum.store._sqlite import SQLiteStore

if _typing.TYPE_CHECKING:
    from progsum.store._postgres import PostgresStore

__all__ = ["Archive", "ArchivedMessage", "MemoryArchive", "PostgresStore", "SQLiteStore"]


def __getattr__(name: str) -> _typing.Any:  # noqa: ANN401 - a module attribute
    if name == "PostgresStore":
        from progsum.store._postgres import PostgresStore  # noqa: PLC0415 - the postgres extra

        return PostgresStore
    raise AttributeError(f"module 'progsum.store' has no attribute {name!r}")
