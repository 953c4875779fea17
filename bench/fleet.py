"""A simulated fleet: worker processes taking turns on many threads, on SQLite and PostgreSQL.

    python bench/fleet.py                                   # 8 workers, 100 threads x 20 turns, x10
    python bench/fleet.py --threads 1000 --turns 200        # the issue's size (hours on 2 cores)
    python bench/fleet.py --postgres postgresql://u@host/db # an existing, empty database

Each turn is what an agent worker does when it picks a conversation off a queue: load the thread,
append a user message and a reply, ``maybe_compact`` (a fake summarizer answers instantly; the
engine archives each folded segment to the store first), and save against the loaded version; a
lost race (``ConflictError``) reloads and re-applies. The turns of every round visit the threads in
a fresh random order and are dealt to the workers in turn, so any worker may pick up any thread,
and two workers sometimes hold the same one. Each size runs twice, at ``--threads`` and at
``--growth`` times as many, with the same turns per thread, so what grows with the number of
threads (not with each thread's length) shows in the ratio column.

Figures: turns per second across the fleet (wall clock from the first turn to the last), the
latency of each ``save`` and ``load`` call (p50, p99, in ms), conflicts (saves refused as stale),
and compactions. Without ``--postgres`` the benchmark starts a throwaway PostgreSQL server
(`progsum.testing.postgres`, with ``fsync`` on, as the SQLite store runs ``synchronous=FULL``).
Both backends run on this one machine: compare the rows of one run, not across machines.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progsum import Compactor, ConversationState, Policy, SummaryRequest, SummaryUpdate
from progsum.errors import ConflictError
from progsum.store._postgres import PostgresStore
from progsum.store._sqlite import SQLiteStore
from progsum.testing import FunctionSummarizer

WORKERS = 8
THREADS = 100
TURNS = 20
GROWTH = 10
POLICY = Policy(context_window=2_000, keep=("messages", 4))
"""About one compaction per 8 turns of the simulated messages."""
WORDS = ("the", "user", "asks", "about", "a", "booking", "and", "agent", "checks", "calendar")

Store = SQLiteStore | PostgresStore


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """An instant fake summarizer: one fact naming the folded range."""
    segment = request.segment
    return SummaryUpdate(add={"established_facts": [f"Read {segment.start}-{segment.end - 1}."]})


@dataclass(frozen=True)
class Figures:
    """What one worker measured."""

    saves: list[float]
    loads: list[float]
    conflicts: int
    started: float
    ended: float


def open_store(target: str) -> Store:
    """A store on ``target``: a PostgreSQL URL or a SQLite file."""
    if target.startswith("postgresql://"):
        return PostgresStore(target, max_size=1)
    return SQLiteStore(target)


def turn_messages(thread: str, n: int, rng: random.Random) -> list[dict[str, str]]:
    """One turn: a user message and the assistant's reply (about 60 tokens each)."""

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(40))

    return [
        {"role": "user", "content": f"{thread} turn {n}: {text()}"},
        {"role": "assistant", "content": f"{thread} reply {n}: {text()}"},
    ]


def work(target: str, tasks: list[str], seed: int) -> Figures:
    """Take the turns ``tasks`` (thread ids, in order) on the store, timing each load and save."""
    store = open_store(target)
    compactor = Compactor(policy=POLICY, summarizer=FunctionSummarizer(facts), archive=store)
    rng = random.Random(seed)
    saves: list[float] = []
    loads: list[float] = []
    conflicts = 0
    started = time.perf_counter()
    for thread in tasks:
        while True:
            begun = time.perf_counter()
            state, version = store.load(thread)
            loads.append(time.perf_counter() - begun)
            grown = state.extend(turn_messages(thread, len(state) // 2, rng))
            changed = compactor.maybe_compact(grown)
            begun = time.perf_counter()
            try:
                store.save(changed, expected_version=version)
            except ConflictError:
                conflicts += 1
                continue
            finally:
                saves.append(time.perf_counter() - begun)
            break
    ended = time.perf_counter()
    store.close()
    return Figures(saves, loads, conflicts, started, ended)


def schedule(threads: int, turns: int, workers: int, seed: int) -> list[list[str]]:
    """Each worker's turns: each round visits every thread in a new random order, dealt in turn."""
    rng = random.Random(seed)
    ids = [f"thread-{t:06d}" for t in range(threads)]
    order: list[str] = []
    for _ in range(turns):
        rng.shuffle(ids)
        order += ids
    return [order[w::workers] for w in range(workers)]


@dataclass(frozen=True)
class Result:
    """The fleet's figures for one backend at one size."""

    turns: int
    seconds: float
    saves: list[float]
    loads: list[float]
    conflicts: int
    compactions: int

    @property
    def rate(self) -> float:
        """Turns per second across the fleet."""
        return self.turns / self.seconds


def run(target: str, threads: int, turns: int, workers: int) -> Result:
    """Create ``threads`` threads, then let ``workers`` processes take ``turns`` turns on each."""
    store = open_store(target)
    first = [{"role": "user", "content": "Plan the trip; keep every booking reference."}]
    for t in range(threads):
        store.save(ConversationState(first, thread_id=f"thread-{t:06d}"), expected_version=None)
    plans = schedule(threads, turns, workers, seed=threads)
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        figures = pool.starmap(work, [(target, plan, w) for w, plan in enumerate(plans)])
    compactions = sum(
        1
        for t in range(threads)
        for e in store.events(f"thread-{t:06d}")
        if e.outcome == "compacted"
    )
    store.close()
    return Result(
        turns=threads * turns,
        seconds=max(f.ended for f in figures) - min(f.started for f in figures),
        saves=[s for f in figures for s in f.saves],
        loads=[s for f in figures for s in f.loads],
        conflicts=sum(f.conflicts for f in figures),
        compactions=compactions,
    )


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values``, in milliseconds."""
    return statistics.quantiles(values, n=100, method="inclusive")[round(fraction * 100) - 1] * 1e3


@contextmanager
def postgres_target(url: str | None, *, needed: bool) -> Iterator[str]:
    """The given URL, or a fresh database on a throwaway durable server ("" when not needed)."""
    if url is not None or not needed:
        yield url or ""
        return
    from progsum.testing.postgres import running_server  # noqa: PLC0415 - only without --postgres

    with running_server(durable=True) as server:
        yield server.database()


def fresh(target: str, size: int) -> str:
    """A target holding nothing yet for this size: a new SQLite file, or a new PostgreSQL schema."""
    if target.startswith("postgresql://"):
        import psycopg  # noqa: PLC0415 - the postgres extra

        schema = f"fleet_{size}_{time.time_ns()}"
        with psycopg.connect(target, autocommit=True) as db:
            row = db.execute("SELECT to_regclass('public.progsum_messages')").fetchone()
            if row is not None and row[0] is not None:
                message = f"{target} has progsum tables in public; give the benchmark an empty one"
                raise SystemExit(message)
            db.execute(f"CREATE SCHEMA {schema}")
        separator = "&" if "?" in target else "?"
        return f"{target}{separator}options=-csearch_path%3D{schema},public"
    return str(Path(target) / f"fleet-{size}.db")


def row(backend: str, size: int, result: Result) -> str:
    """One line of the table."""
    latencies = " ".join(
        f"{percentile(values, q):>7.2f}ms"
        for values in (result.saves, result.loads)
        for q in (0.5, 0.99)
    )
    return (
        f"{backend:<9} {size:>8,} {result.turns:>8,} {result.rate:>8.0f} {latencies} "
        f"{result.conflicts:>9,} {result.compactions:>11,}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Run the fleet on both backends at two sizes and print one table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--threads", type=int, default=THREADS, help="threads of the first size")
    parser.add_argument("--turns", type=int, default=TURNS, help="turns taken on each thread")
    parser.add_argument("--workers", type=int, default=WORKERS, help="worker processes")
    parser.add_argument("--growth", type=int, default=GROWTH, help="threads factor of size two")
    parser.add_argument(
        "--postgres", metavar="URL", help="an empty database (default: a throwaway server)"
    )
    parser.add_argument(
        "--backends", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"]
    )
    args = parser.parse_args(argv)
    sizes = [args.threads, args.threads * args.growth]
    print(
        f"{args.workers} workers, {args.turns} turns per thread, "
        f"{sizes[0]:,} and {sizes[1]:,} threads"
    )
    header = (
        f"{'backend':<9} {'threads':>8} {'turns':>8} {'turns/s':>8} {'save p50':>9} "
        f"{'save p99':>9} {'load p50':>9} {'load p99':>9} {'conflicts':>9} {'compactions':>11}"
    )
    print(header)
    needed = "postgres" in args.backends
    with (
        tempfile.TemporaryDirectory() as directory,
        postgres_target(args.postgres, needed=needed) as url,
    ):
        for backend in args.backends:
            base = url if backend == "postgres" else directory
            results = []
            for size in sizes:
                result = run(fresh(base, size), size, args.turns, args.workers)
                results.append(result)
                print(row(backend, size, result))
            small, large = results
            print(
                f"{backend:<9} ratio {sizes[1]:,} / {sizes[0]:,} threads: turns/s "
                f"{large.rate / small.rate:.2f}, save p50 "
                f"{percentile(large.saves, 0.5) / percentile(small.saves, 0.5):.2f}, save p99 "
                f"{percentile(large.saves, 0.99) / percentile(small.saves, 0.99):.2f}"
            )


if __name__ == "__main__":
    main()
