"""Sample the judge's corpus: sentences of ``../shared/data`` in their context, for labelling.

    python bench/judge_corpus.py ../shared/data tests/data/judge/unlabelled.jsonl

Each row is one sentence with what a reader needs to judge it: the set it came from, the kind of
conversation (``agent``: a person and an assistant at work; ``chat``: two people chatting), the
speaker's role and author class, the previous message (tail) and the message's position. It also
carries the other speaker's next message (its start, ``reply``), which no label reads: the gate
needs it to tell whether a sentence judged a question was answered, as the pipeline does. The
split is by conversation (a stable digest of its name), so no conversation is on both sides.
Sentences with a cue word (`tests/data/judge/sampling.toml`) are over-sampled, so the hard cases
(epistemic "must", advice to a friend, questions that name a rule) are well represented; the
cue list only chooses what gets labelled, it decides no label.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from progsum import ConversationState
from progsum.judge._dates import without_stamp
from progsum.judge._extract import message_text
from progsum.judge._judgement import Context
from progsum.judge._segment import sentences
from progsum.messages._formats import moment, speaker

sys.path.insert(0, str(Path(__file__).resolve().parent))
import retention
from shared_data import agent_logs

HERE = Path(__file__).resolve().parent.parent / "tests" / "data" / "judge"
TEST_SHARE = 0.3
PREVIOUS = 280
REPLY = 280
"""Characters of the reply a row keeps: its first sentences, where an answer starts."""


CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "judge"
"""The labelled corpus: ``corpus.jsonl`` (sampled here) and ``written.jsonl`` (team-written)."""


def load(folder: Path = CORPUS) -> list[dict[str, Any]]:
    """Every labelled row of ``folder``'s ``corpus.jsonl`` and ``written.jsonl``."""
    rows = []
    for name in ("corpus.jsonl", "written.jsonl"):
        path = folder / name
        if path.exists():
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def sentence(row: dict[str, Any]) -> str:
    """A row's sentence as the pipeline judges it: without the date stamp that opens it.

    The extract stage and the extractive summarizer strip a message's opening stamp before
    they split it into sentences (`progsum.judge._dates.without_stamp`), so a stamped greeting
    is judged as the greeting.
    """
    return without_stamp(row["text"])


def context(row: dict[str, Any]) -> Context:
    """A row's context, as the judge reads it (the previous message without its stamp too)."""
    previous = without_stamp(row.get("previous") or "")
    return Context(author=row["author"], kind=row["kind"], previous=previous)


def split_of(conversation: str) -> str:
    """``test`` for about `TEST_SHARE` of conversations, by a digest of the name; else ``train``."""
    digest = int(hashlib.sha256(conversation.encode()).hexdigest()[:8], 16)
    return "test" if digest % 1000 < TEST_SHARE * 1000 else "train"


def _conversations(data: Path) -> list[tuple[str, str, ConversationState[Any]]]:
    """``(set, name, state)`` for every conversation of ``data``."""
    found = [("msc", c.name, ConversationState(c.messages)) for c in retention.msc(data)]
    found += [
        ("memorybank", c.name, ConversationState(c.messages)) for c in retention.memorybank(data)
    ]
    for source in ("tau_bench", "claude_code", "swe_agent"):
        for log in agent_logs(data, source):
            found += [(source, f"{log.file.stem}/{c.name}", c.state()) for c in log.conversations]
    return found


def rows(data: Path) -> list[dict[str, Any]]:
    """Every candidate sentence of every conversation in ``data``."""
    out: list[dict[str, Any]] = []
    for source, conversation, state in _conversations(data):
        kind = "chat" if source == "msc" else "agent"
        name = f"{source}:{conversation}"
        texts, roles = _texts_and_roles(state)
        previous = ""
        for at, (message, author) in enumerate(zip(state.log, state.authors, strict=True)):
            text = texts[at]
            day = moment(message)
            reply = next_reply(texts, roles, at)
            for sentence in sentences(text):
                out.append(  # noqa: PERF401 - one row per sentence, with its context
                    {
                        "conversation": name,
                        "source": source,
                        "kind": kind,
                        "role": roles[at],
                        "author": author,
                        "speaker": speaker(message),
                        "date": day.isoformat() if day else None,
                        "at": at,
                        "previous": previous[-PREVIOUS:],
                        "reply": reply,
                        "text": sentence,
                    }
                )
            if text.strip():
                previous = " ".join(text.split())
    return out


def _texts_and_roles(state: ConversationState[Any]) -> tuple[list[str], list[str]]:
    """Each message's text (`message_text`) and role, in log order."""
    return [message_text(m) for m in state.log], [info.role for info in state.infos]


def next_reply(texts: Sequence[str], roles: Sequence[str], at: int) -> str | None:
    """The start of the other speaker's first later message with text, after message ``at``.

    The other speaker of a user message is the assistant, and of any other the user, as the
    extractive summarizer reads an answer (`progsum.summarizers.extractive._candidates`).
    """
    other = "assistant" if roles[at] == "user" else "user"
    for later in range(at + 1, len(texts)):
        if roles[later] == other and texts[later].strip():
            return " ".join(texts[later].split())[:REPLY]
    return None


def with_replies(found: Sequence[dict[str, Any]], data: Path) -> list[dict[str, Any]]:
    """``found`` (labelled rows) with each row's ``reply``, read again from its conversation.

    A sampled row's conversation is read from ``data`` (`_holding` tells apart two with one
    name); a written row's from the written rows themselves (a message is its rows' sentences,
    in order).
    """
    logs: dict[str, list[tuple[list[str], list[str]]]] = {}
    for source, conversation, state in _conversations(data):
        logs.setdefault(f"{source}:{conversation}", []).append(_texts_and_roles(state))
    written: dict[str, dict[int, tuple[str, list[str]]]] = {}
    for r in found:
        if r["source"] == "written":
            by_at = written.setdefault(r["conversation"], {})
            by_at.setdefault(r["at"], (r["role"], []))[1].append(r["text"])
    positions: dict[str, dict[int, int]] = {}
    for name, by_at in written.items():
        ats = sorted(by_at)
        logs[name] = [([" ".join(by_at[at][1]) for at in ats], [by_at[at][0] for at in ats])]
        positions[name] = {at: n for n, at in enumerate(ats)}
    out = []
    for r in found:
        at = positions[r["conversation"]][r["at"]] if r["conversation"] in positions else r["at"]
        texts, roles = _holding(logs[r["conversation"]], at, r["text"])
        out.append(_placed(r, "reply", next_reply(texts, roles, at)))
    return out


def _holding(
    logs: Sequence[tuple[list[str], list[str]]], at: int, sentence: str
) -> tuple[list[str], list[str]]:
    """Of the logs under one name, the one whose message ``at`` holds ``sentence``."""
    if len(logs) == 1:
        return logs[0]
    said = " ".join(sentence.split())
    return next(
        (log for log in logs if at < len(log[0]) and said in " ".join(log[0][at].split())),
        next(log for log in logs if at < len(log[0])),
    )


def _placed(row: dict[str, Any], key: str, value: object) -> dict[str, Any]:
    """``row`` with ``key`` set to ``value``, just before ``text`` (the order `rows` writes)."""
    out: dict[str, Any] = {}
    for name, held in row.items():
        if name == key:
            continue
        if name == "text":
            out[key] = value
        out[name] = held
    return out


def sample(
    candidates: list[dict[str, Any]], plan: dict[str, Any], seed: int
) -> list[dict[str, Any]]:
    """Draw `plan`'s count per set, `plan['cue_share']` of them from sentences with a cue word."""
    cue = re.compile(r"\b(?:" + "|".join(plan["cues"]) + r")\b", re.IGNORECASE)
    rng = random.Random(seed)
    chosen: list[dict[str, Any]] = []
    for source, count in plan["per_source"].items():
        pool = [r for r in candidates if r["source"] == source]
        seen: set[str] = set()
        unique = []
        for r in pool:
            if r["text"].casefold() not in seen:
                seen.add(r["text"].casefold())
                unique.append(r)
        cued = [r for r in unique if cue.search(r["text"]) or r["text"].endswith("?")]
        plain = [r for r in unique if r not in cued]
        n_cued = min(len(cued), round(count * plan["cue_share"]))
        picked = rng.sample(cued, n_cued) + rng.sample(plain, min(len(plain), count - n_cued))
        chosen += picked
    chosen.sort(key=lambda r: (r["source"], r["conversation"], r["at"]))
    for n, r in enumerate(chosen):
        r["id"] = f"s{n:05d}"
        r["split"] = split_of(r["conversation"])
    return chosen


def sample_short(
    candidates: list[dict[str, Any]], plan: dict[str, Any], known: set[str]
) -> list[dict[str, Any]]:
    """The last short draw (`plan["short"]`): short sentences the corpus lacks (``known``)."""
    short = plan["short"][-1]
    rng = random.Random(short["seed"])
    chosen: list[dict[str, Any]] = []
    for source, count in short["per_source"].items():
        seen = set(known)
        pool = []
        for r in candidates:
            key = r["text"].casefold()
            short_enough = len(r["text"].split()) <= short["max_words"]
            if r["source"] == source and short_enough and key not in seen:
                seen.add(key)
                pool.append(r)
        chosen += rng.sample(pool, min(len(pool), count))
    chosen.sort(key=lambda r: (r["source"], r["conversation"], r["at"]))
    for n, r in enumerate(chosen):
        r["id"] = f"{short['prefix']}{n:05d}"
        r["split"] = split_of(r["conversation"])
    return chosen


def main(argv: list[str] | None = None) -> int:
    """Write the sampled rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument(
        "--short", action="store_true", help="the last short draw: short sentences not yet labelled"
    )
    parser.add_argument(
        "--replies",
        action="store_true",
        help="rewrite the labelled corpus files in OUT with each row's reply (labels unchanged)",
    )
    args = parser.parse_args(argv)
    if args.replies:
        for name in ("corpus.jsonl", "written.jsonl"):
            path = args.out / name
            found = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            lines = [json.dumps(r, ensure_ascii=False) for r in with_replies(found, args.data)]
            path.write_text("\n".join(lines) + "\n")
            print(f"{len(lines)} rows with their replies -> {path}", file=sys.stderr)
        return 0
    plan = tomllib.loads((HERE / "sampling.toml").read_text())
    if args.short:
        known = {r["text"].casefold() for r in load(HERE)}
        chosen = sample_short(rows(args.data), plan, known)
    else:
        chosen = sample(rows(args.data), plan, args.seed)
    with args.out.open("w") as out:
        for r in chosen:
            out.write(json.dumps({"id": r.pop("id"), **r}, ensure_ascii=False) + "\n")
    print(f"{len(chosen)} sentences -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
