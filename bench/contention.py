"""Writers racing on one thread: how many ``store.update`` calls give up, and how long they take.

    python bench/contention.py                                    # 4, 8 and 16 writers, PostgreSQL
    python bench/contention.py --writers 4 --updates 40 --backends sqlite postgres
    python bench/contention.py --postgres postgresql://u@host/db  # an existing, empty database

Each writer is a process of its own (as the workers of a fleet are) with its own store, and calls
``store.update(thread, change)`` ``--updates`` times on the same thread. ``change`` is what an
agent's turn does: append a user message and a reply, then ``maybe_compact`` (a fake summarizer
answers instantly; the engine archives each folded segment to the store first), so a change
takes a few milliseconds, like a turn whose model call is already done. A call that raises
``ConflictError`` has given up (the store's own retries were exhausted); the writer counts it
and goes on with its next update.

Figures per backend and number of writers: updates given up (and their share), ``update``
latency (p50, p99, max, in ms), changes applied per update (1.0: no change was applied twice),
and a check that nothing was lost or stored twice: every update that returned has its two
messages in the thread's final log exactly once, and no update that gave up has any there.
Without ``--postgres`` a throwaway PostgreSQL server starts (`progsum.testing.postgres`, with
``fsync`` on). Compare the rows of one run, not across machines.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from collections import Counter
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

WRITERS = (4, 8, 16)
UPDATES = 25
THREAD = "shared"
POLICY = Policy(context_window=4_000, keep=("messages", 6))
"""About one compaction every ten updates of the messages below."""

Store = SQLiteStore | PostgresStore


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """An instant fake summarizer: one fact naming the folded range."""
    segment = request.segment
    return SummaryUpdate(add={"established_facts": [f"Read {segment.start}-{segment.end - 1}."]})


def open_store(target: str) -> Store:
    """A store on ``target``: a PostgreSQL URL or a SQLite file."""
    if target.startswith("postgresql://"):
        return PostgresStore(target, max_size=2)
    return SQLiteStore(target)


@dataclass(frozen=True)
class Figures:
    """What one writer measured."""

    latencies: list[float]
    """Seconds of each update call, given up or not."""
    done: list[str]
    """Tags of the updates that returned."""
    given_up: list[str]
    """Tags of the updates that raised ConflictError."""
    applied: int
    """Times ``change`` ran (more than the updates when a change was applied again)."""


def write(target: str, writer: int, updates: int) -> Figures:
    """``updates`` calls of ``store.update`` on the shared thread, each adding two tagged turns."""
    store = open_store(target)
    compactor = Compactor(policy=POLICY, summarizer=FunctionSummarizer(facts), archive=store)
    latencies: list[float] = []
    done: list[str] = []
    given_up: list[str] = []
    applied = 0
    for n in range(updates):
        tag = f"w{writer}-u{n}"

        def change(state: ConversationState[Any], tag: str = tag) -> ConversationState[Any]:
            nonlocal applied
            applied += 1
            grown = state.extend(
                [
                    {"role": "user", "content": f"{tag}: what is next on the booking list?"},
                    {"role": "assistant", "content": f"{tag}: " + "checking the calendar " * 12},
                ]
            )
            return compactor.maybe_compact(grown)

        begun = time.perf_counter()
        try:
            store.update(THREAD, change)
        except ConflictError:
            given_up.append(tag)
        else:
            done.append(tag)
        latencies.append(time.perf_counter() - begun)
    store.close()
    return Figures(latencies, done, given_up, applied)


@dataclass(frozen=True)
class Result:
    """One backend and number of writers."""

    writers: int
    updates: int
    given_up: int
    latencies: list[float]
    applied: int
    lost: int
    duplicated: int
    seconds: float


def run(target: str, writers: int, updates: int) -> Result:
    """Save the thread, race ``writers`` processes on it, then check its log."""
    store = open_store(target)
    first = [{"role": "user", "content": "Plan the trip; keep every booking reference."}]
    store.save(ConversationState(first, thread_id=THREAD), expected_version=None)
    context = multiprocessing.get_context("spawn")
    started = time.perf_counter()
    with context.Pool(writers) as pool:
        figures = pool.starmap(write, [(target, w, updates) for w in range(writers)])
    seconds = time.perf_counter() - started
    log = store.load(THREAD).state.log
    store.close()
    seen = Counter(
        str(message["content"]).split(":", 1)[0] for message in log[1:] if message["role"] == "user"
    )
    done = [tag for f in figures for tag in f.done]
    given_up = [tag for f in figures for tag in f.given_up]
    return Result(
        writers=writers,
        updates=writers * updates,
        given_up=len(given_up),
        latencies=[s for f in figures for s in f.latencies],
        applied=sum(f.applied for f in figures),
        lost=sum(1 for tag in done if seen[tag] == 0) + sum(1 for tag in given_up if seen[tag]),
        duplicated=sum(1 for count in seen.values() if count > 1),
        seconds=seconds,
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


def fresh(target: str, writers: int) -> str:
    """A target holding nothing yet: a new SQLite file, or a new PostgreSQL schema."""
    if target.startswith("postgresql://"):
        import psycopg  # noqa: PLC0415 - the postgres extra

        schema = f"contention_{writers}_{time.time_ns()}"
        with psycopg.connect(target, autocommit=True) as db:
            db.execute(f"CREATE SCHEMA {schema}")
        separator = "&" if "?" in target else "?"
        return f"{target}{separator}options=-csearch_path%3D{schema},public"
    return str(Path(target) / f"contention-{writers}.db")


def row(backend: str, result: Result) -> str:
    """One line of the table."""
    share = result.given_up / result.updates
    latency = " ".join(
        f"{value:>8.1f}"
        for value in (
            percentile(result.latencies, 0.5),
            percentile(result.latencies, 0.99),
            max(result.latencies) * 1e3,
        )
    )
    return (
        f"{backend:<9} {result.writers:>7} {result.updates:>7} {result.given_up:>7} "
        f"{share:>6.1%} {latency} {result.applied / result.updates:>8.2f} "
        f"{result.lost:>5} {result.duplicated:>5} {result.seconds:>7.1f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Race 4, 8 and 16 writers (or ``--writers``) on each backend and print one table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--writers", type=int, nargs="+", default=list(WRITERS))
    parser.add_argument("--updates", type=int, default=UPDATES, help="updates per writer")
    parser.add_argument(
        "--postgres", metavar="URL", help="an empty database (default: a throwaway server)"
    )
    parser.add_argument(
        "--backends", nargs="+", default=["postgres"], choices=["sqlite", "postgres"]
    )
    args = parser.parse_args(argv)
    print(f"{args.updates} updates per writer on one thread")
    print(
        f"{'backend':<9} {'writers':>7} {'updates':>7} {'gave up':>7} {'share':>6} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'applied':>8} {'lost':>5} {'twice':>5} "
        f"{'seconds':>7}"
    )
    needed = "postgres" in args.backends
    with (
        tempfile.TemporaryDirectory() as directory,
        postgres_target(args.postgres, needed=needed) as url,
    ):
        for backend in args.backends:
            base = url if backend == "postgres" else directory
            for writers in args.writers:
                print(row(backend, run(fresh(base, writers), writers, args.updates)), flush=True)


if __name__ == "__main__":
    main()
