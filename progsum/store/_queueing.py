"""Writers of one thread queue: `update` holds a lock per thread id from its load to its save.

`update` is optimistic (a save against a stale version is refused, `ConflictError`) and stays
correct without any lock; but writers racing on one thread would each load, change and save, and
all but one would apply their change again, so a busy thread saw updates give up after their
attempts (and changes, such as a summarizer call, run several times). Holding a lock per thread
id across the load, the change and the save makes them take turns instead:

* `ThreadLocks`: threads of one process, on any store object of the same database, queue on a
  `threading.Lock` per thread id;
* `FileLocks` (SQLite): processes on one file queue on a byte of a lock file beside it
  (``fcntl.lockf``, released by the system when a process dies);
* PostgreSQL takes a session advisory lock on a connection of its pool
  (`progsum.store._postgres`), so writers on every machine of a fleet queue.

A lock is an optimisation, never a condition of correctness: when one cannot be had within the
store's timeout (or at all: no spare connection, a read-only directory, no ``fcntl``), the update
goes on optimistically and the versions still refuse a stale save.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

__all__ = ["FileLocks", "ThreadLocks", "poll"]

_POLL_FIRST = 0.001
"""Seconds between the first tries of a lock that is busy; doubling up to `_POLL_LAST`."""
_POLL_LAST = 0.02


def poll(attempt: int) -> float:
    """Seconds to wait before the next try of a busy lock (1 ms, doubling, at most 20 ms)."""
    return min(_POLL_LAST, _POLL_FIRST * (1 << min(attempt, 16)))


class ThreadLocks:
    """One lock per ``(database, thread id)``, shared by every store object of this process."""

    _guard = threading.Lock()
    _held: dict[tuple[str, str], tuple[threading.Lock, int]] = {}  # noqa: RUF012 - the registry
    """The lock of each key and how many callers hold or wait for it."""

    @classmethod
    @contextlib.contextmanager
    def holding(cls, where: str, thread_id: str, timeout: float) -> Iterator[bool]:
        """Hold the lock of ``thread_id`` in ``where``; yields whether it was had in time."""
        key = (where, thread_id)
        with cls._guard:
            lock, users = cls._held.get(key, (threading.Lock(), 0))
            cls._held[key] = (lock, users + 1)
        had = lock.acquire(timeout=timeout)
        try:
            yield had
        finally:
            if had:
                lock.release()
            with cls._guard:
                lock, users = cls._held[key]
                if users == 1:
                    del cls._held[key]
                else:
                    cls._held[key] = (lock, users - 1)


class FileLocks:
    """Byte-range locks on a file beside a SQLite database, one byte per thread id.

    POSIX record locks belong to the process (threads queue on `ThreadLocks` first) and are
    released when the process closes any descriptor of the file; so each store object keeps one
    descriptor per process, opened on first use, and two store objects of one process on the
    same file may release each other's locks early (their updates then go on optimistically).
    """

    def __init__(self, database: Path) -> None:
        self.path = database.with_name(database.name + "-progsum-locks")
        self._fd: int | None = None
        self._pid = 0
        self._guard = threading.Lock()

    def _descriptor(self) -> int | None:
        """This process's descriptor of the lock file (None: locks are not available here)."""
        try:
            import fcntl  # noqa: F401, PLC0415 - POSIX only; elsewhere updates stay optimistic
        except ImportError:
            return None
        with self._guard:
            if self._fd is None or self._pid != os.getpid():
                try:
                    self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                except OSError:
                    return None
                self._pid = os.getpid()
            return self._fd

    @contextlib.contextmanager
    def holding(self, thread_id: str, timeout: float) -> Iterator[bool]:
        """Hold ``thread_id``'s byte; yields whether it was had within ``timeout`` seconds."""
        fd = self._descriptor()
        if fd is None:
            yield False
            return
        import fcntl  # noqa: PLC0415 - found by _descriptor

        offset = zlib.crc32(thread_id.encode("utf-8", "surrogatepass"))
        deadline = time.monotonic() + timeout
        had = False
        attempt = 0
        while not had:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
                had = True
            except OSError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(poll(attempt))
                attempt += 1
        try:
            yield had
        finally:
            if had:
                with contextlib.suppress(OSError):
                    fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)

    def close(self) -> None:
        """Close this process's descriptor (releasing its locks); reopened when used again."""
        with self._guard:
            fd, self._fd = self._fd, None
            if fd is not None and self._pid == os.getpid():
                with contextlib.suppress(OSError):
                    os.close(fd)
