"""Soak: processes take turns on one thread while the store fails under them; nothing is lost twice.

Worker processes append tagged turns to one shared thread with ``store.update`` (compacting, and
archiving each fold first), and retry every `ArchiveError` the way the messages allow, forever.
Meanwhile the database fails under them:

- PostgreSQL: the test restarts the server (``pg_ctl restart -m immediate`` and ``-m fast``) and
  terminates every backend of the application role (``pg_terminate_backend``), at random moments
  of a multi-process run, so some saves lose the answer to their COMMIT;
- SQLite: each worker's connections refuse random COMMITs, inserts and reads (an authorizer at
  the ``sqlite3`` boundary), so saves fail before, at and after their COMMIT.

Afterwards every turn is in the thread exactly once (no duplicate, no loss), whole and in each
worker's order, the folds are contiguous, the archive is exactly the folded messages, and saves
succeed again. Each run prints its figures (``pytest -s``): faults injected, errors the workers
saw by outcome, lost answers the store found committed, duplicates and losses.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import queue
import random
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy, Summary, SummaryRequest, SummaryUpdate
from progsum.errors import ArchiveError, ConflictError
from progsum.store._postgres import PostgresStore
from progsum.store._sqlite import SQLiteStore
from progsum.testing import FIXED_TIME, FunctionSummarizer
from progsum.testing.postgres import PostgresServer, running_server

CONTEXT = multiprocessing.get_context("forkserver")
CONTEXT.set_forkserver_preload([__name__])  # progsum, psycopg and this module, once

THREAD = "soak"
WORKERS = 4
TURNS = {"postgres": 60, "sqlite": 40}
"""Turns each worker takes on the shared thread."""
FAULT_WINDOW = 12.0
"""Seconds during which the test restarts and terminates the PostgreSQL server's sessions."""
SQLITE_FAULT_RATE = 0.04
"""Chance that SQLite refuses a COMMIT, an insert or a read of a worker's."""

Store = SQLiteStore | PostgresStore


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A deterministic fake summarizer: one fact naming the folded range."""
    segment = request.segment
    return SummaryUpdate(add={"established_facts": [f"Read {segment.start}-{segment.end - 1}."]})


def turn(
    engine: Compactor[Summary], state: ConversationState[Summary], tag: str
) -> ConversationState[Summary]:
    """One turn: a user message and the reply, both tagged, then a compaction when due."""
    grown = state.extend(
        [
            {"role": "user", "content": f"{tag} asks " + "detail " * 30},
            {"role": "assistant", "content": f"{tag} answered " + "detail " * 30},
        ]
    )
    return engine.maybe_compact(grown)


def outcome_of(error: ArchiveError) -> str:
    """What an error says happened to the write that failed."""
    message = str(error)
    if isinstance(error, ConflictError):
        return "conflict"
    if "whether it committed is unknown" in message:
        return "unknown, retry is safe"
    if "it was not committed" in message:
        return "not committed"
    if "nothing was changed by it" in message:
        return "failed before its commit"
    return "other"


class _Lost(logging.Handler):
    """Counts the lost COMMIT answers the store found committed (its WARNING lines)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.found = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "was lost" in record.getMessage():
            self.found += 1


class _SQLiteFaults:
    """An authorizer that refuses random COMMITs, inserts and reads (never a ROLLBACK)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)  # noqa: S311 - fault timings, not secrets
        self.injected: Counter[str] = Counter()

    def authorize(self, action: int, arg1: str | None, *_: str | None) -> int:
        kind = None
        if action == sqlite3.SQLITE_TRANSACTION and arg1 == "COMMIT":
            kind = "refused COMMIT"
        elif action == sqlite3.SQLITE_INSERT:
            kind = "refused insert"
        elif action == sqlite3.SQLITE_SELECT:
            kind = "refused read"
        if kind is None or self.rng.random() >= SQLITE_FAULT_RATE:
            return sqlite3.SQLITE_OK
        self.injected[kind] += 1
        return sqlite3.SQLITE_DENY

    def install(self) -> None:
        """Hook every connection this process opens (statements uncached, so each is judged)."""
        real = sqlite3.connect

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            connection: sqlite3.Connection = real(*args, **{**kwargs, "cached_statements": 0})
            connection.set_authorizer(self.authorize)
            return connection

        sqlite3.connect = connect  # type: ignore[assignment]  # the boundary, in a worker process


def open_store(kind: str, where: str) -> Store:
    """A store on the soak's database (a SQLite file, a PostgreSQL URL), retried while it fails."""
    for _ in range(1_000):
        try:
            if kind == "sqlite":
                return SQLiteStore(where)
            return PostgresStore(where, max_size=1, timeout=10)
        except ArchiveError:  # the server is restarting
            time.sleep(0.05)
    raise AssertionError(f"the store at {where} never opened")


def worker(kind: str, where: str, number: int, results: Any) -> None:
    """Take this worker's turns, retrying every ArchiveError; report what happened."""
    faults = _SQLiteFaults(seed=number)
    if kind == "sqlite":
        faults.install()
    lost = _Lost()
    logging.getLogger("progsum.store").addHandler(lost)
    logging.getLogger("psycopg").setLevel(logging.CRITICAL)  # each dropped connection, logged
    store = open_store(kind, where)
    engine = Compactor(
        policy=Policy(context_window=1_200, keep=("messages", 4)),
        summarizer=FunctionSummarizer(facts),
        clock=lambda: FIXED_TIME,
        archive=store,
    )
    seen: Counter[str] = Counter()
    for n in range(TURNS[kind]):
        for _ in range(1_000):
            try:
                store.update(THREAD, partial(turn, engine, tag=f"w{number}-{n}"), attempts=100)
                break
            except ArchiveError as error:  # every message allows the retry
                seen[outcome_of(error)] += 1
                time.sleep(0.02)
        else:
            raise AssertionError(f"worker {number} never saved turn {n}: {seen}")
    store.close()
    results.put((number, dict(seen), lost.found, dict(faults.injected)))


def run_workers(kind: str, where: str) -> tuple[list[Any], Any]:
    """Start the workers; return them and the queue they report to."""
    results = CONTEXT.Queue()
    processes = [
        CONTEXT.Process(target=worker, args=(kind, where, n, results)) for n in range(WORKERS)
    ]
    for process in processes:
        process.start()
    return processes, results


def collect(processes: list[Any], results: Any) -> tuple[Counter[str], int, Counter[str]]:
    """Wait for the workers: the errors they saw, the lost answers found committed, the faults."""
    seen: Counter[str] = Counter()
    lost = 0
    injected: Counter[str] = Counter()
    deadline = time.monotonic() + 120
    for _ in processes:
        while True:
            with contextlib.suppress(queue.Empty):
                _, errors, found, faults = results.get(timeout=0.5)
                break
            assert all(p.exitcode in (None, 0) for p in processes), "a worker failed"
            assert time.monotonic() < deadline, "the workers never finished"
        seen.update(errors)
        lost += found
        injected.update(faults)
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    return seen, lost, injected


def duplicates_and_losses(store: Store, kind: str) -> tuple[int, int]:
    """Turns stored more than once (each extra copy counts), and turns missing from the thread."""
    state = store.load(THREAD).state
    counts = Counter(m["content"].split(" ")[0] for m in state.log[1::2])
    tags = [f"w{w}-{n}" for w in range(WORKERS) for n in range(TURNS[kind])]
    return sum(c - 1 for c in counts.values()), len(set(tags) - set(counts))


def check_thread(store: Store, kind: str) -> None:
    """Every turn once, whole, in order; folds contiguous; the archive exactly the folds."""
    assert duplicates_and_losses(store, kind) == (0, 0)
    state = store.load(THREAD).state
    asks = [m["content"].split(" ")[0] for m in state.log[1::2]]
    answers = [m["content"].split(" ")[0] for m in state.log[2::2]]
    assert answers == asks  # each turn whole
    for w in range(WORKERS):
        assert [t for t in asks if t.startswith(f"w{w}-")] == [
            f"w{w}-{n}" for n in range(TURNS[kind])
        ]
    folds = [e.folded for e in state.events if e.outcome == "compacted" and e.folded]
    assert folds
    starts, ends = [a for a, _ in folds], [b for _, b in folds]
    assert starts == [state.head_end, *ends[:-1]]  # contiguous: nothing folded twice
    assert ends[-1] == state.cutoff
    assert [(e.index, e.message) for e in store.get(THREAD)] == [
        (i, state.log[i]) for i in range(state.head_end, state.cutoff)
    ]
    assert store.events(THREAD) == list(state.events)


def report(kind: str, faults: Counter[str], seen: Counter[str], lost: int, dup_loss: Any) -> None:
    """The run's figures, one line (pytest -s)."""
    updates = WORKERS * TURNS[kind]
    print(  # noqa: T201 - the soak's figures
        f"\n{kind} soak: {WORKERS} processes x {TURNS[kind]} updates ({updates}); faults "
        f"injected {sum(faults.values())} {dict(faults)}; errors seen {dict(seen)}; lost COMMIT "
        f"answers found committed {lost}; duplicates {dup_loss[0]}, losses {dup_loss[1]}"
    )


def start_thread(store: Store) -> None:
    """The shared thread: one opening message."""
    first = ConversationState([{"role": "user", "content": "Start."}], thread_id=THREAD)
    store.save(first, expected_version=None)


@pytest.fixture(scope="module")
def own_server() -> Iterator[PostgresServer]:
    """A server of this module's own, since the soak restarts it."""
    with running_server(durable=True) as server:  # commits take as long as on a real server
        yield server


def inject(server: PostgresServer, processes: list[Any], seed: int) -> Counter[str]:
    """Restart the server and terminate sessions at random moments while the workers run.

    Between restarts (immediate, then fast) the test terminates every session of the role, and
    for a while polls for sessions executing a COMMIT and terminates those: the backend finishes
    the commit, and its client sees the connection drop before the answer.
    """
    rng = random.Random(seed)  # noqa: S311 - fault timings, not secrets
    faults: Counter[str] = Counter()
    restarts = ["restart -m immediate", "restart -m fast"]
    deadline = time.monotonic() + FAULT_WINDOW
    while time.monotonic() < deadline and any(p.is_alive() for p in processes):
        hunt = time.monotonic() + rng.uniform(0.2, 0.6)
        while time.monotonic() < hunt:
            if server.terminate(running="COMMIT"):
                faults["pg_terminate_backend during COMMIT"] += 1
        if server.terminate():
            faults["pg_terminate_backend"] += 1
        time.sleep(rng.uniform(0.05, 0.3))
        fault = restarts[faults["restarts"] % len(restarts)]
        server.restart(fault.rsplit(" ", 1)[-1])
        faults["restarts"] += 1
        faults[fault] += 1
    del faults["restarts"]
    return faults


@pytest.mark.slow
def test_postgres_restarts_and_terminations_duplicate_and_lose_nothing(
    own_server: PostgresServer,
) -> None:
    """Restarts (immediate, fast) and terminated backends under 4 processes: each turn once."""
    url = own_server.database()
    with PostgresStore(url) as store:
        start_thread(store)
    processes, results = run_workers("postgres", url)
    faults = inject(own_server, processes, seed=27)
    seen, lost, _ = collect(processes, results)
    with PostgresStore(url) as store:
        figures = duplicates_and_losses(store, "postgres")
        report("postgres", faults, seen, lost, figures)
        check_thread(store, "postgres")
        store.update(THREAD, lambda state: state.append({"role": "user", "content": "Done."}))
    assert sum(faults.values()) >= 6  # a hang fails in collect (its deadline), not by a clock here


@pytest.mark.slow
def test_sqlite_refused_commits_writes_and_reads_duplicate_and_lose_nothing(
    tmp_path: Path,
) -> None:
    """COMMITs, inserts and reads refused at random under 4 processes: each turn once."""
    path = tmp_path / "soak.db"
    with SQLiteStore(path) as store:
        start_thread(store)
    processes, results = run_workers("sqlite", str(path))
    seen, lost, faults = collect(processes, results)
    with SQLiteStore(path) as store:
        figures = duplicates_and_losses(store, "sqlite")
        report("sqlite", faults, seen, lost, figures)
        check_thread(store, "sqlite")
        store.update(THREAD, lambda state: state.append({"role": "user", "content": "Done."}))
    assert sum(faults.values()) >= 20
