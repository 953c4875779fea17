"""PostgresStore reads at scale: load, get(range), search and events at 100k and 1M+ messages.

    python bench/store_scale.py                              # 200 and 2,000 threads x 500 messages
    python bench/store_scale.py --threads 2000 --messages 1000 --postgres postgresql://u@h/db

The tables are filled on the server (``generate_series``: every thread gets ``--messages``
alternating user and assistant messages with distinct text, the first 80% of them archived by one
compaction event, and a saved state), once with ``--threads / --growth`` threads and once with
``--threads``. The store then reads threads picked at random: ``load`` (the whole thread),
``get`` of a 50-message range, ``search`` (the thread's primary-key range, filtered) for a string
that occurs in one message of the thread and for one that occurs in every message, and
``events``. The figures are median milliseconds per call; the ratio column is large / small, near
1.0 when the indexes keep a thread's reads independent of how much else the database holds. The
query plans are printed too.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from fleet import fresh, postgres_target

from progsum import Compactor, ConversationState, Policy, SummaryRequest, SummaryUpdate
from progsum.store._postgres import PostgresStore
from progsum.store._rows import dump_state
from progsum.testing import FunctionSummarizer

THREADS = 2_000
MESSAGES = 500
GROWTH = 10
CALLS = 40
WARM_UP = 5

_FILL = """
INSERT INTO progsum_messages (thread_id, idx, message, archived_at, event)
SELECT 'thread-' || t, i,
       json_build_object(
           'role', CASE WHEN i %% 2 = 0 THEN 'user' ELSE 'assistant' END,
           'content', 'thread ' || t || ' message ' || i || ': ' || md5(t || '-' || i)
       )::text,
       CASE WHEN i BETWEEN 1 AND %(folded)s - 1 THEN now() END,
       CASE WHEN i BETWEEN 1 AND %(folded)s - 1 THEN 1 END
FROM generate_series(0, %(threads)s - 1) AS t, generate_series(0, %(messages)s - 1) AS i
"""
_EVENTS = """
INSERT INTO progsum_events
SELECT 'thread-' || t, 1, %(event)s FROM generate_series(0, %(threads)s - 1) t
"""
_STATES = """
INSERT INTO progsum_states
SELECT 'thread-' || t, 1, %(messages)s, 1,
       replace(%(state)s, '"thread_id": "template"', '"thread_id": "thread-' || t || '"'), now()
FROM generate_series(0, %(threads)s - 1) t
"""


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """An instant fake summarizer."""
    return SummaryUpdate(add={"established_facts": [f"Read up to {request.segment.end}."]})


def template(messages: int) -> tuple[str, str, int]:
    """A compacted state of ``messages`` messages: its event JSON, state JSON and fold end."""
    log = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: " + "x " * 20}
        for i in range(messages)
    ]
    keep = messages // 5
    compactor = Compactor(
        policy=Policy(context_window=100_000, keep=("messages", keep)),
        summarizer=FunctionSummarizer(facts),
    )
    state = compactor.compact(ConversationState(log, thread_id="template"), force=True)
    event = state.events[-1]
    if event.folded is None:
        raise RuntimeError(f"the template compaction folded nothing: {event!r}")
    return event.model_dump_json(), dump_state(state), event.folded[1]


def fill(url: str, threads: int, messages: int) -> None:
    """Create the tables (through the store) and fill them on the server."""
    PostgresStore(url).close()
    event, state, folded = template(messages)
    params = {"threads": threads, "messages": messages, "folded": folded}
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(_FILL, params)
        db.execute(_EVENTS, {**params, "event": event})
        db.execute(_STATES, {**params, "state": state})
        db.execute("ANALYZE progsum_messages; ANALYZE progsum_events; ANALYZE progsum_states")


def median_ms(call: Callable[[str, random.Random], object], threads: int) -> float:
    """Median milliseconds of ``call`` on random threads."""
    rng = random.Random(threads)
    for _ in range(WARM_UP):  # connections opened, statements prepared, caches warm
        call(f"thread-{rng.randrange(threads)}", rng)
    times = []
    for _ in range(CALLS):
        thread = f"thread-{rng.randrange(threads)}"
        started = time.perf_counter()
        call(thread, rng)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def measure(url: str, threads: int, messages: int) -> dict[str, float]:
    """Median milliseconds per read, by kind."""
    store = PostgresStore(url)

    def rare(thread: str, rng: random.Random) -> object:
        i = rng.randrange(1, messages * 4 // 5)
        t = thread.removeprefix("thread-")
        digest = hashlib.md5(f"{t}-{i}".encode()).hexdigest()  # noqa: S324 - the fill's text, not a secret
        return store.search(thread, digest[:12])

    def ranged(thread: str, rng: random.Random) -> object:
        start = rng.randrange(1, messages * 4 // 5 - 50)
        return store.get(thread, start, start + 50)

    figures = {
        "load (whole thread)": median_ms(lambda t, _: store.load(t), threads),
        "get (50 messages)": median_ms(ranged, threads),
        "search (one match)": median_ms(rare, threads),
        "search (every message, limit 20)": median_ms(
            lambda t, _: store.search(t, "message"), threads
        ),
        "events": median_ms(lambda t, _: store.events(t), threads),
    }
    store.close()
    return figures


_ARCHIVED = (
    "SELECT idx FROM progsum_messages WHERE thread_id = 'thread-7' AND archived_at IS NOT NULL"
)
_SEARCH_PLAN = _ARCHIVED + " AND lower(message) LIKE '%0a1b2c3d4e5f%' ORDER BY idx LIMIT 20"
_GET_PLAN = _ARCHIVED + " AND idx >= 100 AND idx < 150 ORDER BY idx"


def plans(url: str) -> list[str]:
    """The query plans of search and get on the large database."""
    lines = []
    with psycopg.connect(url) as db:
        for query in (_SEARCH_PLAN, _GET_PLAN):
            rows = db.execute(("EXPLAIN " + query).encode()).fetchall()
            lines += [str(row[0]) for row in rows] + [""]
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    """Fill two sizes, time the reads, print the table, the ratios and the plans."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--threads", type=int, default=THREADS, help="threads of the large size")
    parser.add_argument("--messages", type=int, default=MESSAGES, help="messages per thread")
    parser.add_argument("--growth", type=int, default=GROWTH, help="large / small threads")
    parser.add_argument("--postgres", metavar="URL", help="a database (default: a throwaway one)")
    args = parser.parse_args(argv)
    sizes = [max(1, args.threads // args.growth), args.threads]
    results = []
    with postgres_target(args.postgres, needed=True) as url:
        for size in sizes:
            target = fresh(url, size)
            started = time.perf_counter()
            fill(target, size, args.messages)
            filled = time.perf_counter() - started
            print(f"{size:,} threads x {args.messages:,} messages filled in {filled:.0f} s")
            results.append(measure(target, size, args.messages))
        print()
        small, large = (f"{n * args.messages:,} msgs" for n in sizes)
        print(f"{'median ms per call':<34} {small:>12} {large:>12} {'ratio':>6}")
        for kind in results[0]:
            a, b = results[0][kind], results[1][kind]
            print(f"{kind:<34} {a:>12.2f} {b:>12.2f} {b / a:>6.2f}")
        print()
        print("\n".join(plans(target)))


if __name__ == "__main__":
    main()
