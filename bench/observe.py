"""Observability over real transcripts: every event reported once, and a quiet turn stays quiet.

    python bench/observe.py /work/shared/data
    python bench/observe.py DATA_DIR --trigger 2000 --keep 4 --repeat 20000

Data: the agent transcripts `bench/transcripts.py` reads (Claude Code, τ-bench, SWE-agent), in
place. Each conversation is replayed one message at a time through ``maybe_compact`` with the
offline extractive summarizer, an ``on_event`` hook, a logging handler on ``progsum`` at INFO and,
when the ``otel`` extra and the SDK are installed, an in-memory span exporter.

The checks, per conversation: the hook received exactly the state's events, in order; the log has
one ``progsum.engine._compactor`` line per event; the spans hold one ``progsum.compaction`` span per
turn that recorded events; and no turn without a new event logged, called the hook, or made a span.

The timing: a quiet ``maybe_compact`` (nothing due) on the longest conversation, compacted once,
with a bare compactor and with one that has the hook, the cost alert and the tracer provider set,
timed interleaved in one run (medians of ``--rounds`` rounds of ``--repeat`` calls, garbage
collection paused). The ratio is the overhead observability adds to a quiet turn: it should be 1.
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transcripts import corpus_files

from progsum import Compactor, ConversationState, Policy
from progsum.policy._policy import MIN_WINDOW
from progsum.replay._importers import read_conversations
from progsum.state._events import CompactionEvent
from progsum.summarizers import ExtractiveSummarizer


def install_exporter() -> Any:  # noqa: ANN401 - an InMemorySpanExporter, or None
    """Set a tracer provider exporting to memory, when the otel extra and the SDK are installed."""
    try:
        from opentelemetry import trace  # noqa: PLC0415 - optional
        from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: PLC0415
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: PLC0415
            InMemorySpanExporter,
        )
    except ImportError:  # the otel extra is optional; the span check is then skipped
        return None
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


class Lines(logging.Handler):
    """Keeps the formatted records of progsum.engine._compactor."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the record's line."""
        if record.name == "progsum.engine" and record.levelno < logging.ERROR:
            self.lines.append(record.getMessage())


def check(
    messages: list[Any],
    policy: Policy,
    lines: Lines,
    exporter: Any = None,  # noqa: ANN401 - see install_exporter
) -> tuple[int, int, list[str]]:
    """Replay one conversation; return (events, turns with events, problems found).

    ``exporter``: the in-memory span exporter, or None to leave spans unchecked.
    """
    seen: list[CompactionEvent] = []
    compactor = Compactor(policy=policy, summarizer=ExtractiveSummarizer(), on_event=seen.append)
    state: ConversationState[Any] = ConversationState()
    problems: list[str] = []
    busy = 0
    lines.lines.clear()
    if exporter is not None:
        exporter.clear()
    for index, message in enumerate(messages):
        before = state.append(message)
        logged, hooked = len(lines.lines), len(seen)
        spans = len(exporter.get_finished_spans()) if exporter is not None else 0
        state = compactor.maybe_compact(before)
        new = len(state.events) - len(before.events)
        busy += new > 0
        if new == 0 and (len(lines.lines) > logged or len(seen) > hooked):
            problems.append(f"message {index + 1}: a quiet turn logged or called the hook")
        if exporter is not None:
            made = len(exporter.get_finished_spans()) - spans
            if new == 0 and made:
                problems.append(f"message {index + 1}: a quiet turn made {made} span(s)")
    if seen != list(state.events):
        problems.append(f"the hook got {len(seen)} events, the state has {len(state.events)}")
    if len(lines.lines) != len(state.events):
        problems.append(f"{len(lines.lines)} log lines for {len(state.events)} events")
    if exporter is not None:
        compactions = [s for s in exporter.get_finished_spans() if s.name == "progsum.compaction"]
        if len(compactions) != busy:
            problems.append(f"{len(compactions)} compaction spans for {busy} turns with events")
    if compactor.hook_failures:
        problems.append(f"{compactor.hook_failures} hook failures")
    return len(state.events), busy, problems


def quiet_ratio(messages: list[Any], policy: Policy, repeat: int, rounds: int) -> tuple[float, ...]:
    """Median microseconds of a quiet maybe_compact: bare, bare again, observed; two ratios.

    The second bare compactor is the control: its ratio to the first is the timing noise.
    """
    bare = Compactor(policy=policy, summarizer=ExtractiveSummarizer(), cost_alert=None)
    control = Compactor(policy=policy, summarizer=ExtractiveSummarizer(), cost_alert=None)
    observed = Compactor(
        policy=policy, summarizer=ExtractiveSummarizer(), on_event=lambda _: None, cost_alert=0.15
    )
    state: ConversationState[Any] = ConversationState(messages[:-1])
    state = bare.compact(state, force=True).append(messages[-1])
    assert not bare.decide(state).due, "the quiet-turn state must be below the trigger"  # noqa: S101
    times: dict[str, list[float]] = {"bare": [], "control": [], "observed": []}
    order = [("bare", bare), ("observed", observed), ("control", control)]
    gc.disable()
    try:
        for _ in range(rounds):
            order.reverse()  # neither side always runs first
            for name, compactor in order:
                start = time.perf_counter()
                for _ in range(repeat):
                    compactor.maybe_compact(state)
                times[name].append((time.perf_counter() - start) / repeat * 1e6)
    finally:
        gc.enable()
    a, c, b = (statistics.median(times[k]) for k in ("bare", "control", "observed"))
    return a, c, b, c / a, b / a


def main() -> None:
    """Run the checks over the corpora, then the quiet-turn timing."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--trigger", type=int, default=2_000)
    parser.add_argument("--keep", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    policy = Policy(
        context_window=max(MIN_WINDOW, 4 * args.trigger),
        trigger=("tokens", args.trigger),
        keep=("messages", args.keep),
    )
    exporter = install_exporter()
    lines = Lines()
    root = logging.getLogger("progsum")
    root.addHandler(lines)
    root.setLevel(logging.INFO)
    longest: list[Any] = []
    total_events = total_busy = conversations = 0
    failures: list[str] = []
    print(f"spans: {'checked (in-memory exporter)' if exporter is not None else 'not checked'}")
    for corpus, files in corpus_files(args.data):
        events = busy = count = 0
        for path in files:
            for conversation in read_conversations(path):
                found, turns, problems = check(conversation.messages, policy, lines, exporter)
                events, busy, count = events + found, busy + turns, count + 1
                failures += [f"{conversation.name}: {p}" for p in problems]
                if len(conversation.messages) > len(longest):
                    longest = list(conversation.messages)
        print(f"{corpus:<12} {count:>4} conversations, {events:>6,} events in {busy:>6,} turns")
        total_events, total_busy = total_events + events, total_busy + busy
        conversations += count
    print(
        f"all          {conversations:>4} conversations, {total_events:>6,} events in "
        f"{total_busy:>6,} turns; problems: {len(failures)}"
    )
    for failure in failures[:20]:
        print(f"  {failure}")
    root.removeHandler(lines)
    quiet = Policy(model="claude-sonnet-4-5")  # a real window, so the compacted history is quiet
    bare, control, observed, noise, ratio = quiet_ratio(longest, quiet, args.repeat, args.rounds)
    print(
        f"quiet maybe_compact on a {len(longest):,}-message history: bare {bare:.2f} us, "
        f"bare again {control:.2f} us (noise ratio {noise:.2f}), with hook + cost alert + "
        f"tracer provider {observed:.2f} us, ratio {ratio:.2f}"
    )


if __name__ == "__main__":
    main()
