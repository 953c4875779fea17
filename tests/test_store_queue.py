"""Writers of one thread take turns in ``update``: none gives up, each change runs once.

Writers race on one thread from threads of one process and from processes of their own (spawned,
nothing inherited), on SQLite and PostgreSQL. Each change sleeps a little between its load and
its save, as a turn's model call would, so unqueued writers would all but always collide. Every
update must return, apply its change exactly once, and leave its turn in the log exactly once.
A lock that cannot be had within the store's timeout is skipped, never waited for longer.
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from progsum import ConversationState
from progsum.store._postgres import UPDATE_LOCK_CLASS, PostgresStore
from progsum.store._queueing import FileLocks
from progsum.store._sqlite import SQLiteStore
from tests.store_backends import BACKENDS, Backend, Store, make_backend

WRITERS = 4
UPDATES = 6
PAUSE = 0.01
"""Seconds each change takes between the load and the save."""
CONTEXT = multiprocessing.get_context("spawn")


def open_store(target: str, timeout: float = 30.0) -> Store:
    """A store on a PostgreSQL URL (with a spare connection for the lock) or a SQLite file."""
    if target.startswith("postgresql://"):
        return PostgresStore(target, max_size=3, timeout=timeout)
    return SQLiteStore(target, timeout=timeout)


def target_of(backend: Backend) -> str:
    """What `open_store` takes for the backend."""
    path = getattr(backend, "path", None)
    return str(path) if path is not None else str(getattr(backend, "url", ""))


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLite file or a PostgreSQL database holding thread 'shared' with one message."""
    backend = make_backend(request, tmp_path)
    with backend.open() as store:
        first = [{"role": "user", "content": "start"}]
        store.save(ConversationState(first, thread_id="shared"), expected_version=None)
    return target_of(backend)


def writer(target: str, name: str, updates: int) -> tuple[int, int]:
    """``updates`` updates of the shared thread; returns (changes applied, updates given up)."""
    store = open_store(target)
    applied = given_up = 0
    for n in range(updates):

        def change(
            state: ConversationState[Any], tag: str = f"{name}-{n}"
        ) -> ConversationState[Any]:
            nonlocal applied
            applied += 1
            time.sleep(PAUSE)
            return state.extend(
                [{"role": "user", "content": tag}, {"role": "assistant", "content": f"{tag} ok"}]
            )

        try:
            store.update("shared", change, attempts=2)
        except Exception:  # noqa: BLE001 - counted: a ConflictError is what must not happen
            given_up += 1
    store.close()
    return applied, given_up


def check_log(target: str, names: list[str]) -> None:
    """Every writer's every turn is in the log once, whole."""
    with open_store(target) as store:
        log = store.load("shared").state.log
    tags = Counter(m["content"] for m in log[1::2])
    assert tags == Counter(f"{name}-{n}" for name in names for n in range(UPDATES))
    assert [m["content"] for m in log[2::2]] == [f"{m['content']} ok" for m in log[1::2]]


def test_threads_of_one_process_take_turns(target: str) -> None:
    """4 threads x 6 updates with 2 attempts each: none gives up, each change runs once."""
    results: list[tuple[int, int]] = []
    names = [f"t{k}" for k in range(WRITERS)]

    def run(name: str) -> None:
        results.append(writer(target, name, UPDATES))

    threads = [threading.Thread(target=run, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [(UPDATES, 0)] * WRITERS
    check_log(target, names)


@pytest.mark.slow  # four interpreters spawned per backend: ~7 s each on a busy machine
def test_processes_take_turns(target: str) -> None:
    """4 processes x 6 updates with 2 attempts each: none gives up, each change runs once."""
    names = [f"p{k}" for k in range(WRITERS)]
    with CONTEXT.Pool(WRITERS) as pool:
        results = pool.starmap(writer, [(target, name, UPDATES) for name in names])
    assert sorted(results) == [(UPDATES, 0)] * WRITERS
    check_log(target, names)


def test_async_updates_take_turns(target: str) -> None:
    """Async updates hold the same lock: 4 tasks x 6 async updates, each change runs once."""
    store = open_store(target)
    applied = 0

    async def change(state: ConversationState[Any], tag: str) -> ConversationState[Any]:
        nonlocal applied
        applied += 1
        await asyncio.sleep(PAUSE)
        return state.extend(
            [{"role": "user", "content": tag}, {"role": "assistant", "content": f"{tag} ok"}]
        )

    async def task(name: str) -> None:
        for n in range(UPDATES):
            await store.aupdate("shared", functools.partial(change, tag=f"{name}-{n}"), attempts=2)

    async def main() -> None:
        await asyncio.gather(*(task(f"a{k}") for k in range(WRITERS)))

    asyncio.run(main())
    store.close()
    assert applied == WRITERS * UPDATES
    check_log(target, [f"a{k}" for k in range(WRITERS)])


@pytest.fixture
def held_elsewhere(target: str) -> Iterator[str]:
    """The shared thread's update lock, held by another session or process during the test."""
    if target.startswith("postgresql://"):
        with psycopg.connect(target, autocommit=True) as other:
            lock = "SELECT pg_advisory_lock(%s, hashtext(%s))"
            other.execute(lock, (UPDATE_LOCK_CLASS, "shared"))
            yield target
        return
    holding = CONTEXT.Event()
    holder = CONTEXT.Process(target=_hold_file_lock, args=(target, holding))
    holder.start()
    assert holding.wait(30)
    try:
        yield target
    finally:
        holder.terminate()
        holder.join()


def _hold_file_lock(target: str, holding: Any) -> None:
    """Hold the shared thread's byte of the SQLite lock file until terminated."""
    locks = FileLocks(Path(target))
    with locks.holding("shared", 5.0) as had:
        if had:
            holding.set()
        time.sleep(60)


def test_a_lock_held_too_long_is_skipped_after_the_timeout(held_elsewhere: str) -> None:
    """With the lock held elsewhere, update waits the store's timeout, then goes on and saves."""
    store = open_store(held_elsewhere, timeout=0.5)
    begun = time.perf_counter()
    stored = store.update(
        "shared", lambda s: s.append({"role": "user", "content": "anyway"}), attempts=1
    )
    waited = time.perf_counter() - begun
    store.close()
    assert stored.version == 2
    assert 0.4 < waited < 5
