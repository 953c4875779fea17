"""Convert Multi-Session Chat (MSC) into conversation files and probe files for ``progsum replay``.

    python bench/msc_probes.py /work/shared/data /tmp/msc            # all 501 conversations
    progsum replay /tmp/msc/msc-000.json --budget 400 --keep 4 --probes /tmp/msc/msc-000.probes.json

Data: the MSC session-3 test split (``DATA_DIR/msc/session_3/test.txt``; DATA_DIR may also be the
``msc`` folder or the file itself), read in place. OUT_DIR receives, per conversation ``n`` (file
order), ``msc-NNN.json`` (an Anthropic message list) and ``msc-NNN.probes.json`` (a probe list,
see `progsum.replay._probes`). Nothing else is written, and the data is never copied elsewhere.

The chat. Sessions 1 and 2 (``previous_dialogs``) then session 3 (``dialog``), one message per
utterance, in order. Every session opens with Speaker 1 and the speakers alternate, so utterance
0, 2, 4, ... of a session is Speaker 1, mapped to ``user``, and 1, 3, 5, ... is Speaker 2, mapped
to ``assistant``. Session breaks are not marked.

The probes. One per crowd-written persona sentence of session 1 (``previous_dialogs[0].personas``:
Speaker 1's list, then Speaker 2's; each list entry is one fact) that the chat states in words.
Persona sentences paraphrase the chat ("I have a marketing job." for "I work in marketing"), so a
probe's strings are the fact's *key words* that the speaker actually said: words (runs of ASCII
letters, case-folded) of at least `MIN_LETTERS` letters, not in `STOPWORDS`. The stating message
(``at``) is the speaker's session-1 utterance holding the most of the fact's key words (the
earliest on a tie); the strings are the key words found in it, longest first, at most
`MAX_STRINGS`. A fact none of whose key words the speaker said in session 1 gets no probe. The probe
id is ``s1-<speaker>-<k>``: the speaker (1 or 2) and the fact's position in the speaker's list.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared_data import msc_file, msc_messages, msc_records

from progsum.replay._probes import Probe

Message = dict[str, Any]

MIN_LETTERS = 4
"""Shorter words are not key words (substring matches of short words are too easy)."""
MAX_STRINGS = 3
"""Strings per probe at most: the fact's longest key words that the speaker said."""
STOPWORDS = frozenset(
    {
        *("about", "also", "been", "being", "both", "came", "come", "could", "does", "doing"),
        *("done", "each", "even", "ever", "from", "gets", "getting", "going", "gone", "good"),
        *("have", "having", "here", "into", "just", "kind", "know", "like", "likes", "lots"),
        *("love", "loves", "made", "make", "many", "more", "most", "much", "must", "myself"),
        *("never", "only", "other", "over", "really", "same", "some", "such", "than", "that"),
        *("their", "them", "then", "there", "these", "they", "thing", "things", "this", "those"),
        *("very", "want", "wants", "well", "were", "what", "when", "where", "which", "while"),
        *("will", "with", "would", "year", "years", "your", "yours", "enjoy", "enjoys", "time"),
        *("didn", "doesn", "isn", "wasn", "aren", "weren", "wouldn", "couldn", "shouldn"),
    }
)
_LETTERS = re.compile(r"[a-z]+")


@dataclass(frozen=True, slots=True)
class Conversation:
    """One MSC conversation as a chat and its session-1 probes.

    ``questions`` maps a probe id to the question that asks for its fact and the strings its
    answer must hold (bench/retention.py's rows with recall); a probe without one is not asked.
    """

    name: str
    messages: tuple[Message, ...]
    probes: tuple[Probe, ...]
    questions: Mapping[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)


def key_words(text: str) -> list[str]:
    """The key words of ``text`` in order, without repeats (see the module docstring)."""
    seen: dict[str, None] = {}
    for word in _LETTERS.findall(text.casefold()):
        if len(word) >= MIN_LETTERS and word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)


def chat(record: dict[str, Any]) -> tuple[Message, ...]:
    """Sessions 1, 2 and 3 as one message list: even utterances user, odd ones assistant."""
    return msc_messages(record, named=False)


def questions(
    record: dict[str, Any], found: Sequence[Probe]
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """A question per probe that names its fact's subject, and the answer it asks for.

    The subject is the fact's first key word that the speaker said, when they said two or more
    (the probe's strings); the answer is the other words said. With one word said, the question
    is the fact's key words that were not said, and the answer that word: for the persona fact
    "I have a marketing job." said as "I work in marketing", "What about job?" asks for
    "marketing". A fact all of whose key words were said, one word only, gets no question.
    """
    personas = record["previous_dialogs"][0]["personas"]
    asked: dict[str, tuple[str, tuple[str, ...]]] = {}
    for probe in found:
        _, speaker, k = probe.id.split("-")
        words = key_words(personas[int(speaker) - 1][int(k) - 1])
        said = [w for w in words if w in probe.strings]
        if len(said) >= 2:  # noqa: PLR2004 - a subject and an answer
            answer = tuple(s for s in probe.strings if s != said[0])
            asked[probe.id] = (f"What about {said[0]}?", answer)
            continue
        unsaid = [w for w in words if w not in probe.strings]
        if unsaid:
            asked[probe.id] = (f"What about {' '.join(unsaid)}?", probe.strings)
    return asked


def probes(record: dict[str, Any]) -> tuple[Probe, ...]:
    """The session-1 persona facts the chat states, as probes (see the module docstring)."""
    first = record["previous_dialogs"][0]
    utterances = [key_words(turn["text"]) for turn in first["dialog"]]
    found: list[Probe] = []
    for speaker, facts in enumerate(first["personas"]):
        said = [(at, words) for at, words in enumerate(utterances) if at % 2 == speaker]
        for k, fact in enumerate(facts, start=1):
            wanted = key_words(fact)
            best_at, best = -1, list[str]()
            for at, words in said:
                hits = [word for word in wanted if word in words]
                if len(hits) > len(best):
                    best_at, best = at, hits
            if best:
                strings = sorted(best, key=lambda word: (-len(word), wanted.index(word)))
                found.append(Probe(f"s1-{speaker + 1}-{k}", best_at, tuple(strings[:MAX_STRINGS])))
    return tuple(found)


def conversations(path: Path, limit: int | None = None) -> Iterator[Conversation]:
    """MSC's conversations with their probes, in file order, at most ``limit``.

    ``path``: the data folder, its ``msc/`` or the file (`shared_data.msc_file`).
    """
    for number, record in enumerate(msc_records(path, limit)):
        yield Conversation(f"msc-{number:03d}", chat(record), probes(record))


def probe_json(found: Sequence[Probe]) -> str:
    """A probe file: one probe per line, readable and diff-friendly."""
    rows = [
        json.dumps({"id": p.id, "at": p.at, "strings": list(p.strings)}, ensure_ascii=False)
        for p in found
    ]
    return "[\n" + ",\n".join(f"  {row}" for row in rows) + "\n]\n"


def main(argv: Sequence[str] | None = None) -> None:
    """Write the conversation and probe files."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data_dir", type=Path, help="the shared data folder (or msc/, or the file)")
    parser.add_argument("out_dir", type=Path, help="where to write msc-NNN.json and .probes.json")
    parser.add_argument("--limit", type=int, default=None, help="first N conversations only")
    args = parser.parse_args(argv)
    msc_file(args.data_dir)  # no MSC there: stop before writing anything
    args.out_dir.mkdir(parents=True, exist_ok=True)
    count = total = 0
    for conversation in conversations(args.data_dir, args.limit):
        base = args.out_dir / conversation.name
        text = json.dumps(list(conversation.messages), ensure_ascii=False, indent=1) + "\n"
        base.with_suffix(".json").write_text(text, encoding="utf-8")
        base.with_suffix(".probes.json").write_text(
            probe_json(conversation.probes), encoding="utf-8"
        )
        count += 1
        total += len(conversation.probes)
    print(f"wrote {count} conversations with {total:,} probes to {args.out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
