"""Per-turn costs and memory of a grown session, each beside a baseline measured in the same run.

Imported by `bench/costs_history.py`, which prints these rows with the others:

* **a quiet turn after an assistant message** on a fresh state of 20,000 chat messages
  (OpenAI dicts; Anthropic dicts with ``usage=``), against the same turn on 100 messages;
* **a person's new message in a grown session, recall on**: the trip-planning session of
  `bench_engine` grown turn by turn (recall on), then a question per timed turn, against the
  same turn in the session grown to a tenth of the size (the cost must not follow the history);
* **the first turn on a second branch**: a retry (the question appended again to the state the
  first attempt was appended to: the log is forked there), against the first attempt's turn,
  which appends to the newest state; and a rollback: a question appended to the state of the
  same chain at half the messages (its log forked there, thousands of messages and folds back);
* **memory**: what a session's state holds (`tracemalloc`, each size in a fresh process, the
  judge's weights and templates loaded first), against the JSON of the messages it adds, on the
  tool-heavy and on the chat workload; and the process-wide overhead (weights, bounded caches).

Timings are wall clock (``perf_counter_ns``), garbage collection paused, minimum and median;
the turns of a row and of its baseline are interleaved so that the machine's drift falls on both.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import multiprocessing
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import SESSION_KEEP, SESSION_TRIGGER, session_message, session_summarizer
from workload import GROWN_WINDOW, Timing, chat, fake, timing, tool_message

from progsum import Compactor, ConversationState, Policy
from progsum.judge._linear import load_model
from progsum.render._requests import render_anthropic
from progsum.testing import FunctionSummarizer

ROOMY = 100_000_000
"""A window no timed turn fills: the timed turns fold nothing."""


def _anthropic_usage(n: int) -> dict[str, int]:
    return {"input_tokens": 1_000 + n, "output_tokens": 263}


def quiet_pair(small: int, large: int, turns: int, *, usage: bool) -> tuple[Timing, Timing]:
    """A turn appending an assistant message on ``large`` and on ``small`` fresh chat messages.

    Nothing is folded (a window larger than the log); with ``usage`` each assistant message
    comes with an Anthropic usage report. Each timed turn follows an untimed user turn; the two
    states take turns, message by message.
    """
    compactor = Compactor(policy=Policy(context_window=ROOMY), summarizer=fake())
    states = [ConversationState([chat(n) for n in range(size)]) for size in (large, small)]
    states = [compactor.maybe_compact(s) for s in states]
    samples: list[list[float]] = [[], []]
    gc.collect()
    gc.disable()
    try:
        for turn in range(turns):
            for side, before in enumerate(states):
                n = len(before)  # even: a user message, then the assistant's
                asked = compactor.maybe_compact(before.append(chat(n)))
                reply = chat(n + 1)
                report = _anthropic_usage(turn) if usage else None
                start = time.perf_counter_ns()
                grown = asked.append(reply, usage=report) if report else asked.append(reply)
                after = compactor.maybe_compact(grown)
                samples[side].append((time.perf_counter_ns() - start) / 1_000)
                states[side] = after
    finally:
        gc.enable()
    return timing(samples[0]), timing(samples[1])


def session_compactor(*, recall: bool = True) -> Compactor[Any]:
    """The trip-planning session's compactor: folds at `SESSION_TRIGGER` tokens keeping 8."""
    policy = Policy(
        context_window=GROWN_WINDOW,
        trigger=("tokens", SESSION_TRIGGER),
        keep=("messages", SESSION_KEEP),
    )
    if not recall:
        policy = dataclasses.replace(policy, recall_budget=None)
    return Compactor(policy=policy, summarizer=session_summarizer())


def grown_session(messages: int, *, recall: bool = True) -> ConversationState[Any]:
    """The trip-planning session of `bench_engine` grown turn by turn to ``messages`` messages."""
    return grown_chain(messages, messages, recall=recall)[0]


def grown_chain(
    messages: int, earlier: int, *, recall: bool = True
) -> tuple[ConversationState[Any], ConversationState[Any]]:
    """`grown_session`, and the state of the same chain (one log) at ``earlier`` messages."""
    compactor = session_compactor(recall=recall)
    state: ConversationState[Any] = ConversationState(thread_id="session")
    kept = state
    for n in range(messages):
        state = compactor.maybe_compact(state.append(session_message(n)))
        if n + 1 == earlier:
            kept = state
    return state, kept


def _roomy() -> Compactor[Any]:
    """The session's compactor in a window no timed turn fills (recall on)."""
    return Compactor(
        policy=Policy(context_window=ROOMY, keep=("messages", SESSION_KEEP)),
        summarizer=session_summarizer(),
    )


def _question(state: ConversationState[Any], n: int) -> dict[str, Any]:
    """A person's question about an earlier quote of the session, by its reference."""
    turn = (7 * n) % max(1, len(state) // 2 - 10) + 5
    return {"role": "user", "content": f"Which hotel quoted HX-{turn:05d}, and at what price?"}


def _reply(n: int) -> dict[str, Any]:
    return {"role": "assistant", "content": f"Looking that up ({n})."}


def asking_pair(
    large: ConversationState[Any], small: ConversationState[Any], turns: int
) -> tuple[Timing, Timing]:
    """A turn appending a person's question to each grown state, recall on, interleaved.

    Each question names an earlier quote of the session by its reference, so recall searches
    the folded messages and picks the one that quoted it; the reply after it is untimed.
    """
    compactor = _roomy()
    states = [large, small]
    samples: list[list[float]] = [[], []]
    gc.collect()
    gc.disable()
    try:
        for turn in range(turns):
            for side, state in enumerate(states):
                question = _question(state, turn)
                start = time.perf_counter_ns()
                after = compactor.maybe_compact(state.append(question))
                samples[side].append((time.perf_counter_ns() - start) / 1_000)
                if after.recall is None:
                    msg = "the question was not recalled for; is recall on?"
                    raise RuntimeError(msg)
                states[side] = compactor.maybe_compact(after.append(_reply(turn)))
    finally:
        gc.enable()
    return timing(samples[0]), timing(samples[1])


@dataclasses.dataclass(frozen=True)
class Branches:
    """The branch rows: a retry, a rollback, and the turn on the newest state they compare with."""

    retry: Timing
    rollback: Timing
    newest: Timing
    searched: int
    """Documents the branches' turns read into a recall index (0: the index is shared)."""


def branch_turns(
    state: ConversationState[Any], older: ConversationState[Any], turns: int
) -> Branches:
    """The first turn on a new branch of ``state`` (and of ``older``), against one on its newest.

    Per repeat: an untimed question and reply make a newest state whose log has its recall index;
    then the same question is appended to it (timed: ``newest``), and another question to it
    again (timed: ``retry``, the log forked there), and a question to ``older`` (a state of the
    same log from before the last folds; timed: ``rollback``).
    """
    from progsum.recall import _index as index_module  # noqa: PLC0415 - counted, not timed

    compactor = _roomy()
    newest: list[float] = []
    retry: list[float] = []
    rollback: list[float] = []
    searched = 0
    real = index_module.term_counts

    def counting(text: str) -> Any:  # noqa: ANN401 - a Counter
        nonlocal searched
        searched += 1
        return real(text)

    for turn in range(turns):
        warm = compactor.maybe_compact(state.append(_question(state, turn + 1_000)))
        warm = compactor.maybe_compact(warm.append(_reply(turn)))  # newest: its index is built
        question = _question(state, turn)
        gc.collect()
        gc.disable()
        index_module.term_counts = counting
        try:
            start = time.perf_counter_ns()
            compactor.maybe_compact(warm.append(question))
            middle = time.perf_counter_ns()
            compactor.maybe_compact(warm.append(_question(state, turn + 2_000)))
            end = time.perf_counter_ns()
            compactor.maybe_compact(older.append(question))
            last = time.perf_counter_ns()
        finally:
            index_module.term_counts = real
            gc.enable()
        newest.append((middle - start) / 1_000)
        retry.append((end - middle) / 1_000)
        rollback.append((last - end) / 1_000)
    return Branches(timing(retry), timing(rollback), timing(newest), searched)


# -- memory ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Held:
    """What one session of ``messages`` messages holds, measured in a process of its own."""

    messages: int
    state: int
    """Bytes the state holds: traced while it lives, less what stays once it is dropped."""
    kept: int
    """Bytes that stay in the process once the state is dropped (bounded caches)."""
    loaded: int
    """Bytes of what is loaded once (the judge's weights, the templates)."""
    content: int
    """The messages' JSON, in bytes."""


def held(workload: str, messages: int) -> Held:
    """`Held` for the ``workload`` (``tool`` or ``chat``) session of ``messages`` messages."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_held, (workload, messages))


def _held(workload: str, messages: int) -> Held:
    make: Callable[[int], dict[str, Any]] = tool_message if workload == "tool" else session_message
    made = [make(n) for n in range(messages)]
    content = sum(len(json.dumps(m)) for m in made)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        load_model()
        warm = ConversationState([tool_message(n) for n in range(400)], thread_id="warm")
        Compactor(policy=Policy(context_window=20_000), summarizer=fake()).maybe_compact(warm)
        del warm
        gc.collect()
        loaded = tracemalloc.get_traced_memory()[0] - base
        if workload == "tool":
            compactor = Compactor(policy=Policy(context_window=GROWN_WINDOW), summarizer=fake())
        else:
            compactor = session_compactor()
        state = replayed(compactor, made)
        gc.collect()
        living = tracemalloc.get_traced_memory()[0] - base
        del state, compactor
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - base - loaded
    finally:
        tracemalloc.stop()
    return Held(messages, living - loaded - kept, kept, loaded, content)


def replayed(compactor: Compactor[Any], messages: list[dict[str, Any]]) -> ConversationState[Any]:
    """``messages`` through ``compactor`` turn by turn, rendered once, as memory rows count them.

    The fake summarizer's log of every request (each with its prior summary) is cleared: it is
    the test double's memory, not progsum's.
    """
    state: ConversationState[Any] = ConversationState(thread_id="memory")
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
    summarizer = compactor.summarizer
    if not isinstance(summarizer, FunctionSummarizer):  # both workloads' fakes are
        raise TypeError(summarizer)
    summarizer.requests.clear()
    render_anthropic(state)
    return state


def memory_rows(workload: str, small: int, large: int) -> tuple[Held, Held]:
    """`held` at two sizes of one workload (what the session adds: their difference)."""
    return held(workload, small), held(workload, large)


def growth(small: Held, large: Held) -> float:
    """Bytes the state grew by per byte of the content the session added between two sizes."""
    return (large.state - small.state) / max(1, large.content - small.content)


def _ratio(grown: Timing, base: Timing) -> str:
    return f"{grown.median / base.median:.2f}x"


def rows(args: argparse.Namespace) -> Iterator[tuple[str, str, str, str]]:
    """Yield ``(what, measured, baseline, ratio)`` rows of the per-turn and memory figures.

    ``args``: ``state`` (messages of the fresh and grown states), ``repeats`` (timed turns per
    row), ``memory`` (the larger session of the memory rows; the smaller is a tenth).
    """
    load_model()
    small = max(100, args.state // 200)
    for usage, name in ((False, "OpenAI dicts"), (True, "Anthropic dicts, usage")):
        large, base = quiet_pair(small, args.state, args.repeats, usage=usage)
        yield (
            f"quiet turn after a reply, fresh {args.state:,} ({name})",
            large.show(),
            f"{small:,} messages: {base.show()}",
            _ratio(large, base),
        )
    grown, earlier = grown_chain(args.state, args.state // 2)
    tenth = grown_session(args.state // 10)
    large, base = asking_pair(grown, tenth, args.repeats)
    yield (
        f"a question in a grown {args.state:,}-message session, recall on",
        large.show(),
        f"{args.state // 10:,} messages: {base.show()}",
        _ratio(large, base),
    )
    branches = branch_turns(grown, earlier, args.repeats)
    for name, measured in (("a retry", branches.retry), ("a rollback", branches.rollback)):
        yield (
            f"first turn on a new branch ({name}), {args.state:,}",
            f"{measured.show()} ({branches.searched} documents re-indexed)",
            f"on the newest state: {branches.newest.show()}",
            _ratio(measured, branches.newest),
        )
    for workload in ("tool", "chat"):
        low, high = memory_rows(workload, args.memory // 10, args.memory)
        fixed = (high.kept + high.loaded) / 1e6
        yield (
            f"memory a {workload} session adds, {low.messages:,} -> {high.messages:,}",
            f"{(high.state - low.state) / 1e6:,.1f} MB (fixed: {fixed:,.1f} MB)",
            f"its JSON: {(high.content - low.content) / 1e6:,.1f} MB",
            f"{growth(low, high):.2f}x",
        )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the per-turn and memory rows, one as soon as it is measured."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller sessions")
    parser.add_argument("--state", type=int, help="messages of the grown states")
    parser.add_argument("--repeats", type=int, help="timed turns per row")
    parser.add_argument("--memory", type=int, help="messages of the larger memory session")
    args = parser.parse_args(argv)
    args.state = args.state or (4_000 if args.quick else 20_000)
    args.repeats = args.repeats or (15 if args.quick else 61)
    args.memory = args.memory or (4_000 if args.quick else 20_000)
    print(f"{'what':<56} | {'measured (min / median)':<40} | {'baseline':<34} | ratio")
    for what, measured, base, ratio in rows(args):
        print(f"{what:<56} | {measured:<40} | {base:<34} | {ratio}", flush=True)


if __name__ == "__main__":
    main()
