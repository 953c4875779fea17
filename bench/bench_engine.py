"""Engine overhead, side by side in one run: per-turn cost and per-compaction cost.

    python bench/bench_engine.py            # full table (about a minute)
    python bench/bench_engine.py --quick    # smaller repeat counts

Per turn: the cost of ``state.append(message)`` and of ``compactor.maybe_compact(state)`` when
nothing fires, for histories of 100 to 20,000 messages (already compacted once, as in a long agent
run). The target is a flat cost: a few microseconds whatever the history length.

Per compaction: the engine's own cost (split, merge, header render, new state) with an instant fake
summarizer, varying the history length at a fixed segment, and the segment length at a fixed
history. The target is a cost that grows with the segment, not with the history.

Timings are medians of repeated runs on this machine; compare ratios within one run, not across
machines.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

from progsum import Compactor, ConversationState, Policy, SummaryRequest, SummaryUpdate
from progsum.testing import FunctionSummarizer

HISTORIES = (100, 1_000, 5_000, 20_000)
SEGMENTS = (10, 100, 1_000, 5_000)


def message(n: int) -> dict[str, Any]:
    """A plain chat message of about 40 tokens, alternating roles."""
    role = "user" if n % 2 == 0 else "assistant"
    return {
        "role": role,
        "content": f"Message {n}: we compared two itineraries and kept the cheaper one.",
    }


def one_fact(request: SummaryRequest) -> SummaryUpdate:
    """An instant summarizer: one fact per segment."""
    return SummaryUpdate(add={"established_facts": [f"Segment {request.segment.start} done."]})


def long_state(history: int, compactor: Compactor[Any]) -> ConversationState:
    """A state with ``history`` messages, compacted once so that only a short tail is live."""
    state = ConversationState([message(n) for n in range(history)])
    return compactor.compact(state, force=True)


def per_turn(history: int, turns: int) -> tuple[float, float]:
    """Median microseconds of one append and of one maybe_compact that does not fire."""
    compactor = Compactor(
        policy=Policy(model="claude-sonnet-4-5"), summarizer=FunctionSummarizer(one_fact)
    )
    state = long_state(history, compactor)
    compactor.maybe_compact(state)  # warm the token cache
    appends: list[float] = []
    checks: list[float] = []
    gc.disable()
    try:
        for n in range(turns):
            start = time.perf_counter_ns()
            grown = state.append(message(history + n))
            middle = time.perf_counter_ns()
            after = compactor.maybe_compact(grown)
            end = time.perf_counter_ns()
            if after is not grown:
                msg = "compaction fired during the per-turn benchmark; enlarge the window"
                raise RuntimeError(msg)
            state = grown
            appends.append((middle - start) / 1_000)
            checks.append((end - middle) / 1_000)
    finally:
        gc.enable()
    return statistics.median(appends), statistics.median(checks)


def per_compaction(history: int, segment: int, repeats: int) -> float:
    """Median milliseconds of one compaction folding ``segment`` messages of a longer history."""
    compactor = Compactor(
        policy=Policy(trigger=("messages", 10), keep=("messages", 2)),
        summarizer=FunctionSummarizer(one_fact),
    )
    # fold the older history first (keeping 2), so the timed compaction folds exactly `segment`
    state = ConversationState([message(n) for n in range(history - segment)])
    state = compactor.compact(state, force=True)
    state = state.extend(message(n) for n in range(history - segment, history))
    compactor.maybe_compact(state)  # warm caches; returns a new state, `state` stays uncompacted
    timings: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        after = compactor.compact(state, force=True)
        timings.append((time.perf_counter_ns() - start) / 1e6)
        if after.events[-1].folded != (history - segment - 2, history - 2):
            msg = f"unexpected fold {after.events[-1].folded}"
            raise RuntimeError(msg)
    return statistics.median(timings)


def main() -> None:
    """Print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    turns, repeats = (300, 5) if args.quick else (3_000, 25)

    print("Per turn, nothing fires (median µs)")
    print(f"{'history':>8} | {'append':>8} | {'maybe_compact':>13} | {'together':>8}")
    rows = []
    for history in HISTORIES:
        append, check = per_turn(history, turns)
        rows.append(append + check)
        print(f"{history:>8,} | {append:>8.2f} | {check:>13.2f} | {append + check:>8.2f}")
    print(f"ratio 20,000 / 100 messages: {rows[-1] / rows[0]:.2f}x\n")

    print("Per compaction, engine only (median ms, instant fake summarizer)")
    print(f"{'history':>8} | {'segment':>8} | {'ms':>8}")
    fixed_segment = [per_compaction(history, 50, repeats) for history in HISTORIES]
    for history, ms in zip(HISTORIES, fixed_segment, strict=True):
        print(f"{history:>8,} | {50:>8,} | {ms:>8.3f}")
    fixed_history = [per_compaction(20_000, segment, repeats) for segment in SEGMENTS]
    for segment, ms in zip(SEGMENTS, fixed_history, strict=True):
        print(f"{20_000:>8,} | {segment:>8,} | {ms:>8.3f}")
    print(f"ratio history 20,000 / 100 at segment 50: {fixed_segment[-1] / fixed_segment[0]:.2f}x")
    print(
        f"ratio segment 5,000 / 10 at history 20,000: {fixed_history[-1] / fixed_history[0]:.2f}x"
    )


if __name__ == "__main__":
    main()
