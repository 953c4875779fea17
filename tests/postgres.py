"""Pytest fixtures over `progsum.testing.postgres`: one throwaway server, one database per session.

Each test starts from empty progsum tables; without the PostgreSQL binaries the tests fail, naming
the package to install (they are never skipped: CI installs ``postgresql``). psycopg is imported
by the fixture that connects, so loading this plugin needs no postgres extra (tests/integrations
runs without it).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from progsum.testing.postgres import ROLE, PostgresServer, running_server

__all__ = ["AnswerLosingProxy", "PostgresServer", "postgres_server", "postgres_url"]


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
  IF to_regclass('progsum_cleared') IS NOT NULL THEN
    TRUNCATE progsum_cleared;
  END IF;
  IF to_regclass('progsum_saves') IS NOT NULL THEN
    TRUNCATE progsum_saves;
  END IF;
END $$;
"""


# -- a TCP proxy that loses answers ----------------------------------------------------------------


def _commit_query(kind: bytes, body: bytes) -> bool:
    """Whether a frontend message runs ``COMMIT`` (a simple Query, or a Parse of one)."""
    if kind == b"Q":
        query = body.split(b"\0", 1)[0]
    elif kind == b"P":  # statement name, then the query
        parts = body.split(b"\0", 2)
        query = parts[1] if len(parts) > 1 else b""
    else:
        return False
    return query.strip().rstrip(b";").upper() == b"COMMIT"


class _Messages:
    """Splits one direction of the PostgreSQL wire protocol into whole messages.

    Every message is a type byte and a length (the client's first one, the startup packet, has no
    type byte).
    """

    def __init__(self, *, untyped_first: bool) -> None:
        self.buffer = b""
        self.untyped = untyped_first

    def feed(self, data: bytes) -> list[tuple[bytes, bytes, bytes]]:
        """The whole messages now buffered: ``(type, body, raw bytes)`` each."""
        self.buffer += data
        found: list[tuple[bytes, bytes, bytes]] = []
        while True:
            head = 0 if self.untyped else 1
            if len(self.buffer) < head + 4:
                return found
            length = int.from_bytes(self.buffer[head : head + 4], "big")
            end = head + length
            if len(self.buffer) < end:
                return found
            raw, self.buffer = self.buffer[:end], self.buffer[end:]
            found.append((raw[:head], raw[head + 4 :], raw))
            self.untyped = False


class AnswerLosingProxy:
    """A TCP proxy on 127.0.0.1 in front of the test server's Unix socket that cuts connections.

    ``lose_commit_answer()`` arms it: the next transaction's ``COMMIT`` reaches the server, the
    proxy waits until the server reports it committed, then closes both sides without passing the
    answer on (the client sees the connection drop with the outcome unknown).
    ``drop_commit()`` instead closes the connection before the ``COMMIT`` reaches the server (it
    rolls back). ``refusing`` makes it close every new connection at once (a server that cannot
    be reached). Only loopback: the proxy listens on 127.0.0.1 and connects to a Unix socket.
    """

    def __init__(self, server: PostgresServer) -> None:
        self.target = str(Path(server.socket_dir) / ".s.PGSQL.5432")
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.refusing = False
        self.cuts = 0
        """Connections cut so far."""
        self._armed: str | None = None
        self._then_refuse = False
        self._lock = threading.Lock()
        self._cut = threading.Event()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, dbname_url: str) -> str:
        """``dbname_url``'s database, reached through the proxy (TCP, no SSL, no GSS)."""
        from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415 - the postgres extra

        name = conninfo_to_dict(dbname_url)["dbname"]
        return (
            f"postgresql://{ROLE}@127.0.0.1:{self.port}/{name}?sslmode=disable&gssencmode=disable"
        )

    def lose_commit_answer(self, *, then_refuse: bool = False) -> threading.Event:
        """Cut the next connection whose COMMIT the server completes, before the answer.

        With ``then_refuse``, every other open connection is cut too, and every new one refused
        until ``refusing`` is set back to False. The event is set once the cut is made.
        """
        return self._arm("after", then_refuse=then_refuse)

    def drop_commit(self, *, then_refuse: bool = False) -> threading.Event:
        """Cut the next connection that sends COMMIT, before the server receives it."""
        return self._arm("before", then_refuse=then_refuse)

    def _arm(self, mode: str, *, then_refuse: bool) -> threading.Event:
        with self._lock:
            self._armed, self._cut = mode, threading.Event()
            self._then_refuse = then_refuse
            return self._cut

    def close(self) -> None:
        """Stop listening and close every proxied connection."""
        self.listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.target)
            with self._lock:
                self._open = [sock for sock in self._open if sock.fileno() != -1]
                self._open += [client, upstream]
            link = _Link(self, client, upstream)
            threading.Thread(target=link.forward, daemon=True).start()
            threading.Thread(target=link.backward, daemon=True).start()

    def _claim(self, mode: str) -> bool:
        """Take the armed cut of ``mode`` for the calling connection (one connection gets it)."""
        with self._lock:
            if self._armed != mode:
                return False
            self._armed = None
            return True

    def _done(self, link: _Link) -> None:
        if self._then_refuse:  # the server is unreachable now: no connection of it works
            self.refusing = True
            with self._lock:
                for sock in self._open:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
        link.close()
        with self._lock:
            self.cuts += 1
        self._cut.set()


class _Link:
    """One proxied connection: client bytes forward, server bytes backward, cut on demand."""

    def __init__(
        self, proxy: AnswerLosingProxy, client: socket.socket, upstream: socket.socket
    ) -> None:
        self.proxy, self.client, self.upstream = proxy, client, upstream
        self.doomed = False
        """This connection sent the COMMIT whose answer is to be lost."""

    def close(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def forward(self) -> None:
        messages = _Messages(untyped_first=True)
        with contextlib.suppress(OSError):
            while data := self.client.recv(65536):
                for kind, body, raw in messages.feed(data):
                    if _commit_query(kind, body):
                        if self.proxy._claim("before"):
                            self.proxy._done(self)
                            return
                        if self.proxy._claim("after"):
                            self.doomed = True
                    self.upstream.sendall(raw)
        self.close()

    def backward(self) -> None:
        messages = _Messages(untyped_first=False)
        with contextlib.suppress(OSError):
            while data := self.upstream.recv(65536):
                for kind, body, raw in messages.feed(data):
                    if self.doomed and kind == b"C" and body.rstrip(b"\0") == b"COMMIT":
                        self.proxy._done(self)
                        return
                    self.client.sendall(raw)
        self.close()
