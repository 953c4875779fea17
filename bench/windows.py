"""Does every request fit the window? Replays real agent conversations turn by turn.

    python bench/windows.py /work/shared/data
    python bench/windows.py DATA_DIR --windows 8000 32000 --keeps m2 t300

Data: ``DATA_DIR/claude_code/**/*.jsonl``, ``DATA_DIR/tau_bench/*.json`` and
``DATA_DIR/swe_agent/**/*.traj`` (a missing folder is skipped), read in place.

For each window (default 8k, 32k and 200k tokens) and keep setting (default: the tail fitted to
the target, as the policy's default; the last 2 and 8 messages; 300 tokens), every conversation
is appended one message at a time with ``maybe_compact`` after each, under
``Policy(context_window=W, keep=K)`` (default trigger 90% of the input window), the offline
`ExtractiveSummarizer` and the default `Reduction`. A *request point* is a turn after which the
agent would call the model: the message appended is not the assistant's.
At each request point the bench renders the model view (`render_anthropic` or `render_openai`) and
counts:

* ``over``: the engine's counted context (the figure its trigger uses) exceeds the input window;
* ``first+round``: of those, the points where the kept first message, the newest tool round and
  the header alone exceed it (the documented exception; see docs/windows.md);
* ``sent over``: outside that exception, the rendered request, counted here (the header once
  and every message as sent, `retention_agents.request_size`), exceeds the input window: the
  same question asked without the engine's own measure;
* ``violations``: rules of docs/thinking-rules.md the view breaks, checked by
  ``tests/provider_rules.py`` (written from the documentation, not from progsum's helpers).

It also counts compactions, cheap reductions and stalled attempts (events). Each setting is
replayed twice: without usage reports (the engine counts estimates times its safety margin) and
with one on each assistant message, the rendered request's size as a provider would report it
(`usage_reports`; from the first report the engine counts from the reports, as an agent loop
that passes ``usage=response.usage`` runs). Deterministic; the run time goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' provider-rule checker

from retention_agents import request_size
from usage_reports import reported

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.policy.policy import Threshold
from progsum.policy.tokens import HeuristicCounter
from progsum.replay.importers import Imported, read_conversations
from progsum.summarizers import ExtractiveSummarizer
from tests.provider_rules import anthropic_violations, openai_violations

CORPORA = (("claude_code", "**/*.jsonl"), ("tau_bench", "*.json"), ("swe_agent", "**/*.traj"))
"""Folders of DATA_DIR and the files read in each."""
WINDOWS = (8_000, 32_000, 200_000)
KEEPS = ("fit", "m2", "m8", "t300")
"""``fit``: the default tail, fitted to the target; ``mN``: keep the last N messages; ``tN``: keep
the last N tokens."""


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
    example: str = ""


def keep_threshold(text: str) -> Threshold | None:
    """``m8`` -> ``("messages", 8)``, ``t300`` -> ``("tokens", 300)``, ``fit`` -> None."""
    if text == "fit":
        return None
    kind = {"m": "messages", "t": "tokens"}.get(text[:1])
    if kind is None or not text[1:].isdigit():
        raise argparse.ArgumentTypeError(f"keep {text!r}: use fit, mN (messages) or tN (tokens)")
    return (kind, int(text[1:]))  # type: ignore[return-value]  # kind is one of the two literals


def conversations(data: Path) -> list[tuple[str, Imported]]:
    """Every conversation of the three corpora, with its corpus name."""
    found: list[tuple[str, Imported]] = []
    for corpus, pattern in CORPORA:
        folder = data / corpus
        for file in sorted(folder.glob(pattern)) if folder.is_dir() else []:
            found += [(corpus, c) for c in read_conversations(file)]
    return found


def replay(
    conversation: Imported, compactor: Compactor[Any], tally: Tally, *, usage: bool = False
) -> None:
    """Append the messages one by one and check every request point.

    With ``usage``, each assistant message comes with the rendered request's size as its usage.
    """
    state: ConversationState[Any] = ConversationState(thread_id="bench")
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
        reason = compactor.overflow(state)
        excused = reason is not None and "alone exceed" in reason
        if reason is not None:
            tally.over += 1
            tally.alone += excused
            if not excused and not tally.example:
                tally.example = f"{conversation.name} message {len(state)}: {reason}"
        size = request_size(state, counter)
        if not excused and size > (compactor.policy.input_window or 0):
            tally.sent_over += 1
            if not tally.example:
                tally.example = f"{conversation.name} message {len(state)}: {size:,} tokens sent"
        if state.format == "openai":
            problems = openai_violations(render_openai(state, system=conversation.system))
        else:
            problems = anthropic_violations(
                render_anthropic(state, system=conversation.system)[1], state.log
            )
        tally.violations += bool(problems)
        if problems and not tally.example:
            tally.example = f"{conversation.name} message {len(state)}: {problems[0]}"


def _named(keep: Threshold | None) -> str:
    return "fit target" if keep is None else f"{keep[0]} {keep[1]}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print one row per window and keep setting."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--windows", type=int, nargs="+", default=list(WINDOWS))
    parser.add_argument("--keeps", type=keep_threshold, nargs="+", default=None)
    parser.add_argument("--corpus", choices=[c for c, _ in CORPORA], default=None)
    args = parser.parse_args(argv)
    keeps: list[Threshold | None] = args.keeps or [keep_threshold(k) for k in KEEPS]
    found = [(c, conv) for c, conv in conversations(args.data) if args.corpus in (None, c)]
    started = time.perf_counter()
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
    sys.stderr.write(f"ran in {time.perf_counter() - started:.1f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
