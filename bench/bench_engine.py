"""Engine overhead, side by side in one run: per-turn cost, per-compaction cost, summarizer input.

    python bench/bench_engine.py            # full tables (about a minute)
    python bench/bench_engine.py --quick    # smaller repeat counts

Per turn: the cost of ``state.append(message)`` and of ``compactor.maybe_compact(state)`` when
nothing fires, for histories of 100 to 20,000 messages (already compacted once, as in a long agent
run). The target is a flat cost: a few microseconds whatever the history length.

Per compaction: the engine's own cost (split, merge, header render, new state) with an instant fake
summarizer, varying the history length at a fixed segment, and the segment length at a fixed
history. The target is a cost that grows with the segment, not with the history.

Summarizer input: a 2,000-turn session (a user message and a reply per turn) run turn by turn
through ``maybe_compact`` with a fake summarizer that answers like a model would: each compaction
adds a few items carrying exact values (quotes, flight numbers, dates), retires the open threads
the segment answered and the quotes it superseded, and now and then records a decision or a
constraint. Each request the summarizer receives is measured as the prompt a model summarizer
would be sent (`progsum.summarizers.prompt`: the static system prompt plus the prior summary, the
must-keep candidates and the segment), in estimated tokens. The target is a bounded size: the
prior summary grows only by what stays live, and the segment is bounded by the trigger.

Timings are medians of repeated runs on this machine; compare ratios within one run, not across
machines. Garbage collection is paused while timing. Per-turn times are wall-clock
(``perf_counter``: a CPU-time clock costs more than the few microseconds measured); a compaction,
milliseconds long, is timed in this process's CPU time (``process_time``), so that other jobs on a
shared machine do not count.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from progsum import Compactor, ConversationState, Policy, Summary, SummaryRequest, SummaryUpdate
from progsum.policy._policy import Threshold
from progsum.policy._tokens import HeuristicCounter
from progsum.summarizers.prompt._text import system_prompt, user_prompt
from progsum.summary._update import Retirement
from progsum.testing import FunctionSummarizer

HISTORIES = (100, 1_000, 5_000, 20_000)
SEGMENTS = (10, 100, 1_000, 5_000)
SESSION_TURNS = 2_000
"""Turns (a user message and a reply each) of the chained-compaction session."""
SESSION_TRIGGER = 6_000
"""Trigger of the chained-compaction session, in tokens."""
SESSION_KEEP = 8
"""Messages the chained-compaction session keeps verbatim."""
LIVE_FACTS = 6
"""Facts the fake summarizer leaves live; older quotes are retired as superseded."""
LIVE_REJECTED = 4
"""Rejected options the fake summarizer leaves live."""

BENCH_KEEP: Threshold = ("messages", 8)
"""The per-turn rows' tail: a long run compacted once keeps a short tail live (a forced
compaction with the fitted default would keep half the history)."""

HOTELS = ("Memmo Alfama", "Bairro Alto Hotel", "Lumiares", "Santiago de Alfama", "The Lumnia")


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


def per_turn(history: int, turns: int, *, compacted: bool = True) -> tuple[float, float]:
    """Median microseconds of one append and of one maybe_compact that does not fire.

    Recall is off here (`recall_turn` times a person's message with it on).

    Args:
        history: Messages in the log before the timed turns.
        turns: Timed turns.
        compacted: Compact the history once first (only a short tail live, as in a long agent
            run); else all ``history`` messages are live in a window large enough for them.
    """
    policy = (
        Policy(model="claude-sonnet-4-6", keep=BENCH_KEEP, recall_budget=None)
        if compacted
        else Policy(context_window=4_000_000, recall_budget=None)
    )
    compactor = Compactor(policy=policy, summarizer=FunctionSummarizer(one_fact))
    if compacted:
        state = long_state(history, compactor)
    else:
        state = ConversationState([message(n) for n in range(history)])
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


def recall_turn(history: int, turns: int) -> float:
    """Median microseconds of maybe_compact on a person's new message, recall on, nothing due.

    The message asks about a folded message by its number: its other words are in every folded
    message, so they score but do not pick (`progsum.recall._rank.SELECTIVE`). The history is
    compacted once first (as in `per_turn`), so the query ranks the folded messages of the
    state's own log; the index is built before the timed turns.
    """
    compactor = Compactor(
        policy=Policy(model="claude-sonnet-4-6", keep=BENCH_KEEP),
        summarizer=FunctionSummarizer(one_fact),
    )
    state = compactor.maybe_compact(long_state(history, compactor))
    timings: list[float] = []
    gc.disable()
    try:
        for n in range(turns):
            asked = 10 + (7 * n) % (history // 2 - 10)  # a folded message, by its number
            question = f"Message {history + 2 * n}: which itineraries did message {asked} compare?"
            grown = state.append({"role": "user", "content": question})
            start = time.perf_counter_ns()
            after = compactor.maybe_compact(grown)
            timings.append((time.perf_counter_ns() - start) / 1_000)
            if len(after.events) != len(grown.events) or after.recall is None:
                msg = "the timed turn compacted or recalled nothing; enlarge the window"
                raise RuntimeError(msg)
            state = after.append(message(history + 2 * n + 1))
    finally:
        gc.enable()
    return statistics.median(timings)


def per_compaction(history: int, segment: int, repeats: int) -> float:
    """Median CPU milliseconds of one compaction folding ``segment`` of ``history`` messages."""
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
    gc.collect()
    gc.disable()  # as per turn: a collection's cost depends on everything else alive
    try:
        for _ in range(repeats):
            start = time.process_time_ns()
            after = compactor.compact(state, force=True)
            timings.append((time.process_time_ns() - start) / 1e6)
            folded = next(e.folded for e in reversed(after.events) if e.outcome == "compacted")
            if folded != (history - segment - 2, history - 2):  # a consolidation may follow it
                msg = f"unexpected fold {folded}"
                raise RuntimeError(msg)
    finally:
        gc.enable()
    return statistics.median(timings)


# -- summarizer input across chained compactions -------------------------------------------------


def session_message(n: int) -> dict[str, Any]:
    """Message ``n`` of a long trip-planning session: questions with exact values, then answers."""
    turn, hotel = n // 2, HOTELS[(n // 2) % len(HOTELS)]
    price = 95 + (turn * 37) % 160
    day = 1 + turn % 28
    if n == 0:
        text = (
            "Plan a 10-day Lisbon trip for two in May 2027. Budget: $3,000 in total. Never book "
            "a check-in before 9am."
        )
        return {"role": "user", "content": text}
    if n % 2 == 0:
        text = (
            f"Turn {turn}: what does {hotel} cost for the nights of 2027-05-{day:02d}? "
            "Something quiet, please."
        )
        return {"role": "user", "content": text}
    text = (
        f"{hotel} quotes ${price} a night for 2027-05-{day:02d} (ref HX-{turn:05d}); breakfast "
        f"is included and the room faces the river. The flight TP{1_000 + turn % 900} lands at "
        f"{8 + turn % 12:02d}:{(turn * 7) % 60:02d}, so the transfer fits. Shall I hold it?"
    )
    return {"role": "assistant", "content": text}


_QUOTE = re.compile(
    r"(?P<hotel>.+?) quotes \$(?P<price>\d+) a night for (?P<date>\S+) \(ref (?P<ref>HX-\d+)\).*"
    r"The flight (?P<flight>TP\d+) lands at (?P<time>\d\d:\d\d)"
)


def session_summarizer() -> FunctionSummarizer:
    """A fake summarizer that updates the summary as an honest model would over a long session.

    Compaction k reads the segment's last quote and records it and its flight as two facts with
    the quote's exact values, plus one open thread; it retires the open threads the segment
    answered and all but the last `LIVE_FACTS` facts (superseded quotes); every 3rd compaction
    rejects the previous quote (keeping the last `LIVE_REJECTED`). Every value it writes is copied
    from the segment or the prior summary, as the engine's contract requires.
    """
    numbers = itertools.count(1)

    def update(request: SummaryRequest[Any]) -> SummaryUpdate:
        k = next(numbers)
        prior = request.prior
        segment = request.segment
        quotes = [
            found
            for _, message in segment
            if message["role"] == "assistant" and (found := _QUOTE.search(message["content"]))
        ]
        if not quotes:
            return SummaryUpdate()
        quote = quotes[-1]
        ref = quote["ref"]
        add: dict[str, list[str]] = {
            "established_facts": [
                f"Quote {ref}: {quote['hotel']} at ${quote['price']} a night on {quote['date']}.",
                f"Flight {quote['flight']} lands at {quote['time']}.",
            ],
            "open_threads": [f"Confirm {ref} with the hotel."],
        }
        retire = [
            Retirement(id=item.id, reason=f"answered by {ref}") for item in prior.open_threads
        ]
        facts = prior.established_facts
        retire += [
            Retirement(id=item.id, reason=f"superseded by {ref}")
            for item in facts[: max(0, len(facts) + 2 - LIVE_FACTS)]
        ]
        if k % 3 == 0 and len(quotes) > 1:
            add["rejected"] = [f"{quotes[-2]['ref']}: over the nightly limit."]
            rejected = prior.rejected
            retire += [
                Retirement(id=item.id, reason="no longer relevant")
                for item in rejected[: max(0, len(rejected) + 1 - LIVE_REJECTED)]
            ]
        objective = "Plan a 10-day Lisbon trip for two in May 2027." if k == 1 else None
        return SummaryUpdate(
            objective=objective, add={f: tuple(t) for f, t in add.items()}, retire=tuple(retire)
        )

    return FunctionSummarizer(update)


@dataclass(frozen=True, slots=True)
class RequestSize:
    """The size of one summarizer request, in estimated tokens."""

    number: int
    """1-based compaction number."""
    live_items: int
    """Live items of the prior summary."""
    prior: int
    """The prior summary as the model sees it (objective and items with ids)."""
    segment_messages: int
    segment: int
    """The segment's messages."""
    prompt: int
    """The whole request as a model summarizer sends it: system prompt plus user prompt."""


def request_size(
    request: SummaryRequest[Any], number: int, counter: HeuristicCounter
) -> RequestSize:
    """Measure ``request`` as the prompt a model summarizer would send for it."""
    prior = request.prior
    spec = request.spec
    items = [item for f in spec.lists for item in getattr(prior, f.name)]
    objective = getattr(prior, spec.objective.name) if spec.objective else ""
    prior_text = "\n".join([objective, *(f"- [{i.id}] {i.text}" for i in items)])
    # no message of this session is long enough for the Anthropic summarizer's clipping
    prompt = system_prompt() + "\n" + user_prompt(request, clip_chars=None)
    return RequestSize(
        number=number,
        live_items=len(items),
        prior=counter.count_text(prior_text) if items or objective else 0,
        segment_messages=len(request.segment),
        segment=sum(counter.count_message(m) for m in request.segment.messages),
        prompt=counter.count_text(prompt),
    )


def summarizer_inputs(
    turns: int, *, trigger: int = SESSION_TRIGGER, keep: int = SESSION_KEEP
) -> tuple[list[RequestSize], int]:
    """Run a ``turns``-turn session through ``maybe_compact``; measure every summarizer request.

    Returns:
        The size of each request, and the estimated tokens of the whole log at the end.
    """
    summarizer = session_summarizer()
    compactor = Compactor(
        policy=Policy(context_window=200_000, trigger=("tokens", trigger), keep=("messages", keep)),
        summarizer=summarizer,
        schema=Summary,
    )
    state: ConversationState[Summary] = ConversationState()
    for n in range(2 * turns):
        state = compactor.maybe_compact(state.append(session_message(n)))
    compacted = [e for e in state.events if e.outcome == "compacted"]
    if len(compacted) != len(summarizer.requests):
        msg = f"{len(summarizer.requests)} requests but {len(compacted)} compactions"
        raise RuntimeError(msg)
    counter = HeuristicCounter()
    whole = sum(counter.count_message(m) for m in state.log)
    return [request_size(r, k, counter) for k, r in enumerate(summarizer.requests, 1)], whole


def print_summarizer_inputs(turns: int, sizes: Sequence[RequestSize], whole: int) -> None:
    """Print first/median/max request sizes and the ratio max/first."""
    if not sizes:
        print(f"Summarizer input: no compaction in {turns:,} turns; lengthen the session")
        return
    print(
        f"Summarizer input across {len(sizes)} chained compactions over a {turns:,}-turn session "
        f"(estimated tokens; trigger {SESSION_TRIGGER:,} tokens, keep {SESSION_KEEP} messages)"
    )
    print(
        f"{'request':>10} | {'#':>4} | {'live items':>10} | {'prior summary':>13} | "
        f"{'segment':>14} | {'whole prompt':>12}"
    )
    median_prompt = statistics.median_low([s.prompt for s in sizes])
    rows: list[tuple[str, Callable[[], RequestSize]]] = [
        ("first", lambda: sizes[0]),
        ("median", lambda: next(s for s in sizes if s.prompt == median_prompt)),
        ("max", lambda: max(sizes, key=lambda s: s.prompt)),
        ("last", lambda: sizes[-1]),
    ]
    for label, pick in rows:
        s = pick()
        segment = f"{s.segment:,} ({s.segment_messages} msgs)"
        print(
            f"{label:>10} | {s.number:>4} | {s.live_items:>10} | {s.prior:>13,} | {segment:>14} | "
            f"{s.prompt:>12,}"
        )
    first, largest = sizes[0].prompt, max(s.prompt for s in sizes)
    print(f"ratio max / first request: {largest / first:.2f}x")
    print(f"largest prior summary: {max(s.prior for s in sizes):,} tokens")
    print(f"the whole log at the end (what re-summarizing everything would read): {whole:,}\n")


def workload_parser(description: str) -> argparse.ArgumentParser:
    """The options of the shared workloads (histories, segments, session), for both scripts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--histories", type=int, nargs="+", default=list(HISTORIES), help="history lengths"
    )
    parser.add_argument(
        "--segments", type=int, nargs="+", default=list(SEGMENTS), help="segment lengths"
    )
    parser.add_argument(
        "--session-turns",
        type=int,
        default=SESSION_TURNS,
        help=f"turns of the chained-compaction session (default {SESSION_TURNS:,})",
    )
    parser.add_argument("--turns", type=int, help="timed turns per history (overrides --quick)")
    parser.add_argument("--repeats", type=int, help="timed compactions (overrides --quick)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Print the tables."""
    args = workload_parser((__doc__ or "").split("\n")[0]).parse_args(argv)
    turns, repeats = (300, 5) if args.quick else (3_000, 25)
    turns, repeats = args.turns or turns, args.repeats or repeats
    histories: list[int] = args.histories
    segments: list[int] = args.segments
    longest = histories[-1]

    print("Per turn, nothing fires (median µs)")
    print(f"{'history':>8} | {'append':>8} | {'maybe_compact':>13} | {'together':>8}")
    rows = []
    for history in histories:
        append, check = per_turn(history, turns)
        rows.append(append + check)
        print(f"{history:>8,} | {append:>8.2f} | {check:>13.2f} | {append + check:>8.2f}")
    print(f"ratio {longest:,} / {histories[0]:,} messages: {rows[-1] / rows[0]:.2f}x\n")

    print("A person's new message with recall on: the query over the folded log (median µs)")
    print(f"{'history':>8} | {'maybe_compact':>13}")
    for history in histories:
        print(f"{history:>8,} | {recall_turn(history, turns):>13.2f}")
    print()

    print("Per compaction, engine only (median CPU ms, instant fake summarizer)")
    print(f"{'history':>8} | {'segment':>8} | {'ms':>8}")
    fixed_segment = [per_compaction(history, 50, repeats) for history in histories]
    for history, ms in zip(histories, fixed_segment, strict=True):
        print(f"{history:>8,} | {50:>8,} | {ms:>8.3f}")
    fixed_history = [per_compaction(longest, segment, repeats) for segment in segments]
    for segment, ms in zip(segments, fixed_history, strict=True):
        print(f"{longest:>8,} | {segment:>8,} | {ms:>8.3f}")
    print(
        f"ratio history {longest:,} / {histories[0]:,} at segment 50: "
        f"{fixed_segment[-1] / fixed_segment[0]:.2f}x"
    )
    print(
        f"ratio segment {segments[-1]:,} / {segments[0]:,} at history {longest:,}: "
        f"{fixed_history[-1] / fixed_history[0]:.2f}x\n"
    )

    print_summarizer_inputs(args.session_turns, *summarizer_inputs(args.session_turns))


if __name__ == "__main__":
    main()
