"""SQLiteStore across processes: a killed writer leaves the old or new state; races lose nothing.

Children are fresh interpreters (spawn): nothing is inherited from the test process.
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from progsum import Compactor, ConversationState, Policy, Summary, SummaryRequest, SummaryUpdate
from progsum.store._sqlite import SQLiteStore
from progsum.testing import FunctionSummarizer
from tests.conftest import fixed_clock
from tests.conversations import spelled, trip_planning

T = TypeVar("T")

CRASHED = 17
"""Exit status of a child killed on purpose."""

PROCESSES = 4
ROUNDS = 25

CONTEXT = multiprocessing.get_context("spawn")


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A deterministic fake summarizer: one fact naming the folded range."""
    segment = request.segment
    return SummaryUpdate(
        add={"established_facts": [f"Read {spelled(segment.start)} to {spelled(segment.end - 1)}."]}
    )


def compacted(state: ConversationState[Summary]) -> ConversationState[Summary]:
    """The step under test: a few more turns, then a compaction (the same in every process)."""
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 4)),
        summarizer=FunctionSummarizer(facts),
        clock=fixed_clock,
    )
    grown = state.extend(trip_planning(10)[len(state) :])
    return compactor.compact(grown, force=True)


def archive_and_save(store: SQLiteStore, before: ConversationState[Summary], version: int) -> None:
    """Compact, write the folded segment to the archive, then save: the engine's order."""
    after = compacted(before)
    event = after.events[-1]
    assert event.folded is not None
    start, end = event.folded
    store.put("trip", start, list(after.log[start:end]), event)
    if os.environ.get("CRASH_AT") == "after_archive":
        os._exit(CRASHED)
    store.save(after, expected_version=version)
    if os.environ.get("CRASH_AT") == "after_commit":
        os._exit(CRASHED)


def crash_child(path: str, point: str) -> None:
    """Run one compaction and kill this process at ``point`` (by statement or between calls)."""
    os.environ["CRASH_AT"] = point
    seen: list[str] = []

    def trace(statement: str) -> None:
        sql = statement.lstrip()
        seen.append(sql)
        if point == "mid_archive" and sql.startswith("INSERT INTO events"):
            os._exit(CRASHED)  # the put's message rows are written, its event is not
        if point == "mid_commit" and sql.startswith("INSERT INTO states"):
            os._exit(CRASHED)  # the save's messages and events are written, its state row not
        if (
            point == "at_commit"
            and sql == "COMMIT"
            and any(s.startswith("INSERT INTO states") for s in seen)
        ):
            os._exit(CRASHED)  # everything written, the COMMIT about to run

    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = real(*args, **kwargs)
        connection.set_trace_callback(trace)
        return connection

    sqlite3.connect = connect  # type: ignore[assignment]  # the boundary, in a throwaway process
    store = SQLiteStore(path)
    stored = store.load("trip")
    archive_and_save(store, stored.state, stored.version)
    os._exit(0)  # not killed: the test fails on the exit status


@pytest.mark.parametrize(
    ("point", "survives"),
    [
        ("mid_archive", "old"),
        ("after_archive", "old"),
        ("mid_commit", "old"),
        ("at_commit", "old"),
        ("after_commit", "new"),
    ],
)
def test_killed_writer_leaves_old_or_new_state(tmp_path: Path, point: str, survives: str) -> None:
    """Kill a compaction at each step: the thread is at the old or new version, nothing lost."""
    path = tmp_path / "store.db"
    old = ConversationState(trip_planning(6), thread_id="trip")
    with SQLiteStore(path) as store:
        store.save(old, expected_version=None)
    new = compacted(old)

    child = CONTEXT.Process(target=crash_child, args=(str(path), point))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == CRASHED

    with SQLiteStore(path) as store:
        state, version = store.load("trip")
        expected = old if survives == "old" else new
        assert (version, state.to_dict()) == (1 if survives == "old" else 2, expected.to_dict())
        archived = {e.index: e.message for e in store.get("trip")}
        log = list(state.log)
        in_state = set(range(state.head_end)) | set(range(state.cutoff, len(log)))
        assert all(i in archived or i in in_state for i in range(len(log)))  # nothing lost
        assert all(archived[i] == log[i] for i in range(state.head_end, state.cutoff))
        if point == "mid_archive":
            assert archived == {}  # the put's transaction never committed
        if point in {"after_archive", "mid_commit", "at_commit"}:
            assert len(archived) == len(new.log[slice(*(new.events[-1].folded or (0, 0)))])

        if survives == "old":  # the next attempt redoes the step, writing nothing twice
            archive_and_save(store, state, version)
            again, again_version = store.load("trip")
            assert (again_version, again.to_dict()) == (2, new.to_dict())
        event = new.events[-1]
        assert event.folded is not None
        assert [(e.index, e.message, e.event) for e in store.get("trip")] == [
            (i, new.log[i], event.number) for i in range(*event.folded)
        ]
        assert store.events("trip") == list(new.events)
    with sqlite3.connect(path) as db:
        (rows,) = db.execute("SELECT COUNT(*) FROM messages").fetchone()
    assert rows == len(new.log)


def exchange(state: ConversationState[Summary], tag: str) -> ConversationState[Summary]:
    """One turn: a user message and the assistant's reply, both tagged."""
    return state.extend(
        [
            {"role": "user", "content": f"{tag} asks"},
            {"role": "assistant", "content": f"{tag} answered"},
        ]
    )


def _started_together(
    target: Callable[[str, int, int], Any], barrier: Any, results: Any, *args: Any
) -> None:
    barrier.wait()  # every process has started and imported: now they race
    results.put((args[1], target(*args)))


def run_together(
    target: Callable[[str, int, int], T], path: Path, workers: int, rounds: int
) -> list[T]:
    """Run ``target(path, worker, rounds)`` in ``workers`` processes released at once."""
    barrier, results = CONTEXT.Barrier(workers), CONTEXT.Queue()
    processes = [
        CONTEXT.Process(
            target=_started_together, args=(target, barrier, results, str(path), w, rounds)
        )
        for w in range(workers)
    ]
    for process in processes:
        process.start()
    found = dict(results.get(timeout=120) for _ in processes)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return [found[w] for w in range(workers)]


def writer(path: str, worker: int, rounds: int) -> tuple[list[int], list[int], float, float]:
    """Append ``rounds`` turns to the shared thread and to this worker's own thread."""
    store = SQLiteStore(path)
    shared: list[int] = []
    own: list[int] = []
    started = time.time()
    for n in range(rounds):
        tag = f"w{worker}-{n}"
        shared.append(store.update("shared", partial(exchange, tag=tag), attempts=50).version)
        own.append(store.update(f"own-{worker}", partial(exchange, tag=tag)).version)
    ended = time.time()
    store.close()
    return shared, own, started, ended


def test_concurrent_processes_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    """4 processes x 25 updates on a shared thread and their own: every turn stored once."""
    path = tmp_path / "store.db"
    first = [{"role": "user", "content": "Start."}, {"role": "assistant", "content": "Ready."}]
    with SQLiteStore(path) as store:
        store.save(ConversationState(first, thread_id="shared"), expected_version=None)
        for worker in range(PROCESSES):
            own = ConversationState(first, thread_id=f"own-{worker}")
            store.save(own, expected_version=None)

    results = run_together(writer, path, PROCESSES, ROUNDS)

    elapsed = max(r[3] for r in results) - min(r[2] for r in results)
    updates = 2 * PROCESSES * ROUNDS
    print(  # noqa: T201 - the throughput is reported with pytest -s
        f"\n{PROCESSES} processes x {2 * ROUNDS} updates: {updates / elapsed:.0f} updates/s "
        f"({elapsed:.2f} s)"
    )
    with SQLiteStore(path) as store:
        shared, version = store.load("shared")
        assert version == 1 + PROCESSES * ROUNDS
        got = [m["content"] for m in shared.log[2:]]
        expected = {f"w{w}-{n}" for w in range(PROCESSES) for n in range(ROUNDS)}
        tags = [text.removesuffix(" asks") for text in got[::2]]
        assert sorted(tags) == sorted(expected)  # none lost, none duplicated
        assert got[1::2] == [f"{tag} answered" for tag in tags]  # each turn whole
        versions = sorted(v for r in results for v in r[0])
        assert versions == list(range(2, 2 + PROCESSES * ROUNDS))  # one save per version
        for worker, (mine, own_versions, _, _) in enumerate(results):
            assert mine == sorted(mine)
            assert own_versions == list(range(2, 2 + ROUNDS))
            tags_in_order = [t for t in tags if t.startswith(f"w{worker}-")]
            assert tags_in_order == [f"w{worker}-{n}" for n in range(ROUNDS)]
            own, own_version = store.load(f"own-{worker}")
            assert own_version == 1 + ROUNDS
            assert [m["content"] for m in own.log[2::2]] == [
                f"w{worker}-{n} asks" for n in range(ROUNDS)
            ]


def compacting_writer(path: str, worker: int, rounds: int) -> int:
    """Append turns to the shared thread, compacting and archiving in each update; count retries."""
    store = SQLiteStore(path)
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 4)),
        summarizer=FunctionSummarizer(facts),
        clock=fixed_clock,
    )

    calls = 0

    def turn(state: ConversationState[Summary], tag: str) -> ConversationState[Summary]:
        nonlocal calls
        calls += 1
        before = exchange(state, tag)
        after = compactor.maybe_compact(before)
        for event in after.events[len(before.events) :]:  # the engine's archive write
            if event.outcome == "compacted" and event.folded is not None:
                start, end = event.folded
                store.put("shared", start, list(after.log[start:end]), event)
        return after

    for n in range(rounds):
        store.update("shared", partial(turn, tag=f"w{worker}-{n} " + "words " * 30), attempts=50)
    store.close()
    return calls - rounds


def test_concurrent_compactions_fold_each_message_once(tmp_path: Path) -> None:
    """Processes that compact while they race: segments disjoint, archive exactly the folds."""
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        start = ConversationState([{"role": "user", "content": "Start."}], thread_id="shared")
        store.save(start, expected_version=None)
    retries = sum(run_together(compacting_writer, path, 3, 12))
    print(f"\n3 compacting processes x 12 updates: {retries} changes re-applied after a conflict")  # noqa: T201

    with SQLiteStore(path) as store:
        state, version = store.load("shared")
        assert version == 1 + 3 * 12
        assert len(state.log) == 1 + 2 * 3 * 12
        asks = [m["content"].split(" ")[0] for m in state.log[1::2]]
        assert sorted(asks) == sorted(f"w{w}-{n}" for w in range(3) for n in range(12))
        folds = [e.folded for e in state.events if e.outcome == "compacted" and e.folded]
        assert len(folds) >= 3
        starts, ends = [a for a, _ in folds], [b for _, b in folds]
        assert starts == [state.head_end, *ends[:-1]]  # contiguous: nothing folded twice
        assert ends[-1] == state.cutoff
        archived = store.get("shared")
        assert [e.index for e in archived] == list(range(state.head_end, state.cutoff))
        assert [e.message for e in archived] == list(state.log[state.head_end : state.cutoff])
        assert store.events("shared") == list(state.events)


def test_concurrent_threads_share_one_store(tmp_path: Path) -> None:
    """Threads of one process share a store object (a connection each) without losing turns."""
    store = SQLiteStore(tmp_path / "store.db")
    start = [{"role": "user", "content": "Start."}]
    store.save(ConversationState(start, thread_id="shared"), expected_version=None)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for n in range(10):
                store.update("shared", partial(exchange, tag=f"t{worker}-{n}"), attempts=50)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    state, version = store.load("shared")
    assert version == 41
    assert len(state.log) == 81
    assert len({m["content"] for m in state.log}) == 81
    store.close()
