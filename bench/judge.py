"""The judge's gates on the held-back split, and its confusion matrix.

    python bench/judge.py                      # the held-back split of tests/data/judge/
    python bench/judge.py --data ../shared/data  # also: binding items per MSC conversation

Reads the shipped model through `progsum.judge._linear.LinearJudge` (no scikit-learn), judges
every held-back row in its context and prints, per label, precision, recall and support, the
confusion matrix, and the gates of docs/judge.md:

* rule precision >= 0.95 and recall >= 0.85;
* chatter (pleasantries, acknowledgements, greetings, list markers) never becomes an item: the
  share of held-back chatter that becomes no item >= 0.95 (judged remark, chatter or machine,
  without a content word, or a question the other speaker answers, which the pipeline makes no
  item of: `becomes_item`); the share judged remark, chatter or machine, and the share that
  becomes no item whether answered or not, are printed beside it;
* no question and no prohibition is judged a revision (none reopens a binding item);
* with ``--data``: at most 0.2 binding items per two-person chat (MSC) in the header after a
  fold, with the caller not saying it is a chat (`msc_binding`); every fact in the header names
  its speaker, and its day where the conversation carries days, in MSC (names, no days),
  MemoryBank (``timestamp`` keys) and MemoryBank with each day given only as a stamp opening its
  first message ("[10:00 am on 30 April, 2023] ...", `who_and_when`).
Exit status 1 when a gate fails.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from judge_corpus import CORPUS, context, load, sentence

from progsum import Compactor, ConversationState, Policy
from progsum.judge import _seam as seam
from progsum.judge._dates import without_stamp
from progsum.judge._judgement import LABELS, NEVER_ITEMS
from progsum.judge._linear import LinearJudge
from progsum.messages._formats import Message
from progsum.summarizers import ExtractiveSummarizer
from progsum.summarizers.extractive._candidates import answers
from progsum.summarizers.extractive._kinds import substantive

GATES = {
    "rule_precision": 0.95,
    "rule_recall": 0.85,
    "chatter_kept_out": 0.95,
    "reopens": 0,
    "msc_binding_per_conversation": 0.2,
    "facts_named": 1.0,
    "facts_dated": 1.0,
}

_LABEL = re.compile(r"^(?P<who>[^:(]+?)(?: \((?P<day>\d{1,2} [A-Z][a-z]+ \d{4})\))?: ")
"""A note's label as docs/judge.md gives it: ``Caroline (9 June 2023): ...``."""


def held_back(folder: Path = CORPUS) -> list[dict[str, Any]]:
    """The held-back rows of the corpus files in ``folder``."""
    return [r for r in load(folder) if r["split"] == "test"]


def becomes_item(label: str, sentence: str, *, answered: bool = False) -> bool:
    """Whether a sentence judged ``label`` becomes a header item in the pipeline.

    An item label is not enough: the extractive summarizer and the contract make an item only
    of a sentence with a content word (`progsum.summarizers.extractive._kinds.substantive`), so
    ":?" or "I'm in." judged a question or a fact still becomes none; and a question is an open
    thread only while nobody answers it (``answered``: `answered`), so "Did you sleep well?"
    judged a question and answered "Not really, the neighbours had a party." becomes none.
    """
    if label == "question" and answered:
        return False
    return label not in NEVER_ITEMS and substantive(sentence)


def answered(row: dict[str, Any], judge: LinearJudge) -> bool:
    """Whether the other speaker's next message (the row's ``reply``) answers the row.

    As the extractive summarizer reads an answer (`candidates.answers`: a sentence the judge
    reads as more than chatter; "Haha yes!" answers nothing). Only the first reply
    is read (the summarizer reads every later one in the segment), so this errs towards an item.
    """
    reply = row.get("reply")
    if not reply:
        return False
    with seam.using(judge, conversation=row["kind"]):
        return answers(without_stamp(reply), row["role"])


def figures(rows: Sequence[dict[str, Any]], judge: LinearJudge | None = None) -> dict[str, Any]:
    """Per-label figures, the confusion matrix and the gate figures for ``rows``."""
    judge = judge or LinearJudge()
    said = [judge.judge(sentence(r), context(r)).label for r in rows]
    truth = [r["label"] for r in rows]
    confusion = Counter(zip(truth, said, strict=True))
    per = {}
    for label in LABELS:
        tp = confusion[(label, label)]
        predicted = sum(s == label for s in said)
        real = sum(t == label for t in truth)
        per[label] = {
            "precision": tp / predicted if predicted else 1.0,
            "recall": tp / real if real else 1.0,
            "support": real,
        }
    chatter = [(r, s) for r, s in zip(rows, said, strict=True) if r["label"] == "chatter"]
    reopening = sum(
        s == "revision"
        for r, s in zip(rows, said, strict=True)
        if r["label"] == "question" or (r["label"] == "rule" and r.get("modality") == "must_not")
    )
    return {
        "rows": len(rows),
        "accuracy": sum(t == s for t, s in zip(truth, said, strict=True)) / len(rows),
        "labels": per,
        "confusion": {f"{t}->{s}": n for (t, s), n in sorted(confusion.items())},
        "rule_precision": per["rule"]["precision"],
        "rule_recall": per["rule"]["recall"],
        "chatter_kept_out": 1
        - sum(
            becomes_item(s, sentence(r), answered=s == "question" and answered(r, judge))
            for r, s in chatter
        )
        / len(chatter)
        if chatter
        else 1.0,
        "chatter_kept_out_unanswered": 1
        - sum(becomes_item(s, sentence(r)) for r, s in chatter) / len(chatter)
        if chatter
        else 1.0,
        "chatter_judged_no_item": sum(s in NEVER_ITEMS for _, s in chatter) / len(chatter)
        if chatter
        else 1.0,
        "reopens": reopening,
    }


def msc_binding(data: Path, *, conversation: str | None = None) -> float:
    """Binding items in the header per MSC conversation, each compacted once.

    Every conversation is folded once with the defaults and the offline summarizer, at a window
    small enough that all but the last four messages fold. The caller does not say it is a chat
    (`progsum.judge._conversation` reads the kind off the messages) unless ``conversation`` does;
    ``conversation="agent"`` reads every chat as an agent conversation, the worst case.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import retention  # noqa: PLC0415 - bench/retention.py: the chat sets' loaders

    found = 0
    conversations = retention.msc(data)
    for chat in conversations:
        compactor = Compactor(
            policy=Policy(context_window=1_000, keep=("messages", 4)),
            summarizer=ExtractiveSummarizer(),
            conversation=conversation,  # type: ignore[arg-type]
        )
        state = compactor.compact(ConversationState(list(chat.messages)), force=True)
        if state.summary is not None:
            found += len(state.summary.constraints) + len(state.summary.decisions)
    return found / len(conversations)


def restamped(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with each day only as a stamp opening its first message (no ``timestamp``)."""
    out: list[Message] = []
    last = None
    for message in messages:
        moved = dict(message)
        day = moved.pop("timestamp", None)
        if day is not None and day != last:
            d = date.fromisoformat(str(day))
            moved["content"] = f"[10:00 am on {d.day} {d:%B}, {d.year}] {moved['content']}"
            last = day
        out.append(moved)
    return out


def who_and_when(data: Path) -> dict[str, dict[str, float]]:
    """Per chat set, the share of header facts that name their speaker, and their day.

    Each conversation runs turn by turn with the defaults (`maybe_compact`, a 2,000-token window,
    the offline summarizer); every fact of the final header is read: its label must name one of
    the conversation's speakers (or ``User``/``Assistant``), and carry a day when any message does.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import retention  # noqa: PLC0415 - bench/retention.py: the chat sets' loaders

    def same(messages: Sequence[Message]) -> list[Message]:
        return list(messages)

    sets: dict[str, tuple[list[Any], Callable[[Sequence[Message]], list[Message]]]] = {
        "msc": (retention.msc(data), same),
        "memorybank": (retention.memorybank(data), same),
        "memorybank, days as stamps": (retention.memorybank(data), restamped),
    }
    out = {}
    for name, (conversations, shape) in sets.items():
        facts = named = dated = with_days = 0
        for chat in conversations:
            messages = shape(chat.messages)
            names = {str(m["name"]) for m in messages if m.get("name")} | {"User", "Assistant"}
            days = any(
                m.get("timestamp") or str(m.get("content", "")).startswith("[") for m in messages
            )
            compactor = Compactor(
                policy=Policy(context_window=2_000), summarizer=ExtractiveSummarizer()
            )
            state: ConversationState[Any] = ConversationState()
            for message in messages:
                state = compactor.maybe_compact(state.append(message))
            for item in state.summary.established_facts if state.summary is not None else ():
                facts += 1
                label = _LABEL.match(item.text)
                named += label is not None and label["who"] in names
                if days:
                    with_days += 1
                    dated += label is not None and label["day"] is not None
        out[name] = {
            "facts": facts,
            "named": named / facts if facts else 1.0,
            "dated": dated / with_days if with_days else 1.0,
        }
    return out


def failures(result: dict[str, Any]) -> list[str]:
    """The gates ``result`` misses, each as a line."""
    out = [
        f"{name} {result[name]:.4f} < {GATES[name]}"
        for name in ("rule_precision", "rule_recall", "chatter_kept_out")
        if name in result and result[name] < GATES[name]
    ]
    if result.get("reopens", 0) > GATES["reopens"]:
        out.append(f"{result['reopens']} questions or prohibitions judged a revision")
    out += [
        f"{name}: {shares[share]:.3f} of header facts {share} (gate 1.0)"
        for name, shares in result.get("who_and_when", {}).items()
        for share in ("named", "dated")
        if shares[share] < GATES[f"facts_{share}"]
    ]
    msc = result.get("msc_binding_per_conversation")
    if msc is not None and msc > GATES["msc_binding_per_conversation"]:
        out.append(f"msc_binding_per_conversation {msc:.3f} > 0.2")
    return out


def table(result: dict[str, Any]) -> str:
    """Per-label figures and the confusion matrix, as Markdown."""
    lines = ["| label | precision | recall | held-back rows |", "|---|---:|---:|---:|"]
    for label, f in result["labels"].items():
        lines.append(f"| {label} | {f['precision']:.3f} | {f['recall']:.3f} | {f['support']} |")
    header = "| true \\ judged | " + " | ".join(LABELS) + " |"
    lines += ["", header, "|---|" + "---:|" * len(LABELS)]
    for t in LABELS:
        cells = [str(result["confusion"].get(f"{t}->{s}", 0)) for s in LABELS]
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the figures; exit 1 when a gate fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="the shared data folder, for the MSC gate")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    judge = LinearJudge()
    result = figures(held_back(), judge)
    if args.data:
        result["msc_binding_per_conversation"] = msc_binding(args.data)
        result["who_and_when"] = who_and_when(args.data)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"held-back rows: {result['rows']}, accuracy {result['accuracy']:.3f}")
        print(table(result))
        for name in (
            "rule_precision",
            "rule_recall",
            "chatter_kept_out",
            "chatter_kept_out_unanswered",
            "chatter_judged_no_item",
            "reopens",
            "msc_binding_per_conversation",
        ):
            if name in result:
                print(
                    f"{name}: {result[name]:.3f}"
                    if isinstance(result[name], float)
                    else f"{name}: {result[name]}"
                )
        for name, shares in result.get("who_and_when", {}).items():
            print(
                f"{name}: {shares['facts']} header facts, {shares['named']:.3f} name their "
                f"speaker, {shares['dated']:.3f} their day"
            )
    missed = failures(result)
    for line in missed:
        print(f"GATE FAILED: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
