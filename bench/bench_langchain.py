"""progsum beside LangChain's SummarizationMiddleware: the same workloads, ratios in one run.

    python -m pip install -e ".[bench]"     # LangChain >= 1.0, langchain-core
    python bench/bench_langchain.py          # about a minute
    python bench/bench_langchain.py --quick

Without LangChain it prints how to install the ``bench`` extra and exits 0. Nothing touches the
network: LangChain's summaries come from ``GenericFakeChatModel`` (langchain-core's fake chat
model), progsum's from an instant `progsum.testing.FunctionSummarizer`.

Per turn, nothing fires: a conversation of 100 to 20,000 live messages (the messages of
`bench_engine.message`) in a window large enough for all of them, then one more message per turn.
progsum: ``state.append`` + ``compactor.maybe_compact``, turn after turn (its cost does not depend
on the length). LangChain: the agent graph's ``add_messages`` reducer (how a LangGraph agent
appends to its state) + the middleware's ``before_model`` hook, which runs before every model
call, each turn on the same history plus one message. Garbage collection is paused while timing,
as in `bench_engine`.

Per compaction: one compaction folding a segment of 10 to 5,000 messages and keeping 2.
progsum folds them out of a 20,000-message log (the longest history; `bench_engine.per_compaction`);
LangChain's state holds no folded history (a summarization replaces it), so its input is a prior
summary message, the 2 kept messages and the segment, with ``trigger=("messages", 10)`` and
``keep=("messages", 2)``.

Summarizer input across chained compactions: the 2,000-turn session of `bench_engine`, turn by
turn, both with a 6,000-token trigger and 8 kept messages (each library counts tokens its own
way). LangChain's input is the prompt its summary model would get (its ``summary_prompt`` over the
messages it hands the summarizer, recorded through the middleware's ``summarizer`` hook); by
default it trims them to the last 4,000 of its tokens, so the table also shows how many requests
still carried the prior summary.

Timings are medians on this machine, clocked as in `bench_engine` (per turn: wall clock; per
compaction: this process's CPU time); compare the ratios within one run.
"""

from __future__ import annotations

import gc
import importlib
import itertools
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import (  # a sibling script, found through the path above
    SESSION_KEEP,
    SESSION_TRIGGER,
    message,
    per_compaction,
    per_turn,
    session_message,
    summarizer_inputs,
    workload_parser,
)

from progsum.policy._tokens import HeuristicCounter

INSTALL = (
    'LangChain is not installed; install the bench extra (python -m pip install -e ".[bench]") '
    "to compare progsum with its SummarizationMiddleware"
)
SUMMARY_TEXT = (
    "## SESSION INTENT\nPlan a 10-day Lisbon trip for two in May 2027 within $3,000.\n\n"
    "## SUMMARY\nHotels were compared night by night; the cheapest quote so far is kept.\n\n"
    "## ARTIFACTS\nNone\n\n## NEXT STEPS\nConfirm the latest quote with the hotel."
)
"""What the fake summary model answers: a short summary in LangChain's default sections."""
SUMMARY_MARKER = "Here is a summary of the conversation to date"
"""How LangChain's summary message starts."""
LONG_TRIGGER = 10**9
"""A token trigger that never fires."""
FOLDED_UPDATE = 4
"""Messages in the middleware's update after a fold keeping 2: remove-all, summary, 2 kept."""


@dataclass(frozen=True, slots=True)
class LangChain:
    """The LangChain names this benchmark uses (untyped: LangChain is an optional extra)."""

    middleware: Any
    """``langchain.agents.middleware.SummarizationMiddleware``."""
    fake_model: Any
    """``langchain_core.language_models.fake_chat_models.GenericFakeChatModel``."""
    human: Any
    ai: Any
    add_messages: Any
    """``langgraph.graph.message.add_messages``: the agent state's message reducer."""
    buffer_string: Any
    """``langchain_core.messages.get_buffer_string``."""
    version: str


def load_langchain() -> LangChain | None:
    """LangChain's names, or None when the ``bench`` extra is not installed."""
    try:
        middleware = importlib.import_module("langchain.agents.middleware")
        fakes = importlib.import_module("langchain_core.language_models.fake_chat_models")
        messages = importlib.import_module("langchain_core.messages")
        graph = importlib.import_module("langgraph.graph.message")
        langchain = importlib.import_module("langchain")
    except ImportError:
        return None
    return LangChain(
        middleware=middleware.SummarizationMiddleware,
        fake_model=fakes.GenericFakeChatModel,
        human=messages.HumanMessage,
        ai=messages.AIMessage,
        add_messages=graph.add_messages,
        buffer_string=messages.get_buffer_string,
        version=str(langchain.__version__),
    )


def lc_message(lc: LangChain, data: dict[str, Any]) -> Any:  # noqa: ANN401 - a LangChain message
    """A progsum benchmark message as a LangChain message."""
    kind = lc.human if data["role"] == "user" else lc.ai
    return kind(content=data["content"])


def fake_model(lc: LangChain) -> Any:  # noqa: ANN401 - a LangChain chat model
    """A chat model that answers every call with `SUMMARY_TEXT`."""
    return lc.fake_model(messages=itertools.cycle([lc.ai(content=SUMMARY_TEXT)]))


def lc_per_turn(lc: LangChain, history: int, turns: int) -> tuple[float, float]:
    """Median microseconds of one ``add_messages`` and one ``before_model`` that does not fire.

    Each turn appends one message to the same ``history`` messages (the reducer returns a new
    list), so every timed turn sees ``history + 1`` messages.
    """
    middleware = lc.middleware(
        model=fake_model(lc), trigger=("tokens", LONG_TRIGGER), keep=("messages", 20)
    )
    base = lc.add_messages([], [lc_message(lc, message(n)) for n in range(history)])
    middleware.before_model({"messages": base}, None)  # warm up
    appends: list[float] = []
    checks: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for n in range(turns):
            new = lc_message(lc, message(history + n))
            start = time.perf_counter_ns()
            messages = lc.add_messages(base, [new])
            middleware_start = time.perf_counter_ns()
            update = middleware.before_model({"messages": messages}, None)
            end = time.perf_counter_ns()
            if update is not None:
                msg = "LangChain summarized during the per-turn benchmark; raise its trigger"
                raise RuntimeError(msg)
            appends.append((middleware_start - start) / 1_000)
            checks.append((end - middleware_start) / 1_000)
    finally:
        gc.enable()
    return statistics.median(appends), statistics.median(checks)


def lc_per_compaction(lc: LangChain, segment: int, repeats: int) -> float:
    """Median CPU milliseconds of one summarization folding ``segment`` messages, keeping 2."""
    middleware = lc.middleware(model=fake_model(lc), trigger=("messages", 10), keep=("messages", 2))
    summary = lc.human(content=f"{SUMMARY_MARKER}:\n\n{SUMMARY_TEXT}")
    kept = [lc_message(lc, message(n)) for n in range(2)]
    fresh = [lc_message(lc, message(n)) for n in range(2, 2 + segment)]
    messages = lc.add_messages([], [summary, *kept, *fresh])
    middleware.before_model({"messages": messages}, None)  # warm up
    timings: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.process_time_ns()
            update = middleware.before_model({"messages": messages}, None)
            timings.append((time.process_time_ns() - start) / 1e6)
            if update is None or len(update["messages"]) != FOLDED_UPDATE:
                msg = f"LangChain did not fold the segment as expected: {update!r:.200}"
                raise RuntimeError(msg)
    finally:
        gc.enable()
    return statistics.median(timings)


@dataclass(frozen=True, slots=True)
class LcRequest:
    """One summarization request of LangChain's, in progsum's estimated tokens."""

    prompt: int
    """The prompt its summary model would get: ``summary_prompt`` over the messages."""
    messages: int
    """Messages handed to the summarizer, after its trimming."""
    folded: int
    """Messages the summarization removed from the state."""
    has_prior: bool
    """The prior summary was among the messages handed over."""


def lc_summarizer_inputs(lc: LangChain, turns: int) -> list[LcRequest]:
    """Run the `bench_engine` session through the middleware; measure each summary request."""
    counter = HeuristicCounter()
    seen: list[tuple[int, int, bool]] = []
    template: list[str] = []

    def summarize(messages: list[Any]) -> str:
        prompt = template[0].format(messages=lc.buffer_string(messages, format="xml")).rstrip()
        prior = any(SUMMARY_MARKER in str(m.content) for m in messages)
        seen.append((counter.count_text(prompt), len(messages), prior))
        return SUMMARY_TEXT

    middleware = lc.middleware(
        model=fake_model(lc),
        trigger=("tokens", SESSION_TRIGGER),
        keep=("messages", SESSION_KEEP),
        summarizer=summarize,
    )
    template.append(str(middleware.summary_prompt))
    messages: list[Any] = []
    requests: list[LcRequest] = []
    for n in range(2 * turns):
        messages = lc.add_messages(messages, [lc_message(lc, session_message(n))])
        update = middleware.before_model({"messages": messages}, None)
        if update is not None:
            before = len(messages)
            messages = lc.add_messages(messages, update["messages"])
            prompt, count, prior = seen[-1]
            folded = before - (len(messages) - 1)  # the summary message replaces them
            requests.append(LcRequest(prompt, count, folded, prior))
    return requests


# -- output ---------------------------------------------------------------------------------------


def print_per_turn(lc: LangChain, histories: Sequence[int], turns: int) -> None:
    """Per-turn overhead side by side."""
    print("Per turn, nothing fires, all messages live (median µs)")
    print(
        f"{'messages':>8} | {'progsum append + maybe_compact':>30} | "
        f"{'LangChain add_messages + before_model':>37} | {'LangChain / progsum':>19}"
    )
    ours: list[float] = []
    theirs: list[float] = []
    for history in histories:
        append, check = per_turn(history, turns, compacted=False)
        lc_turns = max(5, min(turns, turns * 200 // history))
        lc_append, lc_check = lc_per_turn(lc, history, lc_turns)
        ours.append(append + check)
        theirs.append(lc_append + lc_check)
        ours_text = f"{append + check:,.1f} ({append:.1f} + {check:.1f})"
        theirs_text = f"{lc_append + lc_check:,.0f} ({lc_append:,.0f} + {lc_check:,.0f})"
        print(
            f"{history:>8,} | {ours_text:>30} | {theirs_text:>37} | "
            f"{theirs[-1] / ours[-1]:>18,.0f}x"
        )
    print(
        f"growth {histories[-1]:,} / {histories[0]:,} messages: progsum "
        f"{ours[-1] / ours[0]:.2f}x, LangChain {theirs[-1] / theirs[0]:.1f}x\n"
    )


def print_per_compaction(
    lc: LangChain, history: int, segments: Sequence[int], repeats: int
) -> None:
    """Per-compaction cost side by side; progsum folds out of a ``history``-message log."""
    history = max(history, 2 * max(segments))
    print(
        f"Per compaction, fake summarizers (median CPU ms; progsum folds out of a {history:,}-"
        "message log, LangChain's state holds only its prior summary, 2 kept messages and the "
        "segment)"
    )
    print(f"{'segment':>8} | {'progsum':>8} | {'LangChain':>9} | {'LangChain / progsum':>19}")
    for segment in segments:
        ours = per_compaction(history, segment, repeats)
        theirs = lc_per_compaction(lc, segment, repeats)
        print(f"{segment:>8,} | {ours:>8.3f} | {theirs:>9.3f} | {theirs / ours:>18.1f}x")
    print()


def print_summarizer_inputs(lc: LangChain, turns: int) -> None:
    """Summarizer input across chained compactions, side by side."""
    ours, _ = summarizer_inputs(turns)
    theirs = lc_summarizer_inputs(lc, turns)
    print(
        f"Summarizer input across chained compactions, {turns:,}-turn session (progsum's "
        f"estimated tokens; trigger {SESSION_TRIGGER:,} tokens, keep {SESSION_KEEP} messages)"
    )
    print(
        f"{'':>10} | {'requests':>8} | {'first':>6} | {'median':>6} | {'max':>6} | "
        f"{'max / first':>11} | {'carried the prior summary':>25}"
    )
    rows = [
        ("progsum", [s.prompt for s in ours], len(ours), len(ours) - 1),
        ("LangChain", [r.prompt for r in theirs], len(theirs), sum(r.has_prior for r in theirs)),
    ]
    for name, sizes, count, prior in rows:
        if not sizes:
            print(f"{name:>10} | {0:>8} | no compaction in {turns:,} turns")
            continue
        carried = f"{prior} of {max(0, count - 1)} after the first"
        print(
            f"{name:>10} | {count:>8} | {sizes[0]:>6,} | {statistics.median_low(sizes):>6,} | "
            f"{max(sizes):>6,} | {max(sizes) / sizes[0]:>10.2f}x | {carried:>25}"
        )
    print()


def main(argv: Sequence[str] | None = None) -> None:
    """Print the side-by-side tables, or how to install LangChain."""
    args = workload_parser((__doc__ or "").split("\n")[0]).parse_args(argv)
    lc = load_langchain()
    if lc is None:
        print(INSTALL)
        return
    turns, repeats = (300, 5) if args.quick else (2_000, 15)
    turns, repeats = args.turns or turns, args.repeats or repeats
    print(f"LangChain {lc.version}, SummarizationMiddleware with GenericFakeChatModel\n")
    print_per_turn(lc, args.histories, turns)
    print_per_compaction(lc, max(args.histories), args.segments, repeats)
    print_summarizer_inputs(lc, args.session_turns)


if __name__ == "__main__":
    main()
