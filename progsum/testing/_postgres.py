"""The implementation of `progsum.testing.postgres` (see its docstring)."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

__all__ = ["ROLE", "PostgresServer", "running_server"]

ROLE = "progsum"
"""The application role the stores connect as (LOGIN, CREATEDB-less, not a superuser)."""


def _bin_dir() -> Path:
    configured = os.environ.get("PROGSUM_PG_BIN")
    if configured:
        return Path(configured)
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    message = (
        "the PostgreSQL tests need the server binaries: apt-get install -y postgresql "
        "(or set PROGSUM_PG_BIN to the directory holding initdb and pg_ctl)"
    )
    raise RuntimeError(message)


@dataclass
class PostgresServer:
    """A running throwaway cluster; `database` makes a fresh database and returns its URL."""

    directory: Path
    bin_dir: Path
    _names: Iterator[int] = field(default_factory=itertools.count)

    @property
    def socket_dir(self) -> str:
        """The directory of the server's Unix socket (libpq's ``host``)."""
        return str(self.directory)

    def url(self, dbname: str, user: str = ROLE) -> str:
        """A connection URL for ``dbname`` over the Unix socket."""
        return f"postgresql://{user}@/{dbname}?host={self.socket_dir}"

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        """A superuser connection to the maintenance database, in autocommit mode."""
        import psycopg  # noqa: PLC0415 - the postgres extra, needed only to connect

        return psycopg.connect(self.url("postgres", "postgres"), autocommit=True)

    def database(self) -> str:
        """Create an empty database owned by the application role; return its URL."""
        name = f"t{os.getpid()}_{next(self._names)}"
        with self.admin() as admin:
            admin.execute(f'CREATE DATABASE "{name}" OWNER {ROLE}')
        return self.url(name)

    def restart(self, mode: str = "fast") -> None:
        """Restart the server, as ``pg_ctl restart -m MODE`` does.

        ``immediate`` stops without a shutdown (a crash, then recovery on start); ``fast`` rolls
        back open transactions and ends every session first.
        """
        if mode not in {"immediate", "fast", "smart"}:
            message = f"mode={mode!r} is not a pg_ctl shutdown mode; use 'immediate' or 'fast'"
            raise ValueError(message)
        pg_ctl = str(self.bin_dir / "pg_ctl")
        data, log = str(self.directory / "data"), str(self.directory / "log")
        command = [pg_ctl, "-D", data, "-l", log, "-w", "-m", mode, "restart"]
        subprocess.run(_as_server_user(command), check=True, capture_output=True)  # noqa: S603 - fixed arguments

    def terminate(self, user: str = ROLE, *, running: str | None = None) -> int:
        """End every session of ``user`` (``pg_terminate_backend``); return how many there were.

        With ``running``, only the sessions executing that statement now (e.g. ``"COMMIT"``).
        """
        query = (
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE usename = %s AND pid <> pg_backend_pid() "
            "AND (%s::text IS NULL OR (state = 'active' AND query = %s))"
        )
        with self.admin() as admin:
            row = admin.execute(query, (user, running, running)).fetchone()
        return int(str(row[0])) if row is not None else 0

    def drop(self, url: str) -> None:
        """Drop the database of ``url``, closing whatever is still connected to it."""
        import psycopg  # noqa: PLC0415 - the postgres extra, needed only to connect

        name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
        with self.admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _as_server_user(command: list[str]) -> list[str]:
    """``command`` run as the ``postgres`` user when this process is root, else as it is."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextlib.contextmanager
def running_server(*, durable: bool = False) -> Iterator[PostgresServer]:
    """Start a cluster in a temporary directory; stop and delete it afterwards.

    Args:
        durable: Flush commits to disk (``fsync``), as a production server does; tests skip it.
    """
    bin_dir = _bin_dir()
    directory = Path(tempfile.mkdtemp(prefix="progsum-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    data = directory / "data"
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-N"]
    subprocess.run(_as_server_user(initdb), check=True, capture_output=True)  # noqa: S603 - fixed arguments
    options = f"-c listen_addresses='' -k {directory} -c max_connections=200"
    if not durable:
        options += " -c fsync=off"
    log = str(directory / "log")
    start = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", log, "-w", "-o", options, "start"]
    subprocess.run(_as_server_user(start), check=True, capture_output=True)  # noqa: S603 - fixed arguments
    server = PostgresServer(directory, bin_dir)
    try:
        with server.admin() as admin:
            admin.execute(f"CREATE ROLE {ROLE} LOGIN")
        yield server
    finally:
        subprocess.run(  # noqa: S603 - fixed arguments
            _as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(directory, ignore_errors=True)
