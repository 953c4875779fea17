"""PostgresStore's own parts: migrations, ``progsum store init``, pools, dropped connections.

What both stores share is tested against both in tests/test_store.py; this file covers what only
the PostgreSQL store has, on the throwaway server of tests/postgres.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from progsum import Compactor, ConversationState, Policy, SummaryUpdate
from progsum.cli.main import main
from progsum.errors import ArchiveError, ConfigError
from progsum.judge._values import StatedValue
from progsum.store._postgres import PostgresStore, init
from progsum.store._postgres_schema import SCHEMA_VERSION
from progsum.store._rows import dump_tombstone
from progsum.store._sqlite import SQLiteStore
from progsum.summary._schema import Item, Tombstone
from progsum.testing import QueuedSummarizer
from tests.conftest import fixed_clock
from tests.conversations import trip_planning
from tests.postgres import PostgresServer
from tests.store_backends import PostgresBackend


@pytest.fixture
def fresh_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A database that was never migrated, dropped after the test."""
    url = postgres_server.database()
    yield url
    postgres_server.drop(url)


def chat(n: int, *, tag: str = "m") -> list[dict[str, Any]]:
    """``n`` alternating user/assistant messages with distinct contents."""
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{tag}{i}: " + "words " * 8}
        for i in range(n)
    ]


def tables(url: str) -> list[str]:
    """The progsum tables of the database, sorted."""
    rows = PostgresBackend(url).execute(
        "SELECT tablename FROM pg_tables WHERE tablename LIKE 'progsum%' ORDER BY 1"
    )
    return [str(name) for (name,) in rows]


# -- migrations -----------------------------------------------------------------------------------


def test_init_creates_the_tables_once(fresh_url: str) -> None:
    """`init` applies every migration on an empty database, then finds nothing left to do."""
    assert tables(fresh_url) == []
    assert init(fresh_url) == list(range(1, SCHEMA_VERSION + 1))
    assert init(fresh_url) == []
    assert tables(fresh_url) == [
        "progsum_cleared",
        "progsum_events",
        "progsum_ledger",
        "progsum_messages",
        "progsum_migrations",
        "progsum_retired",
        "progsum_saves",
        "progsum_states",
    ]


def test_many_workers_may_migrate_at_once(fresh_url: str) -> None:
    """Eight workers opening a store on an empty database at the same moment: one migrates."""
    barrier = threading.Barrier(8)
    applied: list[list[int]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            barrier.wait()
            applied.append(init(fresh_url))
            PostgresStore(fresh_url, max_size=1).close()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert sorted(applied) == [[]] * 7 + [list(range(1, SCHEMA_VERSION + 1))]
    rows = PostgresBackend(fresh_url).execute("SELECT version FROM progsum_migrations")
    assert rows == [(v,) for v in range(1, SCHEMA_VERSION + 1)]


def test_a_store_without_migrate_asks_for_init(fresh_url: str) -> None:
    """migrate=False on a database that lacks the tables names the command that creates them."""
    expected = rf"schema version 0, not {SCHEMA_VERSION}; run 'progsum store init"
    with pytest.raises(ArchiveError, match=expected):
        PostgresStore(fresh_url, migrate=False)
    init(fresh_url)
    with PostgresStore(fresh_url, migrate=False) as store:
        assert store.threads() == []


def test_a_newer_schema_is_refused(fresh_url: str) -> None:
    """A database migrated by a newer progsum is not misread or written."""
    init(fresh_url)
    PostgresBackend(fresh_url).execute(
        "INSERT INTO progsum_migrations (version, name) VALUES (%s, %s)", (99, "future")
    )
    with pytest.raises(ArchiveError, match=r"schema version 99, newer.*upgrade progsum"):
        PostgresStore(fresh_url)
    with pytest.raises(ArchiveError, match="upgrade progsum"):
        init(fresh_url)


def test_the_application_role_needs_no_superuser(fresh_url: str) -> None:
    """The store connects as a plain role that owns its database: no superuser, no extension."""
    ((superuser,),) = PostgresBackend(fresh_url).execute(
        "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
    )
    assert superuser is False
    with PostgresStore(fresh_url) as store:
        store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)
        assert store.load("t").version == 1


# -- the command line -----------------------------------------------------------------------------


def test_store_init_command(
    fresh_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``progsum store init URL`` migrates, then says the store is up to date; a path is SQLite."""
    assert main(["store", "init", fresh_url]) == 0
    assert capsys.readouterr().out == (
        "progsum store: applied migrations 1 (messages, events and states), 2 (cleared marks in "
        "rows of their own), 3 (a ledger of saves), 4 (recall's terms of archived messages and "
        "their GIN index), 5 (the summary's tombstones and the exact-value ledger in rows of "
        "their own); schema version 5\n"
    )
    assert main(["store", "init", fresh_url]) == 0
    assert capsys.readouterr().out == "progsum store: already up to date; schema version 5\n"
    path = tmp_path / "agents.db"
    assert main(["store", "init", str(path)]) == 0
    assert capsys.readouterr().out == f"progsum store: {path} is a SQLite store of format 4\n"
    with SQLiteStore(path) as store:
        assert store.threads() == []


def test_store_init_failures_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreachable server or a malformed URL: exit status 1 and one line naming the fix."""
    url = f"postgresql://agent:s3cret@/agents?host={tmp_path}"  # no server listens there
    assert main(["store", "init", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"progsum store: could not migrate the progsum tables in PostgreSQL "
        f"database 'agents' on {tmp_path}: OperationalError: "
    )
    assert err.count("\n") == 1
    assert "s3cret" not in err
    assert main(["store", "init", "postgresql:///agents?frobnicate=1"]) == 1
    assert "pass e.g. 'postgresql://user:password@host:5432/agents'" in capsys.readouterr().err
    with pytest.raises(ArchiveError, match=r"could not open the progsum tables in PostgreSQL"):
        PostgresStore(url, timeout=1)


# -- pools ----------------------------------------------------------------------------------------


def test_a_given_pool_is_borrowed_not_closed(postgres_url: str) -> None:
    """A store over an application's pool uses its connections and leaves it open."""
    with ConnectionPool(postgres_url, min_size=1, max_size=2, open=True) as pool:
        store = PostgresStore(pool)
        store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)
        store.close()
        assert not pool.closed
        assert PostgresStore(pool).load("t").version == 1
    assert repr(store).startswith("PostgresStore(PostgreSQL database ")
    with pytest.raises(ConfigError, match="neither a connection URL nor a psycopg_pool"):
        PostgresStore(42)  # type: ignore[arg-type]  # the mistake under test


def test_a_forked_child_opens_its_own_pool(postgres_url: str) -> None:
    """A store used before a fork works in the child, and the parent's sessions survive it."""
    store = PostgresStore(postgres_url)
    store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)
    pid = os.fork()
    if pid == 0:  # the child: the parent's pool is left alone, a new one is opened
        status = 1
        with contextlib.suppress(BaseException):
            store.update("t", lambda state: state.extend(chat(2, tag="child")))
            status = 0
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    stored = store.load("t")  # over the parent's own pool, still connected
    assert stored.version == 2
    assert stored.state.log[-1]["content"].startswith("child1")
    store.close()


def test_messages_never_show_the_password(postgres_url: str) -> None:
    """The store names its database by name and host; a URL's password stays out of messages."""
    with PostgresStore(postgres_url.replace("progsum@", "progsum:hunter2@")) as store:
        assert "hunter2" not in repr(store)
        with pytest.raises(ConfigError) as caught:
            store.load("missing")
        assert "hunter2" not in str(caught.value)


# -- dropped connections --------------------------------------------------------------------------


def victim_url(url: str, name: str) -> str:
    """``url`` with an application_name, so the test can find and drop that store's connections."""
    return f"{url}&application_name={name}"


def drop_when_blocked(url: str, name: str, call: Callable[[], object]) -> BaseException:
    """Run ``call`` until its connection waits on a lock the test holds, then terminate it.

    Returns what ``call`` raised (it must raise: its connection is gone mid-transaction).
    """
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            raised.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    admin = PostgresBackend(url)
    waiting = (
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND wait_event_type = 'Lock'"
    )
    deadline = time.monotonic() + 30
    while not (pids := admin.execute(waiting, (name,))):
        assert time.monotonic() < deadline, "the store's transaction never blocked"
        time.sleep(0.01)
    admin.execute("SELECT pg_terminate_backend(%s)", (pids[0][0],))
    worker.join(timeout=30)
    assert len(raised) == 1
    return raised[0]


def compacted(state: ConversationState[Any]) -> ConversationState[Any]:
    """``state`` compacted once by a fake summarizer."""
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 4)),
        summarizer=QueuedSummarizer(SummaryUpdate(add={"established_facts": ["Lisbon."]})),
        clock=fixed_clock,
    )
    return compactor.compact(state, force=True)


def test_a_connection_dropped_mid_save_is_an_archive_error(postgres_url: str) -> None:
    """Killed after its messages are written, before the state row: ArchiveError, nothing lost."""
    store = PostgresStore(victim_url(postgres_url, "victim-save"))
    old = ConversationState(trip_planning(8), thread_id="trip")
    store.save(old, expected_version=None)
    new = compacted(old).extend(chat(4, tag="late"))
    with psycopg.connect(postgres_url) as blocker:  # holds the state row: the save waits on it
        blocker.execute("SELECT 1 FROM progsum_states WHERE thread_id = 'trip' FOR UPDATE")
        error = drop_when_blocked(
            postgres_url, "victim-save", lambda: store.save(new, expected_version=1)
        )
        blocker.rollback()
    assert isinstance(error, ArchiveError)
    assert "could not save thread 'trip'" in str(error)
    assert isinstance(error.__cause__, psycopg.OperationalError)
    stored = store.load("trip")  # the pool replaced the dropped connection
    assert (stored.version, stored.state.to_dict()) == (1, old.to_dict())
    rows = PostgresBackend(postgres_url).message_rows("trip")
    assert len(rows) == len(old)
    assert not [text for _, text in rows if "late" in text]
    assert store.get("trip") == []
    assert store.save(new, expected_version=1) == 2
    assert store.load("trip").state.to_dict() == new.to_dict()
    store.close()


def test_a_connection_dropped_mid_archive_write_is_an_archive_error(postgres_url: str) -> None:
    """Killed after the segment's rows, before its event: ArchiveError, the archive unchanged."""
    store = PostgresStore(victim_url(postgres_url, "victim-put"))
    old = ConversationState(trip_planning(8), thread_id="trip")
    store.save(old, expected_version=None)
    new = compacted(old)
    event = new.events[-1]
    assert event.folded is not None
    start, end = event.folded
    segment = list(new.log[start:end])
    with psycopg.connect(postgres_url) as blocker:  # the same event, uncommitted: the put waits
        blocker.execute("INSERT INTO progsum_events VALUES ('trip', %s, '{}')", (event.number,))
        error = drop_when_blocked(
            postgres_url, "victim-put", lambda: store.put("trip", start, segment, event)
        )
        blocker.rollback()
    assert isinstance(error, ArchiveError)
    assert "could not archive messages of thread 'trip'" in str(error)
    assert store.get("trip") == []
    assert store.events("trip") == []
    assert store.load("trip").version == 1
    store.put("trip", start, segment, event)
    assert [e.message for e in store.get("trip")] == segment
    store.close()


def test_a_schema_4_state_loads_its_history_from_the_json_then_saves_it_in_rows(
    fresh_url: str,
) -> None:
    """A schema-4 state loads the same after migration 5; its next save moves its history to rows.

    Schema 4 kept the tombstones and the ledger in the state's JSON.
    """
    backend = PostgresBackend(fresh_url)
    assert init(fresh_url)
    backend.execute(  # back to schema 4, as a database of the previous progsum is
        "DROP TABLE progsum_retired, progsum_ledger; "
        "ALTER TABLE progsum_states DROP COLUMN retired, DROP COLUMN ledger; "
        "DELETE FROM progsum_migrations WHERE version = 5;"
    )
    state = compacted(ConversationState(trip_planning(8), thread_id="t"))
    assert state.summary is not None
    retiring = state.summary.model_copy(update={"retired": (tombstone(),)})
    state = state.record(
        None, summary=retiring, ledger=(StatedValue("HX-1", 1, "Ref HX-1.", rule=False),)
    )
    write_log_and_events(backend, state)
    backend.execute(
        "INSERT INTO progsum_states VALUES ('t', 3, %s, %s, %s, now(), 0)",
        (
            len(state),
            len(state.events),
            json.dumps(state.to_dict(log=False, events=False, cleared=False)),
        ),
    )
    with PostgresStore(fresh_url) as store:
        loaded = store.load("t")
        assert loaded.state.to_dict() == state.to_dict()
        more = loaded.state.extend(chat(2, tag="after"))
        assert store.save(more, expected_version=3) == 4
        assert store.load("t").state.to_dict() == more.to_dict()
    assert backend.rows("retired", "t") == [("t", 0, dump_tombstone(tombstone()))]
    assert len(backend.rows("ledger", "t")) == 1
    ((text,),) = backend.execute("SELECT state FROM progsum_states")
    assert "retired" not in json.loads(text)["summary"]
    assert "ledger" not in json.loads(text)


def write_log_and_events(backend: PostgresBackend, state: ConversationState[Any]) -> None:
    """Write thread 't''s messages and events as rows, as every schema's store writes them."""
    for i, message in enumerate(state.to_dict()["log"]):
        backend.execute(
            "INSERT INTO progsum_messages (thread_id, idx, message) VALUES ('t', %s, %s)",
            (i, json.dumps(message, ensure_ascii=False)),
        )
    for event in state.events:
        backend.execute(
            "INSERT INTO progsum_events VALUES ('t', %s, %s)",
            (event.number, event.model_dump_json()),
        )


def tombstone() -> Tombstone:
    """A retired fact."""
    item = Item(id="F9", text="Lisbon in April.", source=(1, 2))
    return Tombstone(field="established_facts", item=item, reason="moved to May", compaction=1)


def test_a_schema_1_database_is_migrated_and_its_states_read_the_same(fresh_url: str) -> None:
    """A state saved under schema 1 (events and marks in its JSON) loads after migration 2."""
    backend = PostgresBackend(fresh_url)
    backend.execute(
        "CREATE TABLE progsum_migrations (version integer PRIMARY KEY, name text NOT NULL, "
        "applied_at timestamptz NOT NULL DEFAULT now())"
    )
    backend.execute(
        "INSERT INTO progsum_migrations (version, name) VALUES (%s, %s)", (1, "schema 1")
    )
    backend.execute(
        """
        CREATE TABLE progsum_messages (thread_id text NOT NULL, idx integer NOT NULL,
            message text NOT NULL, archived_at timestamptz, event integer,
            PRIMARY KEY (thread_id, idx));
        CREATE TABLE progsum_events (thread_id text NOT NULL, number integer NOT NULL,
            event text NOT NULL, PRIMARY KEY (thread_id, number));
        CREATE TABLE progsum_states (thread_id text PRIMARY KEY, version integer NOT NULL,
            length integer NOT NULL, events integer NOT NULL, state text NOT NULL,
            saved_at timestamptz NOT NULL);
        """
    )
    fake = QueuedSummarizer(SummaryUpdate(add={"established_facts": ["Lisbon in May."]}))
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 2)),
        summarizer=fake,
        clock=fixed_clock,
    )
    state = compactor.compact(ConversationState(trip_planning(8), thread_id="t"), force=True)
    write_log_and_events(backend, state)
    backend.execute(
        "INSERT INTO progsum_states VALUES ('t', 3, %s, %s, %s, now())",
        (len(state), len(state.events), json.dumps(state.to_dict(log=False))),
    )
    with PostgresStore(fresh_url) as store:
        loaded = store.load("t")
        assert loaded.version == 3
        assert loaded.state.to_dict() == state.to_dict()
        more = loaded.state.extend(chat(2, tag="after"))
        assert store.save(more, expected_version=3) == 4
        assert store.load("t").state.to_dict() == more.to_dict()
    assert backend.execute("SELECT max(version) FROM progsum_migrations") == [(SCHEMA_VERSION,)]
    ((text,),) = backend.execute("SELECT state FROM progsum_states")
    assert "events" not in json.loads(text)
    assert "cleared" not in json.loads(text)
