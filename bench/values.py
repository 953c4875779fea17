"""Named values the users of the shared sets stated, and whether compaction keeps each one whole.

    python bench/values.py /work/shared/data
    python bench/values.py DATA_DIR --budget 1000 --samples 12

A *named value* is a number with the proper name beside it: a street address ("12 Rua Augusta"),
a named place ("Terminal 2"), a postcode in two parts ("SW1A 1AA";
`progsum.judge._values.named_values`). For every conversation of the five sets (MSC, MemoryBank,
tau-bench, Claude Code, SWE-agent; read in place, as `bench/retention.py` reads them), the script
takes the named values the user stated (`progsum.contract._ledger.values` over the prose of every
user message that is not a question), then compacts the conversation turn by turn (the CLI's
``--budget`` policy, `progsum.cli._options.budget_policy`, with ``keep=4`` and the offline
`ExtractiveSummarizer`) and checks each named value stated in a folded message against the final
context (live items and kept messages, `progsum.contract._ledger.carriers`):

* ``kept``: the context carries the value whole;
* ``lost``: it does not; ``street lost`` counts those whose number the context still carries
  (the loss a number-by-number ledger cannot see).

The table also prints sample values of each set, so their precision can be read. Deterministic.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import shared_data
from note_quality import agent_sets
from shared_data import present

from progsum import Compactor
from progsum.cli._options import budget_policy
from progsum.contract._ledger import carriers, values
from progsum.judge._extract import message_text
from progsum.judge._provenance import user_prose
from progsum.judge._segment import pieces
from progsum.judge._values import named_values, value_keys
from progsum.replay._probes import replay
from progsum.state._conversation import ConversationState
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer

KEEP = 4
BUDGET = 500
Message = dict[str, Any]


@dataclass
class Tally:
    """One set's counts."""

    conversations: int = 0
    stating: int = 0
    """Conversations in which the user stated a named value."""
    stated: int = 0
    folded: int = 0
    lost: int = 0
    street_lost: int = 0
    samples: list[str] = field(default_factory=list)


def stated(messages: Sequence[Message], authors: Sequence[Any]) -> list[tuple[int, str]]:
    """Each named value a user message states, with the message's index (questions only ask)."""
    found: list[tuple[int, str]] = []
    for at, message in enumerate(messages):
        author = authors[at] if authors else None
        if message.get("role") != "user" or author not in (None, "user"):
            continue
        for sentence in pieces(user_prose(message)):
            if sentence.endswith("?"):
                continue
            named = set(named_values(sentence))
            found += [(at, v) for v in values(sentence) if v in named]
    return found


def measure(
    conversations: Sequence[tuple[Sequence[Message], Sequence[Any]]], budget: int, samples: int
) -> Tally:
    """Count one set's named values and how many its compacted contexts keep whole."""
    compactor = Compactor(
        policy=budget_policy(budget, keep=KEEP), summarizer=ExtractiveSummarizer()
    )
    tally = Tally()
    for messages, authors in conversations:
        tally.conversations += 1
        named = stated(messages, authors)
        if not named:
            continue
        tally.stating += 1
        tally.stated += len(named)
        for _, value in named:
            if len(tally.samples) < samples and value not in tally.samples:
                tally.samples.append(value)
        state: ConversationState[Any] = ConversationState()
        for step in replay(messages, compactor, authors=authors or None):
            state = step.after
        folded = [value for at, value in named if 0 < at < state.cutoff]
        if not folded:
            continue
        kept = [message_text(m) for m in state.effective]
        keys = carriers(state.summary, kept)
        numbers = value_keys("\n".join([*kept, state.header]))
        for value in folded:
            tally.folded += 1
            if value in keys:
                continue
            tally.lost += 1
            tally.street_lost += any(
                part in numbers for part in value.split() if any(c.isdigit() for c in part)
            )
    return tally


def sets(data: Path) -> dict[str, list[tuple[Sequence[Message], Sequence[Any]]]]:
    """The five sets, each conversation as its messages and authors."""
    found: dict[str, list[tuple[Sequence[Message], Sequence[Any]]]] = {}
    for name in present(data, ("msc", "memorybank"), some=False):
        found[name] = [(c.messages, ()) for c in shared_data.chats(data, name)]
    found.update(agent_sets(data))
    return found


def table(tallies: dict[str, Tally], budget: int) -> str:
    """The Markdown table, then each set's sample values."""
    lines = [
        f"Named values stated by users, compacted at --budget {budget} (keep {KEEP}, offline)",
        "",
        "| set | conversations | stating one | named values | folded | kept | lost | street lost |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, t in tallies.items():
        lines.append(
            f"| {name} | {t.conversations} | {t.stating} | {t.stated} | {t.folded} | "
            f"{t.folded - t.lost} | {t.lost} | {t.street_lost} |"
        )
    lines.append("")
    lines += [f"{name}: {', '.join(t.samples) or '-'}" for name, t in tallies.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table; exit 1 when a compacted context lost a named value whole."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--budget", type=int, default=BUDGET)
    parser.add_argument("--samples", type=int, default=8)
    args = parser.parse_args(argv)
    started = time.process_time()
    tallies = {
        name: measure(conversations, args.budget, args.samples)
        for name, conversations in sets(args.data).items()
    }
    print(table(tallies, args.budget))
    print(f"{time.process_time() - started:.1f} s CPU", file=sys.stderr)
    return 1 if any(t.lost for t in tallies.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
