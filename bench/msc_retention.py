"""How many session-1 facts survive progressive compaction, beside plain truncation (MSC).

    python bench/msc_retention.py /work/shared/data            # all 501 conversations
    python bench/msc_retention.py DATA_DIR --limit 50 --budget 400 --keep 4

Data: the Multi-Session Chat session-3 test split (``DATA_DIR/msc/session_3/test.txt``; DATA_DIR
may also be the ``msc`` folder or the file itself), read in place, never copied. Each conversation
and its probes are built exactly as ``bench/msc_probes.py`` writes them to files (see its
docstring: sessions 1-3 as one chat; one probe per session-1 persona fact the speaker stated, whose
strings are the fact's key words found in the stating utterance), so any one conversation's
figures can be reproduced with ``progsum replay FILE --budget 400 --keep 4 --probes PROBES``.

The run is `progsum.replay._probes.evaluate` for each conversation: the messages are appended one at
a time and ``Compactor.maybe_compact`` is called after each, with the `ExtractiveSummarizer`
and ``progsum.cli._options.budget_policy(budget, keep=keep)``, the policy ``progsum replay
--budget`` uses:
compaction fires whenever the estimated context reaches ``budget`` tokens. The final context may
end above the budget: once the kept first message, tail and summary alone exceed the trigger, the
engine records a stalled attempt instead of compacting (the footer counts both).

The measure is `progsum.replay._probes`' recoverability: a probe survives when each of its strings
is
a case-insensitive substring of the final context's text (summary header, kept first message, tail).
The truncation baseline keeps the most recent messages whose estimated tokens sum to at most the
tokens of progsum's final context. The whole chat is the ceiling (100% by construction, since every
probe's strings come from its stating message).

Everything is deterministic (no randomness, no clock in the table); the run time goes to stderr.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msc_probes import Conversation, conversations

from progsum import Compactor, Policy
from progsum.cli._options import budget_policy
from progsum.replay._probes import evaluate
from progsum.summarizers.extractive._summarizer import DEFAULT_MAX_SHARE, ExtractiveSummarizer
from progsum.summary._merge import live_items

DEFAULT_BUDGET = 400
"""Trigger in tokens: a chat holds ~1,300 estimated tokens, so compaction fires several times."""
DEFAULT_KEEP = 4
"""Messages kept verbatim after each compaction."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one conversation gave: sizes, and how many of its probes each context kept."""

    probes: int
    compactions: int
    stalls: int
    items: int
    """Live items of the final summary."""
    tokens: int
    """Estimated tokens of progsum's final context (the truncation budget)."""
    chat_tokens: int
    """Estimated tokens of the whole chat."""
    progsum: int
    header: int
    """Probes recoverable from the summary header alone."""
    folded: int
    """Probes whose stating message was folded away by progsum."""
    folded_kept: int
    """Of those, the probes progsum's context still holds."""
    truncation: int


def measure(conversation: Conversation, compactor: Compactor[Any]) -> Outcome:
    """Replay the chat turn by turn, then score the final context against truncation."""
    result = evaluate(conversation.messages, conversation.probes, compactor)
    state = result.state
    summary = state.summary
    return Outcome(
        probes=len(result.results),
        compactions=sum(event.outcome == "compacted" for event in state.events),
        stalls=sum(event.outcome == "stalled" for event in state.events),
        items=0 if summary is None else sum(len(items) for items in live_items(summary).values()),
        tokens=result.tokens,
        chat_tokens=result.full_tokens,
        progsum=result.survived,
        header=sum(r.header for r in result.results),
        folded=sum(r.folded for r in result.results),
        folded_kept=sum(r.folded and r.progsum for r in result.results),
        truncation=result.truncation_survived,
    )


def table(outcomes: Sequence[Outcome], policy: Policy, summarizer: ExtractiveSummarizer) -> str:
    """The results as a Markdown table, with the set-up above it and the summary line below."""
    probes = sum(o.probes for o in outcomes)

    def share(count: int, total: int = probes) -> str:
        return f"{count / total:.1%}" if total else "n/a"

    ours = sum(o.progsum for o in outcomes)
    cut = sum(o.truncation for o in outcomes)
    tokens = f"{statistics.mean(o.tokens for o in outcomes):,.0f}"
    chat_tokens = f"{statistics.mean(o.chat_tokens for o in outcomes):,.0f}"
    compactions = [o.compactions for o in outcomes]
    folded = sum(o.folded for o in outcomes)
    ratio = f"{ours / cut:.2f}x" if cut else "inf (truncation kept no probe)"
    setup = (
        f"MSC session 3 (test): {len(outcomes)} conversations, {probes:,} session-1 probes; "
        f"trigger {policy.trigger_limit} tokens, keep {policy.keep_amount[1]} messages, "
        f"ExtractiveSummarizer(max_per_field={summarizer.max_per_field}, "
        f"max_share={summarizer.max_share})"
    )
    footer = (
        f"progsum / truncation: {ratio}; of the {folded:,} probes whose message progsum folded, "
        f"{share(sum(o.folded_kept for o in outcomes), folded)} are still recoverable; "
        f"compactions per conversation: mean {statistics.mean(compactions):.1f} "
        f"(min {min(compactions)}, max {max(compactions)}); stalled attempts: "
        f"{statistics.mean(o.stalls for o in outcomes):.1f}; summary items at the end: "
        f"{statistics.mean(o.items for o in outcomes):.1f}"
    )
    rows = [
        setup,
        "",
        "| context after the last turn | tokens (mean) | session-1 probes kept |",
        "|---|---:|---:|",
        f"| progsum: header + first message + tail | {tokens} | {share(ours)} |",
        f"| truncation to the same tokens | {tokens} | {share(cut)} |",
        f"| progsum header alone | | {share(sum(o.header for o in outcomes))} |",
        f"| whole chat (ceiling) | {chat_tokens} | 100.0% |",
        "",
        footer,
    ]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data_dir", type=Path, help="the shared data folder (or msc/, or the file)")
    parser.add_argument("--limit", type=int, default=None, help="first N conversations only")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="trigger, in tokens")
    parser.add_argument(
        "--header-budget",
        type=int,
        default=None,
        help="consolidate headers over this many tokens (default: the budget's, as progsum replay)",
    )
    parser.add_argument("--keep", type=int, default=DEFAULT_KEEP, help="verbatim tail, messages")
    parser.add_argument(
        "--max-share",
        type=float,
        default=DEFAULT_MAX_SHARE,
        help="ExtractiveSummarizer(max_share=...)",
    )
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit {args.limit} selects no conversations; use at least 1")
    policy = budget_policy(args.budget, keep=args.keep, header_budget=args.header_budget)
    summarizer = ExtractiveSummarizer(max_share=args.max_share)
    compactor = Compactor(policy=policy, summarizer=summarizer)
    started = time.perf_counter()
    outcomes = [measure(c, compactor) for c in conversations(args.data_dir, args.limit)]
    print(table(outcomes, policy, summarizer))
    print(f"ran in {time.perf_counter() - started:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
