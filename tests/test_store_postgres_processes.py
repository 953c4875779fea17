"""PostgresStore across processes: workers killed mid-save lose nothing; 8 racing lose nothing.

Children come from a fork server that has imported progsum and psycopg once (no state of the test
process is inherited, and a child starts in milliseconds, so 100 kill trials stay fast).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import signal
import time
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

from progsum import Compactor, ConversationState, Policy, Summary, SummaryRequest, SummaryUpdate
from progsum.store._archive import Archive, MemoryArchive
from progsum.store._postgres import PostgresStore
from progsum.testing import FunctionSummarizer
from tests.conftest import fixed_clock
from tests.store_backends import PostgresBackend

CONTEXT = multiprocessing.get_context("forkserver")
CONTEXT.set_forkserver_preload([__name__])  # progsum, psycopg and the test helpers, once

SAVE_KILLS = 100
"""Trials killed within a save: after the worker said it calls save, within ~a save's time."""
ANY_KILLS = 30
"""Trials killed at any moment of a turn (loading, compacting, archiving, saving)."""
WORKERS = 8
ROUNDS = 6


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A deterministic fake summarizer: one fact naming the folded range."""
    segment = request.segment
    return SummaryUpdate(add={"established_facts": [f"Read {segment.start}-{segment.end - 1}."]})


def compactor(store: Archive | None = None) -> Compactor[Summary]:
    """A small-window compactor; with ``store``, the engine archives each fold there first."""
    return Compactor(
        policy=Policy(context_window=1_200, keep=("messages", 4)),
        summarizer=FunctionSummarizer(facts),
        clock=fixed_clock,
        archive=store,
    )


def exchange(state: ConversationState[Summary], tag: str) -> ConversationState[Summary]:
    """One turn: a user message and the assistant's reply, both tagged and long enough to fold."""
    return state.extend(
        [
            {"role": "user", "content": f"{tag} asks " + "detail " * 30},
            {"role": "assistant", "content": f"{tag} answered " + "detail " * 30},
        ]
    )


def step(
    engine: Compactor[Summary], state: ConversationState[Summary]
) -> ConversationState[Summary]:
    """The deterministic turn the killed workers repeat: one exchange, compacted when due."""
    return engine.maybe_compact(exchange(state, f"turn{len(state)}"))


# -- SIGKILL at random points ---------------------------------------------------------------------


def saver(url: str, acks: Connection) -> None:
    """Take turns on thread 'kill' forever, acknowledging each saved version, until killed."""
    store = PostgresStore(url, max_size=1)
    engine = compactor(store)
    acks.send(("ready", 0))  # connected: the parent may kill from now on
    while True:
        stored = store.load("kill")
        changed = step(engine, stored.state)  # archives the fold first, when one is due
        acks.send(("saving", stored.version + 1))
        version = store.save(changed, expected_version=stored.version)
        acks.send(("saved", version))  # the save returned: this version must survive


def wait_until_gone(backend: PostgresBackend, name: str) -> None:
    """Wait until the server has ended the killed worker's session (and its transaction)."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
    deadline = time.monotonic() + 30
    while backend.execute(query, (name,)) != [(0,)]:
        assert time.monotonic() < deadline, "the killed worker's session never ended"
        time.sleep(0.005)


def test_workers_killed_mid_save_lose_nothing(postgres_url: str) -> None:
    """130 workers SIGKILLed during saves and at random: acknowledged saves survive, none halfway.

    After each kill the thread is at the last acknowledged version or the one after (committed,
    not yet acknowledged), equal to replaying that many turns; the archive holds exactly the
    saved folds, plus at most the next fold written ahead of its save, which matches the next
    state; the next worker carries on from there.
    """
    backend = PostgresBackend(postgres_url)
    first = ConversationState([{"role": "user", "content": "Start."}], thread_id="kill")
    with PostgresStore(postgres_url) as store:
        store.save(first, expected_version=None)
    expected = [first]  # expected[v - 1]: the state saved as version v
    engine = compactor(MemoryArchive())  # archives as the workers do, so headers name it alike
    rng = random.Random(16)  # noqa: S311 - kill timings, not secrets
    outcomes = {"at the last acknowledged version": 0, "one beyond it": 0, "archived ahead": 0}
    acked = 1
    for trial in range(SAVE_KILLS + ANY_KILLS):
        name = f"kill-{trial}"
        receiver, sender = CONTEXT.Pipe(duplex=False)
        child = CONTEXT.Process(
            target=saver, args=(f"{postgres_url}&application_name={name}", sender)
        )
        child.start()
        sender.close()
        assert receiver.recv() == ("ready", 0)
        if trial < SAVE_KILLS:  # wait until the worker calls its 1st-3rd save, kill it in ~15 ms
            saves = rng.randint(1, 3)  # later saves: turns advance however slow the machine is
            while saves:
                kind, version = receiver.recv()
                if kind == "saving":
                    saves -= 1
                else:
                    acked = max(acked, version)
            time.sleep(rng.uniform(0, 0.015))
        else:
            time.sleep(rng.uniform(0, 0.1))
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=30)
        assert child.exitcode == -signal.SIGKILL
        with contextlib.suppress(EOFError):  # the pipe ends where the killed worker stopped
            while receiver.poll():
                kind, version = receiver.recv()
                if kind == "saved":
                    acked = max(acked, version)
        receiver.close()
        wait_until_gone(backend, name)

        with PostgresStore(postgres_url, max_size=1) as store:
            state, version = store.load("kill")
            archived = store.get("kill")
            events = store.events("kill")
        assert version in (acked, acked + 1)  # nothing acknowledged is lost
        outcomes["at the last acknowledged version" if version == acked else "one beyond it"] += 1
        while len(expected) < version + 1:
            expected.append(step(engine, expected[-1]))
        assert state.to_dict() == expected[version - 1].to_dict()  # old or new, never between
        saved = [e for e in archived if e.event is not None and e.event <= len(state.events)]
        assert [(e.index, e.message) for e in saved] == [
            (i, state.log[i]) for i in range(state.head_end, state.cutoff)
        ]
        assert events[: len(state.events)] == list(state.events)
        ahead = [e for e in archived if e not in saved]
        if ahead:  # the killed worker archived its next fold, then died before saving it
            outcomes["archived ahead"] += 1
            following = expected[version]
            assert {e.event for e in ahead} == {len(state.events) + 1}
            assert all(following.log[e.index] == e.message for e in ahead)
            by_number = {e.number: e for e in following.events}
            assert all(by_number[e.number] == e for e in events[len(state.events) :])
        rows = backend.execute("SELECT count(*) FROM progsum_messages WHERE thread_id = 'kill'")
        beyond = sum(1 for e in ahead if e.index >= len(state.log))  # folded ahead, unsaved
        assert rows == [(len(state.log) + beyond,)]  # no other row of an unsaved turn
        acked = version
    kills = SAVE_KILLS + ANY_KILLS
    print(f"\n{kills} SIGKILLs: {outcomes}; {acked} versions saved")  # noqa: T201
    assert sum(1 for e in expected[-1].events if e.outcome == "compacted") >= 10


# -- 8 processes at once ---------------------------------------------------------------------------


def _started_together(url: str, worker: int, rounds: int, barrier: Any, results: Any) -> None:
    barrier.wait()  # every process has started and connected: now they race
    results.put((worker, racer(url, worker, rounds)))


def racer(url: str, worker: int, rounds: int) -> int:
    """Turns on the shared thread and this worker's own, compacting in each; count retries."""
    store = PostgresStore(url, max_size=1)
    engine = compactor(store)
    calls = 0

    def turn(state: ConversationState[Summary], tag: str) -> ConversationState[Summary]:
        nonlocal calls
        calls += 1
        return engine.maybe_compact(exchange(state, tag))

    for n in range(rounds):
        store.update("shared", partial(turn, tag=f"w{worker}-{n}"), attempts=100)
        store.update(f"own-{worker}", partial(turn, tag=f"w{worker}-{n}"))
    store.close()
    return calls - 2 * rounds


def check_folds(store: PostgresStore, thread_id: str) -> ConversationState[Summary]:
    """Each message folded at most once, and the archive holds exactly the folded messages."""
    state = store.load(thread_id).state
    folds = [e.folded for e in state.events if e.outcome == "compacted" and e.folded]
    assert folds
    starts, ends = [a for a, _ in folds], [b for _, b in folds]
    assert starts == [state.head_end, *ends[:-1]]  # contiguous: nothing folded twice
    assert ends[-1] == state.cutoff
    archived = store.get(thread_id)
    assert [(e.index, e.message) for e in archived] == [
        (i, state.log[i]) for i in range(state.head_end, state.cutoff)
    ]
    assert store.events(thread_id) == list(state.events)
    return state


def test_eight_processes_compacting_lose_duplicate_and_double_fold_nothing(
    postgres_url: str,
) -> None:
    """8 processes compact and save one shared thread and one each: every turn stored once."""
    start = [{"role": "user", "content": "Start."}]
    with PostgresStore(postgres_url) as store:
        for thread_id in ["shared", *(f"own-{w}" for w in range(WORKERS))]:
            store.save(ConversationState(start, thread_id=thread_id), expected_version=None)
    barrier, results = CONTEXT.Barrier(WORKERS), CONTEXT.Queue()
    processes = [
        CONTEXT.Process(target=_started_together, args=(postgres_url, w, ROUNDS, barrier, results))
        for w in range(WORKERS)
    ]
    for process in processes:
        process.start()
    retries = dict(results.get(timeout=300) for _ in processes)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    print(f"\n{WORKERS} processes x {2 * ROUNDS} updates: {sum(retries.values())} retries")  # noqa: T201

    with PostgresStore(postgres_url) as store:
        shared = check_folds(store, "shared")
        assert store.load("shared").version == 1 + WORKERS * ROUNDS
        asks = [m["content"].split(" ")[0] for m in shared.log[1::2]]
        answers = [m["content"].split(" ")[0] for m in shared.log[2::2]]
        tags = [f"w{w}-{n}" for w in range(WORKERS) for n in range(ROUNDS)]
        assert sorted(asks) == sorted(tags)  # none lost, none duplicated
        assert answers == asks  # each turn whole
        for worker in range(WORKERS):
            mine = [t for t in asks if t.startswith(f"w{worker}-")]
            assert mine == [f"w{worker}-{n}" for n in range(ROUNDS)]
            own = store.load(f"own-{worker}")
            assert own.version == 1 + ROUNDS
            assert [m["content"].split(" ")[0] for m in own.state.log[1::2]] == mine
        check_folds(store, f"own-{WORKERS - 1}")
