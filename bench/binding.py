"""The binding contract on real logs: who wrote every binding item, and every value the user stated.

Usage: ``python bench/binding.py DATA_DIR [--trigger TOKENS] [--keep N] [--msc N]``

Replays every Claude Code, tau-bench and SWE-agent conversation of DATA_DIR (and the first N
Multi-Session Chat conversations) turn by turn through the engine with the offline extractive
summarizer, at a small window so that it compacts often, and after every compaction counts:

* binding items (rules, decisions) and how many of them come from machine text: an item whose
  recorded author is not the user, or whose citations hold no message the user wrote;
* binding items citing a message whose text is machine-written in the user role (harness tags,
  command output, SWE-agent observations), read with the importers' author classes;
* exact values the user stated in folded messages that neither a live item nor a kept message
  carries token-exactly (the ledger's promise), apart from those recall brings back: a value
  only a non-binding fact carried may leave an over-full header when a question naming its
  subject (its sentence's terms less the value's) ranks the stating message among the recall
  block's excerpts (docs/recall.md); those are counted as *released*, checked here by a search
  of the folded messages of the bench's own.

The target is 0 in the machine, uncited and lost columns. Authors come from the importers
(`Imported.authors`); the check reads the state's own records, so it is a census of what the
engine produced, while the adversary tests (tests/test_adversaries.py) check the contract with an
independent oracle.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msc_probes
from shared_data import agent_conversations, present

from progsum import Compactor, ConversationState, Policy
from progsum.contract._ledger import carriers
from progsum.engine._recall import BROUGHT, within
from progsum.judge._extract import message_text
from progsum.judge._provenance import user_prose
from progsum.judge._seam import sentences
from progsum.judge._values import carried, stated_values
from progsum.recall._index import Index
from progsum.recall._terms import document, query_terms, terms
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._schema import BaseSummary, spec_of


@dataclass
class Census:
    """Counts over one corpus."""

    conversations: int = 0
    compactions: int = 0
    binding: int = 0
    machine: int = 0
    uncited: int = 0
    values: int = 0
    released: int = 0
    lost: int = 0
    example: str = ""


def check(state: ConversationState[Any], census: Census) -> None:
    """Count the binding items of ``state`` and the user's folded values it no longer carries."""
    summary: BaseSummary | None = state.summary
    if summary is None:
        return
    fields = spec_of(type(summary))
    authors = state.authors
    for f in fields.binding:
        for item in getattr(summary, f.name):
            census.binding += 1
            if item.author != "user":
                census.machine += 1
                census.example = census.example or f"{item.id} {item.text[:80]!r}"
            if not any(0 <= at < len(authors) and authors[at] == "user" for at in item.cites):
                census.uncited += 1
                census.example = census.example or f"{item.id} cites {item.cites}"
    keys = carriers(summary, [message_text(m) for m in state.effective])
    folded: Folded | None = None
    for at in range(state.head_end, state.cutoff):
        if authors[at] != "user":
            continue
        for sentence in sentences(user_prose(state.log[at])):
            if sentence.endswith("?"):
                continue  # a value only asked about is no statement (see progsum.contract._ledger)
            for value in stated_values(sentence):
                census.values += 1
                if carried(value, keys):
                    continue
                folded = folded or Folded(state)
                if folded.recalls(at, sentence, value):
                    census.released += 1
                else:
                    census.lost += 1
                    census.example = census.example or f"value {value!r} of message {at}"


class Folded:
    """The folded messages of a state, searched as the recall block searches them."""

    def __init__(self, state: ConversationState[Any]) -> None:
        self.ranges = within(state)
        self.index = Index()
        for a, b in self.ranges:
            for at in range(a, b):
                self.index.add(at, document(state.log[at]))

    def recalls(self, at: int, sentence: str, value: str) -> bool:
        """Whether a question naming the sentence's subject ranks message ``at`` in the block."""
        own = set(terms(value))
        subject = tuple(t for t in query_terms(sentence) if t not in own)
        if not subject:
            return False
        found = self.index.search(subject, self.ranges, limit=BROUGHT)
        return any(index == at for index, _ in found)


def replay(
    messages: Sequence[Any],
    authors: Sequence[Any] | None,
    compactor: Compactor[Any],
    census: Census,
) -> None:
    """Append turn by turn; census after every compaction."""
    census.conversations += 1
    state: ConversationState[Any] = ConversationState()
    for k, message in enumerate(messages):
        grown = state.append(message, author=authors[k] if authors else None)
        state = compactor.maybe_compact(grown)
        if state.cutoff > grown.cutoff:
            census.compactions += 1
            check(state, census)


def main(argv: Sequence[str] | None = None) -> int:
    """Print one row per corpus."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--trigger", type=int, default=2_000, help="trigger in tokens")
    parser.add_argument("--keep", type=int, default=4, help="messages kept verbatim")
    parser.add_argument("--msc", type=int, default=100, help="MSC conversations to include")
    args = parser.parse_args(argv)
    policy = Policy(
        context_window=max(8_000, 4 * args.trigger),
        trigger=("tokens", args.trigger),
        keep=("messages", args.keep),
    )
    compactor = Compactor(policy=policy, summarizer=ExtractiveSummarizer())
    censuses: dict[str, Census] = {}
    for corpus, conversation in agent_conversations(args.data):
        census = censuses.setdefault(corpus, Census())
        replay(conversation.messages, conversation.authors, compactor, census)
    if args.msc and present(args.data, ["msc"], some=False):
        census = censuses.setdefault("msc", Census())
        for chat in msc_probes.conversations(args.data, limit=args.msc):
            replay(chat.messages, None, compactor, census)
    header = (
        f"{'corpus':<12} {'convs':>5} {'folds':>6} {'binding':>8} {'machine':>8} "
        f"{'uncited':>8} {'values':>7} {'released':>9} {'lost':>5}"
    )
    print(f"trigger {args.trigger:,} tokens, keep {args.keep} messages, extractive summarizer")
    print(header)
    for corpus, c in censuses.items():
        print(
            f"{corpus:<12} {c.conversations:>5} {c.compactions:>6} {c.binding:>8} {c.machine:>8} "
            f"{c.uncited:>8} {c.values:>7} {c.released:>9} {c.lost:>5}"
        )
        if c.example:
            print(f"  first problem: {c.example}")
    bad = sum(c.machine + c.uncited + c.lost for c in censuses.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
