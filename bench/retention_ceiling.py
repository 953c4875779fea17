"""How far the chat gate can go: what a summarizer that knows the answers keeps, same engine.

    python bench/retention_ceiling.py /work/shared/data
    python bench/retention_ceiling.py DATA_DIR --sizes 4000 8000 --streams 12

The chat rows of ``bench/retention.py`` compare the offline `ExtractiveSummarizer` with truncation
at the same final size. This script asks what *any* choice among the extractive notes could reach,
on the same streams and with the same policy (header budget at its default), in two ways:

**Answer-aware** (through the engine). `AnswerAware` is the extractive summarizer with the
stream's probes in hand: of each update it proposes only the notes that hold all strings of some
probe (a joined note keeps just such notes), so no header token goes to a note no probe asks
about. Everything else is progsum as shipped: the contract, the value ledger (whose last
carriers stay whole), binding items, consolidation by the engine's drop rule, the window. Its
ratio is against truncation at *its* final size, like the gate's.

**Hindsight cover** (no engine). Every note the answer-aware run proposed, over the whole
stream, with the probes it answers and its estimated tokens; a greedy set cover (most new probes
per token first) within the header budget less the header's fixed text, and the shipped run's
tail probes added. It may pick notes the engine had dropped long before, pays nothing for binding
items or the ledger's carriers, and knows the end of the stream: what hindsight could pick, not a
method (and, greedy, not the best cover either). Its ratio is against the shipped run's
truncation.

Data as in ``bench/retention.py`` (read in place, never copied); bench/retention.md gives the
figures.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import retention
from msc_probes import Conversation

from progsum import Compactor, Policy
from progsum.judge._notes import SEPARATOR, joined, split_note
from progsum.judge._values import exact_values
from progsum.policy._policy import Threshold
from progsum.replay._probes import evaluate, normalize
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summary._request import Summarizer, SummaryRequest
from progsum.summary._update import NewItem, SummaryUpdate

Strings = tuple[str, ...]


@dataclass(slots=True)
class AnswerAware:
    """A summarizer (by default `ExtractiveSummarizer`) that proposes only notes answering a probe.

    ``probes`` are each probe's strings, normalized (`progsum.replay._probes.normalize`).
    ``proposed`` collects every note it proposed, as ``(label, body)``, for the hindsight cover.
    """

    probes: Sequence[Strings]
    inner: Summarizer = field(default_factory=ExtractiveSummarizer)
    proposed: list[tuple[str, str]] = field(default_factory=list)
    seen: list[tuple[str, bool]] = field(default_factory=list)
    """Every note the inner summarizer proposed, answering or not: ``(body, answers a probe)``."""

    def answers(self, text: str) -> frozenset[int]:
        """Indices of the probes all of whose strings ``text`` holds (both normalized)."""
        plain = normalize(text)
        return frozenset(
            k for k, strings in enumerate(self.probes) if all(s in plain for s in strings)
        )

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """The inner update with every note that answers no probe left out."""
        update = self.inner.summarize(request)
        add: dict[str, tuple[str | NewItem, ...]] = {}
        for name, entries in update.add.items():
            kept: list[str | NewItem] = []
            for entry in entries:
                text = entry.text if isinstance(entry, NewItem) else entry
                label, bodies = split_note(text)
                useful = [body for body in bodies if self.answers(body)]
                self.seen.extend((body, body in useful) for body in bodies)
                if not useful:
                    continue
                self.proposed.extend((label, body) for body in useful)
                new = joined(label, SEPARATOR.join(useful))
                kept.append(
                    entry.model_copy(update={"text": new}) if isinstance(entry, NewItem) else new
                )
            if kept:
                add[name] = tuple(kept)
        return update.model_copy(update={"add": add})


FEATURES = {
    "stative first verb": re.compile(
        r"^(?:is|am|are|has|have|works|lives|plays|loves|likes|prefers|hates|owns|studies|"
        r"teaches|grew up|was born|enjoys|drives|eats|collects|speaks|volunteers|used to)\b"
    ),
    "short-horizon time word": re.compile(
        r"\b(?:today|tonight|yesterday|tomorrow|this (?:morning|afternoon|evening|weekend)|"
        r"right now|later|the other day|going to|gonna|will|would|might|could|should)\b",
        re.IGNORECASE,
    ),
}
"""Features of a note's body that a rule can read, to see how well they tell answering notes."""


def features(seen: Sequence[tuple[str, bool]]) -> dict[str, tuple[int, int, int, int]]:
    """Per feature: notes with it, how many answer; notes without it, how many answer."""
    found = {}
    for name, pattern in (*FEATURES.items(), ("exact value", None)):
        with_it = [hit for body, hit in seen if _has(body, pattern)]
        without = [hit for body, hit in seen if not _has(body, pattern)]
        found[name] = (len(with_it), sum(with_it), len(without), sum(without))
    return found


def _has(body: str, pattern: re.Pattern[str] | None) -> bool:
    return bool(exact_values(body)) if pattern is None else bool(pattern.search(body))


@dataclass(frozen=True, slots=True)
class Row:
    """One set at one size: probes kept by each side, as counts over all streams."""

    probes: int
    shipped: int
    shipped_truncation: int
    aware: int
    aware_truncation: int
    cover: int
    seen: tuple[tuple[str, bool], ...] = ()
    """Every note the inner summarizer proposed in the answer-aware runs (`AnswerAware.seen`)."""


def cover(
    notes: Sequence[tuple[int, frozenset[int]]], budget: int, already: frozenset[int]
) -> frozenset[int]:
    """Greedy set cover of notes ``(tokens, probes answered)`` within ``budget`` tokens.

    The note with most probes not yet covered per token goes first; ``already`` is covered.
    """
    covered = set(already)
    left = budget
    while True:
        best = None
        for tokens, answered in notes:
            new = len(answered - covered)
            if new and tokens <= left and (best is None or new / tokens > best[0]):
                best = (new / tokens, tokens, answered)
        if best is None:
            return frozenset(covered)
        covered |= best[2]
        left -= best[1]


def study_policy(size: int, header: float | None = None) -> Policy:
    """The policy the ceiling study was made under: trigger 65%, `retention.KEEP` messages kept.

    The study asks what a better selection of notes could keep at the header budget; with the
    shipped defaults (a tail fitted to the target) most of what survives is verbatim tail, and the
    question is the recall block's (bench/retention.md). Recall is off: the study is of the
    header's notes alone.
    """
    tail: Threshold = ("messages", retention.KEEP)
    if header is None:
        return Policy(
            context_window=size, trigger=("fraction", 0.65), keep=tail, recall_budget=None
        )
    return Policy(
        context_window=size,
        trigger=("fraction", 0.65),
        keep=tail,
        header_budget=("fraction", header),
        recall_budget=None,
    )


def measure(
    conversations: Sequence[Conversation],
    size: int,
    limit: int,
    header: float | None = None,
) -> Row:
    """Replay each stream with the shipped and the answer-aware summarizer; cover in hindsight.

    ``header`` is the header budget as a fraction of the window (None: the policy's default).
    """
    policy = study_policy(size, header)
    shipped = Compactor(policy=policy, summarizer=ExtractiveSummarizer())
    counter = shipped.counter
    header_limit = policy.in_conversation("chat").header_limit or 0  # the streams are chats
    totals = dict.fromkeys(("probes", "s", "st", "a", "at", "c"), 0)
    seen: list[tuple[str, bool]] = []
    for stream in retention.streams(conversations, retention.STREAM_FACTOR * size, limit):
        strings = [tuple(normalize(s) for s in p.strings) for p in stream.probes]
        base = evaluate(stream.messages, stream.probes, shipped)
        aware = AnswerAware(strings)
        result = evaluate(
            stream.messages, stream.probes, Compactor(policy=policy, summarizer=aware)
        )
        rendered = result.state.header
        lines = [line for line in rendered.splitlines() if line.startswith("- [")]
        fixed = counter.count_text(rendered) - sum(counter.count_text(line) for line in lines)
        budget = round(header_limit / policy.safety_margin) - fixed
        notes = [
            (counter.count_text(f"- [F1] {joined(label, body)}"), aware.answers(body))
            for label, body in dict.fromkeys(aware.proposed)
        ]
        tail = frozenset(k for k, r in enumerate(base.results) if r.progsum and not r.header)
        totals["probes"] += len(stream.probes)
        totals["s"] += sum(r.progsum for r in base.results)
        totals["st"] += sum(r.truncation for r in base.results)
        totals["a"] += sum(r.progsum for r in result.results)
        totals["at"] += sum(r.truncation for r in result.results)
        totals["c"] += len(cover(notes, budget, tail))
        seen.extend(aware.seen)
    return Row(
        probes=totals["probes"],
        shipped=totals["s"],
        shipped_truncation=totals["st"],
        aware=totals["a"],
        aware_truncation=totals["at"],
        cover=totals["c"],
        seen=tuple(seen),
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the ceiling table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(retention.SIZES))
    parser.add_argument("--streams", type=int, default=retention.DEFAULT_STREAMS)
    parser.add_argument(
        "--header-budget",
        type=float,
        default=None,
        help="header budget as a fraction of the window (default: the policy's, 0.15)",
    )
    parser.add_argument(
        "--sets", nargs="+", choices=("msc", "memorybank"), default=["msc", "memorybank"]
    )
    parser.add_argument(
        "--features", action="store_true", help="also how well simple features tell answers"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print(
        "| set | window | probes | shipped | truncation | ratio | answer-aware | truncation "
        "| ratio | hindsight cover | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    split: list[str] = []
    readers = {"msc": ("MSC", retention.msc), "memorybank": ("MemoryBank", retention.memorybank)}
    for key in args.sets:
        name, read = readers[key]
        conversations = read(args.data)
        for size in args.sizes:
            r = measure(conversations, size, args.streams, args.header_budget)

            def share(n: int, r: Row = r) -> str:
                return f"{n / max(r.probes, 1):.1%}"

            print(
                f"| {name} | {size:,} | {r.probes} | {share(r.shipped)} | "
                f"{share(r.shipped_truncation)} | "
                f"{retention.ratio(r.shipped, r.shipped_truncation):.2f}x | {share(r.aware)} | "
                f"{share(r.aware_truncation)} | "
                f"{retention.ratio(r.aware, r.aware_truncation):.2f}x | {share(r.cover)} | "
                f"{retention.ratio(r.cover, r.shipped_truncation):.2f}x |"
            )
            for feature, (n, hit, m, miss) in features(r.seen).items():
                split.append(
                    f"| {name} | {size:,} | {feature} | {hit}/{n} ({hit / max(n, 1):.0%}) | "
                    f"{miss}/{m} ({miss / max(m, 1):.0%}) |"
                )
    if args.features:
        print()
        print("| set | window | feature | notes with it that answer | without it |")
        print("|---|---:|---|---:|---:|")
        for line in split:
            print(line)
    print(f"ran in {time.perf_counter() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
