"""Does every request fit the window? Replays real conversations turn by turn.

    python bench/windows.py /work/shared/data                       # both tables
    python bench/windows.py DATA_DIR --table corpora --windows 8000 32000 --keeps m2 t300
    python bench/windows.py DATA_DIR --table guarantees --rows parallel "value-heavy"

**The corpus table.** Data: ``DATA_DIR/claude_code/**/*.jsonl``, ``DATA_DIR/tau_bench/*.json`` and
``DATA_DIR/swe_agent/**/*.traj`` (a missing folder is skipped), read in place. For each window
(default 8k, 32k and 200k tokens) and keep setting (default: the tail fitted to the target, as the
policy's default; the last 2 and 8 messages; 300 tokens), every conversation is appended one
message at a time with ``maybe_compact`` after each, under ``Policy(context_window=W, keep=K)``
(default trigger 90% of the input window), the offline `ExtractiveSummarizer` and the default
`Reduction`.

**The guarantee table** (issue 47): rows of shapes and settings where the guarantee broke, each at
its own window with the default policy (`guarantee_rows`; the conversations: `window_cases`):
OpenAI-shaped parallel tool rounds (20 and 400 calls a round, and the Claude Code sessions
reshaped to OpenAI's format), two-person chats and task chats at 2k and 4k (every chat set of the
data folder, as streams of consecutive conversations), a value-heavy chat with the extractive
summarizer and with one that always fails, a chat of stated rules, and intermittent archive
errors (a SQLite file whose writes fail at 10-90% per conversation, tests/flaky_disk.py) under
the agent corpora and under the chats.

A *request point* is a turn after which the agent would call the model: the message appended is
not the assistant's. At each request point the bench renders the model view (`render_anthropic`
or `render_openai`) and counts:

* ``over``: the engine's counted context (the figure its trigger uses) exceeds the input window;
* ``first+round``: of those, the points where the kept first message, the newest tool round and
  the header alone exceed it (the documented exception; see docs/windows.md);
* ``sent over``: outside that exception, the rendered request, counted here (the header once
  and every message as sent, `retention_agents.request_size`), exceeds the input window: the
  same question asked without the engine's own measure;
* ``violations``: rules of docs/thinking-rules.md the view breaks, checked by
  ``tests/provider_rules.py`` (written from the documentation, not from progsum's helpers). Its
  thinking rules (T1-T6) are an older model's, so it reads the request an older model is sent
  (``thinking="keep"``); the default render leaves out the thinking a fold made stale (T7), which
  a preserved-thinking model accepts, and ``bench/prefix.py`` checks that render.

It also counts compactions, cheap reductions and stalled attempts (events); the guarantee table
also the largest context seen (``worst``, a share of the input window) and the values the user
stated that left the context for the archive (``left``, named by the events). Each setting is
replayed twice: without usage reports (the engine counts estimates times its safety margin) and
with one on each assistant message, the rendered request's size as a provider would report it
(`usage_reports`; from the first report the engine counts from the reports, as an agent loop
that passes ``usage=response.usage`` runs). Deterministic; the run time goes to stderr.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' provider-rule checker

from retention_agents import request_size
from shared_data import AGENT_SETS, agent_conversations
from usage_reports import reported
from window_cases import (
    TWO_PERSON,
    Case,
    agent_corpora,
    as_openai,
    chats,
    parallel_rounds,
    rules_chat,
    value_chat,
)

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.policy._policy import Threshold
from progsum.policy._tokens import HeuristicCounter
from progsum.replay._importers import Imported
from progsum.store import SQLiteStore
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._request import SummaryRequest
from progsum.summary._update import SummaryUpdate
from progsum.testing import FunctionSummarizer
from tests.flaky_disk import flaky_sqlite
from tests.provider_rules import anthropic_violations, openai_violations

WINDOWS = (8_000, 32_000, 200_000)
KEEPS = ("fit", "m2", "m8", "t300")
"""``fit``: the default tail, fitted to the target; ``mN``: keep the last N messages; ``tN``: keep
the last N tokens."""
DEFAULT_STREAMS = 12
"""Chat streams per set and window in the guarantee rows (each ~3 windows of messages)."""


@dataclass
class Tally:
    """Counts for one window and keep setting."""

    conversations: int = 0
    points: int = 0
    over: int = 0
    alone: int = 0
    compactions: int = 0
    reductions: int = 0
    stalls: int = 0
    failures: int = 0
    violations: int = 0
    sent_over: int = 0
    worst: float = 0.0
    """The largest counted context, as a share of the input window."""
    values_left: int = 0
    """Values the user stated that left the context for the archive (the events name them)."""
    example: str = ""


def keep_threshold(text: str) -> Threshold | None:
    """``m8`` -> ``("messages", 8)``, ``t300`` -> ``("tokens", 300)``, ``fit`` -> None."""
    if text == "fit":
        return None
    kind = {"m": "messages", "t": "tokens"}.get(text[:1])
    if kind is None or not text[1:].isdigit():
        raise argparse.ArgumentTypeError(f"keep {text!r}: use fit, mN (messages) or tN (tokens)")
    return (kind, int(text[1:]))  # type: ignore[return-value]  # kind is one of the two literals


def replay(
    conversation: Imported | Case,
    compactor: Compactor[Any],
    tally: Tally,
    *,
    usage: bool = False,
    thread: str = "bench",
) -> None:
    """Append the messages one by one and check every request point.

    With ``usage``, each assistant message comes with the rendered request's size as its usage.
    """
    state: ConversationState[Any] = ConversationState(thread_id=thread)
    tally.conversations += 1
    authors = conversation.authors or (None,) * len(conversation.messages)
    counter = HeuristicCounter()  # the bench's own count of what is sent
    measure = (lambda s: request_size(s, counter)) if usage else None
    for message, author in zip(conversation.messages, authors, strict=True):
        before = reported(state, message, author=author, measure=measure)
        state = compactor.maybe_compact(before)
        for event in state.events[len(before.events) :]:
            tally.compactions += event.outcome == "compacted"
            tally.reductions += event.outcome == "reduced"
            tally.stalls += event.outcome == "stalled"
            tally.failures += event.outcome == "failed"
        if state.infos[-1].role == "assistant":
            continue  # the model just answered: no request is sent now
        tally.points += 1
        check(conversation, compactor, state, tally, counter)
    tally.values_left += len(_left(state))


def check(
    conversation: Imported | Case,
    compactor: Compactor[Any],
    state: ConversationState[Any],
    tally: Tally,
    counter: HeuristicCounter,
) -> None:
    """Count one request point: over the window (the engine's measure, the bench's), rules."""
    window = compactor.policy.input_window or 0
    reason = compactor.overflow(state)
    excused = reason is not None and "alone exceed" in reason
    tokens = compactor.count(state)[0]
    tally.worst = max(tally.worst, tokens / window if window else 0.0)
    if reason is not None:
        tally.over += 1
        tally.alone += excused
        if not excused and not tally.example:
            tally.example = f"{conversation.name} message {len(state)}: {reason}"
    size = request_size(state, counter)
    if not excused and size > window:
        tally.sent_over += 1
        if not tally.example:
            tally.example = f"{conversation.name} message {len(state)}: {size:,} tokens sent"
    if state.format == "openai":
        problems = openai_violations(render_openai(state, system=conversation.system))
    else:
        sent = render_anthropic(state, system=conversation.system, thinking="keep")[1]
        problems = anthropic_violations(sent, state.log)
    tally.violations += bool(problems)
    if problems and not tally.example:
        tally.example = f"{conversation.name} message {len(state)}: {problems[0]}"


def _left(state: ConversationState[Any]) -> set[str]:
    """The values the user stated that left the context for the archive (events say which)."""
    return {
        value
        for event in state.events
        if event.merge is not None
        for value in getattr(event.merge, "archived_values", ())
    }


def _named(keep: Threshold | None) -> str:
    return "fit target" if keep is None else f"{keep[0]} {keep[1]}"


@dataclass(frozen=True)
class Row:
    """One guarantee row: what is replayed, at which window, with which summarizer and archive."""

    name: str
    window: int
    cases: Callable[[Path], list[Case]]
    failing: bool = False
    """The summarizer always fails (the engine backs off and folds extractively near the window)."""
    flaky: bool = False
    """A SQLite file archive whose writes fail at random, 10-90% per conversation."""


def _chats(kinds: tuple[str, ...], window: int, streams: int) -> Callable[[Path], list[Case]]:
    def read(data: Path) -> list[Case]:
        return [c for name, c in chats(data, window, streams_per_set=streams) if name in kinds]

    return read


def _agents(data: Path) -> list[Case]:
    """Every agent conversation, and the Claude Code sessions in OpenAI shape too."""
    return [*agent_corpora(data), *(as_openai(c) for c in agent_corpora(data, "claude_code"))]


def _talks(window: int, streams: int) -> Callable[[Path], list[Case]]:
    """Every chat set's streams, and a value-heavy chat."""

    def read(data: Path) -> list[Case]:
        return [*(c for _, c in chats(data, window, streams_per_set=streams)), value_chat(300, 1)]

    return read


def guarantee_rows(streams: int) -> list[Row]:
    """The rows of issue 47's guarantees; ``streams``: chat streams per set and window."""
    two, tasks = TWO_PERSON, ("sgd", "multiwoz", "crosswoz")
    return [
        Row("OpenAI, 20 parallel calls", 8_000, lambda _: [parallel_rounds(20, 3)]),
        Row("OpenAI, 400 parallel calls", 8_000, lambda _: [parallel_rounds(400, 2)]),
        Row("OpenAI, 400 parallel calls", 200_000, lambda _: [parallel_rounds(400, 2)]),
        Row(
            "Claude Code as OpenAI",
            8_000,
            lambda data: [as_openai(c) for c in agent_corpora(data, "claude_code")],
        ),
        Row("two-person chats", 2_000, _chats(two, 2_000, streams)),
        Row("two-person chats", 4_000, _chats(two, 4_000, streams)),
        Row("task chats", 2_000, _chats(tasks, 2_000, streams)),
        Row("task chats", 4_000, _chats(tasks, 4_000, streams)),
        Row("value-heavy chat", 2_000, lambda _: [value_chat(300, k) for k in range(3)]),
        Row(
            "value-heavy, summarizer down",
            2_000,
            lambda _: [value_chat(300, k) for k in range(3)],
            failing=True,
        ),
        Row("stated rules", 2_000, lambda _: [rules_chat(300, k) for k in range(2)]),
        Row("archive errors, agents", 8_000, _agents, flaky=True),
        Row("archive errors, chats", 2_000, _talks(2_000, streams), flaky=True),
    ]


def _down(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A summarizer that always fails: the provider is down."""
    raise RuntimeError(f"the summarizer is down (bench), messages {request.segment.start}+")


def run_row(row: Row, data: Path, *, usage: bool, seed: int = 47) -> Tally:
    """Replay a guarantee row's conversations; an archive row on a fresh SQLite file."""
    summarizer = FunctionSummarizer(_down) if row.failing else ExtractiveSummarizer()
    policy = Policy(context_window=row.window)
    tally = Tally()
    cases = row.cases(data)
    if not row.flaky:
        compactor = Compactor(policy=policy, summarizer=summarizer)
        for case in cases:
            replay(case, compactor, tally, usage=usage)
        return tally
    rates = random.Random(seed)
    with tempfile.TemporaryDirectory() as folder, flaky_sqlite(seed) as faults:
        store = SQLiteStore(Path(folder) / "archive.db")
        compactor = Compactor(policy=policy, summarizer=summarizer, archive=store)
        for number, case in enumerate(cases):
            faults.rate = rates.uniform(0.1, 0.9)
            replay(case, compactor, tally, usage=usage, thread=f"c{number}")
        faults.rate = 0.0
        store.close()
    return tally


def guarantees(data: Path, streams: int, names: Sequence[str] | None = None) -> list[str]:
    """The guarantee table's lines, and the first problem of each row under it.

    ``names``: only the rows whose name holds one of them.
    """
    heading = (
        f"{'row':<30} {'window':>7} {'usage':>5} {'convs':>6} {'points':>7} {'over':>5} "
        f"{'1st+round':>9} {'sent over':>9} {'worst':>6} {'compact':>8} {'reduce':>7} "
        f"{'stalls':>7} {'left':>5} {'violations':>10}"
    )
    lines = [heading]
    examples: list[str] = []
    rows = guarantee_rows(streams)
    for row in [r for r in rows if names is None or any(n in r.name for n in names)]:
        for usage in (False, True):
            tally = run_row(row, data, usage=usage)
            lines.append(
                f"{row.name:<30} {row.window:>7,} {'yes' if usage else 'no':>5} "
                f"{tally.conversations:>6} {tally.points:>7} {tally.over - tally.alone:>5} "
                f"{tally.alone:>9} {tally.sent_over:>9} {tally.worst:>5.2f}x "
                f"{tally.compactions:>8} {tally.reductions:>7} {tally.stalls:>7} "
                f"{tally.values_left:>5} {tally.violations:>10}"
            )
            if tally.example:
                examples.append(f"  {row.name}/{row.window:,}/usage {usage}: {tally.example}")
    if examples:
        lines.append("first problem per row:\n" + "\n".join(examples))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark: the corpus table (window x keep) and the guarantee table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--windows", type=int, nargs="+", default=list(WINDOWS))
    parser.add_argument("--keeps", type=keep_threshold, nargs="+", default=None)
    parser.add_argument("--corpus", choices=list(AGENT_SETS), default=None)
    parser.add_argument(
        "--table", choices=("corpora", "guarantees", "both"), default="both", help="what to run"
    )
    parser.add_argument(
        "--streams", type=int, default=DEFAULT_STREAMS, help="chat streams per set and window"
    )
    parser.add_argument(
        "--rows", nargs="+", default=None, help="guarantee rows whose name holds one of these"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.table in ("corpora", "both"):
        corpora(args)
    if args.table in ("guarantees", "both"):
        print("\n".join(guarantees(args.data, args.streams, args.rows)))
    sys.stderr.write(f"ran in {time.perf_counter() - started:.1f} s\n")
    return 0


def corpora(args: argparse.Namespace) -> None:
    """The corpus table: every agent conversation at each window and keep setting."""
    keeps: list[Threshold | None] = args.keeps or [keep_threshold(k) for k in KEEPS]
    names = list(AGENT_SETS) if args.corpus is None else [args.corpus]
    found = list(agent_conversations(args.data, names))
    print(
        f"{'window':>8} {'keep':>14} {'usage':>6} {'convs':>6} {'points':>7} {'over':>5} "
        f"{'1st+round':>9} {'sent over':>9} {'compact':>8} {'reduce':>7} {'stalls':>7} "
        f"{'violations':>10}"
    )
    examples: list[str] = []
    for window in args.windows:
        for keep in keeps:
            for usage in (False, True):
                policy = Policy(context_window=window, keep=keep)
                compactor = Compactor(policy=policy, summarizer=ExtractiveSummarizer())
                tally = Tally()
                for _, conversation in found:
                    replay(conversation, compactor, tally, usage=usage)
                print(
                    f"{window:>8,} {_named(keep):>14} {'yes' if usage else 'no':>6} "
                    f"{tally.conversations:>6} {tally.points:>7} {tally.over - tally.alone:>5} "
                    f"{tally.alone:>9} {tally.sent_over:>9} {tally.compactions:>8} "
                    f"{tally.reductions:>7} {tally.stalls:>7} {tally.violations:>10}"
                )
                if tally.example:
                    examples.append(f"  {window:,}/{keep}/usage {usage}: {tally.example}")
    if examples:
        print("first problem per row:\n" + "\n".join(examples))


if __name__ == "__main__":
    raise SystemExit(main())
