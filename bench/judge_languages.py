"""The judge on users' requirements written in other languages: per language and source.

    python bench/judge_languages.py                      # reads /work/data-extra
    python bench/judge_languages.py EXTRA --shared DATA  # and CrossWOZ from the shared data
    python bench/judge_languages.py EXTRA --sample 30    # also prints 30 rows per language
    PYTHONPATH=/work/wt-judge python bench/judge_languages.py   # another checkout's judge

Reads, in place, licensed corpora of users' requests to an assistant written in other languages
(``DATA``, default ``/work/data-extra``; each folder's ``SOURCE.md`` gives its URL, commit and
licence; method, mapping and hand check in ``bench/judge_languages.md``):

* ``xsid/`` (xSID 0.7, CC BY-SA 4.0): single requests to a voice assistant, German and Japanese
  translated from English by professionals, with the English original beside each (``en``);
* ``x-risawoz/`` (X-RiSAWOZ few-shot, BSD-3-Clause): 100 task dialogues with a user's dialogue
  acts per turn, French and English post-edited from the Chinese (the three are parallel);
* with ``--shared DATA`` (the team's shared data folder), CrossWOZ's Chinese test dialogues
  (Apache-2.0), read as X-RiSAWOZ's.

Each user sentence whose source labels say it sets a requirement on the assistant's work (the
issue's definition: format, length, language, tone, persona, scope, exclusions, exact values) is
a *rule row*; the mapping from the source's labels is `xsid_label` and `risawoz_label`. For each
language and source it prints:

* ``judged rule``: the share of rule rows the installed judge labels ``rule`` (its verdict on
  each of the row's sentences, any one ``rule`` counts), and what it says instead;
* ``binds`` and ``kept``: end to end, every conversation folded once by the offline extractive
  summarizer (all but its last two messages), the share of folded rule rows that bind in the
  header (a constraint or decision holding the sentence) and the share whose words are anywhere
  in the header, bound or not ("never lose what cannot be read"); rows the fold keeps verbatim
  (the first task message) are not counted;
* ``not-rule judged rule``: the share of the source's not-rule rows (questions, greetings, the
  request for the work with no requirement) the judge labels ``rule``.

The English of the same items is the baseline (``xsid/de-en`` and ``xsid/ja-en``: the originals
the translators worked from; ``x-risawoz/en``: the parallel English dialogues): a gap between a
language and its English is the language's, not the mapping's. The first line names the
checkout whose judge was measured; a listed language with no data says why.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import shared_data

import progsum
from progsum import Compactor, ConversationState, Policy
from progsum.judge import Context, Judge
from progsum.judge._seam import current
from progsum.summarizers import ExtractiveSummarizer

DEFAULT_DATA = Path("/work/data-extra")
LANGUAGES = ("fr", "de", "es", "pt", "zh", "ja", "ru")
"""The languages issue 48 lists; ``en`` rows are the baseline of the same items."""
SOURCES: dict[str, tuple[str, ...]] = {"xsid": ("de", "ja"), "x-risawoz": ("fr", "zh", "en")}
"""Each source folder and the languages read from it. xSID's baseline of a language is the
English originals of its own requests (``de-en``, ``ja-en``: the Japanese set is a subset)."""
MISSING: dict[str, str] = {
    "es": "MASSIVE (CC BY 4.0) and MTOP hold Spanish; neither is reachable here (MASSIVE's "
    "files are Git LFS pointers or on a model hub, MTOP is a direct download); M-IFEval is "
    "built on IFEval, never used",
    "pt": "MASSIVE pt-PT is unreachable (as for es); MultiWOZ-PT (NLP-CISUC) ships no licence "
    "and its dialogue files are over the 4 MiB a snapshot keeps",
    "ru": "MASSIVE ru-RU is unreachable (as for es); XIFBench's repository is not in the "
    "store; ruIFEval and Multi-IF are built on IFEval, never used",
}
"""Why a listed language has no data here."""


def filler(n: int) -> str:
    """The assistant's reply to xSID request ``n``: a short word and a log of its work.

    Language-free machine text (a fenced log), so that the conversation holds work worth
    folding: the engine refuses a fold that frees no tokens (a ``not_smaller`` stall), and a
    chat of one-line requests and one-word replies never folds.
    """
    log = "\n".join(
        f"{n:03d}.{step:02d} ok {(n * 7919 + step * 104729) % 99991:05d}" for step in range(24)
    )
    return f"OK.\n\n```\n{log}\n```"


GROUP = 7
"""xSID requests per conversation: the first stays as the task message, the last in the tail."""

_VALUE_SLOTS_XSID = frozenset((
    "datetime", "recurring_datetime", "timeRange", "location", "city", "state", "country", "poi",
    "spatial_relation", "party_size_number", "party_size_description", "restaurant_type",
    "cuisine", "served_dish", "facility", "sort", "service", "genre", "year", "rating_value",
    "best_rating",
))  # fmt: skip
"""xSID slots that state a requirement on the work (when, where, how many, what kind, which
service, what score); the others only name what the work acts on (a reminder's text, an artist,
a playlist, a title, a restaurant's name) or point at it ("this", "all")."""
_ACTING_XSID = frozenset((
    "alarm/set_alarm", "alarm/snooze_alarm", "reminder/set_reminder", "BookRestaurant",
    "PlayMusic", "AddToPlaylist", "RateBook",
))  # fmt: skip
"""xSID intents that ask the assistant to do work; the others ask for information (weather,
searches, show or time left) or cancel an object the values only identify."""
_NAME_SLOTS_RISAWOZ = frozenset({"name", "名称", "title", "片名"})
"""X-RiSAWOZ slots that only name what the work acts on (a restaurant, a film)."""
_QUERY_DOMAINS_RISAWOZ = frozenset({"Weather", "天气"})
"""X-RiSAWOZ domains whose values only parameterise a question (the weather on a day, in a
city), as xSID's weather/find: never a requirement on work."""
_YES_NO = frozenset({"", "none", "是", "否", "yes", "no", "oui", "non"})
"""Values of a yes/no slot ("reachable by metro: yes"): their words are in many sentences
that do not state the requirement, so they never show where it is."""
_CONLL_COLUMNS = 4
"""xSID's token lines: index, token, intent, BIO slot tag."""
_ASKS = re.compile(r"[?\uff1f]\s*$")


@dataclass(frozen=True, slots=True)
class Row:
    """One user message of a source, its sentences and what the source's labels make of it."""

    source: str
    language: str
    conversation: str
    at: int
    """The message's index in its conversation."""
    text: str
    label: str
    """``rule``, ``not_rule`` or ``unsure`` (left out of every figure)."""
    why: str
    """The source labels the mapping read (intent and slots, or acts)."""
    english: str = ""
    """The English original of the same item, when the source has one."""
    item: str = ""
    """Where the row is in its source: xSID's ``split:id``, X-RiSAWOZ's ``dialogue#turn``."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation of a source, as messages, and the rows of its user messages."""

    source: str
    language: str
    id: str
    messages: tuple[dict[str, Any], ...]
    rows: tuple[Row, ...]


class MissingData(SystemExit):
    """A source the benchmark reads is not under the data folder it was given."""

    def __init__(self, data: Path, looked: Path) -> None:
        super().__init__(
            f"no language data at {looked}: pass the folder that holds xsid/ and x-risawoz/ "
            f"(DATA, e.g. {DEFAULT_DATA}; bench/judge_languages.md says where each comes "
            f"from), not {data}"
        )


# -- xSID ---------------------------------------------------------------------------------------


def xsid_label(intent: str, slots: Iterable[str]) -> str:
    """``rule`` when an acting intent carries a value slot, else ``not_rule`` (the mapping).

    "Set an alarm for 7 am" (set_alarm, datetime) and "Book a table for four" (party size) set
    requirements on the work; "Remind me to call Max" (reminder/todo only) is the request for the
    work alone; "Do I need a sweater?" (weather/find) asks for information.
    """
    values = set(slots) & _VALUE_SLOTS_XSID
    return "rule" if intent in _ACTING_XSID and values else "not_rule"


def _unspaced(text: str) -> str:
    """Japanese as written: xSID separates its tokens by spaces, users do not.

    A space is kept only between two Latin letters, as in a name.
    """
    return re.sub(r"(?<![A-Za-z]) | (?![A-Za-z])", "", text)


def _untokenized(text: str) -> str:
    """The text without the space some xSID sentences put before final punctuation."""
    return re.sub(r" +([.,!?;:])", r"\1", text)


def xsid_items(path: Path) -> Iterator[tuple[str, str, str, str, tuple[str, ...]]]:
    """(id, text, English text, intent, slot types) per sentence of an xSID ``.conll`` file."""
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        head = {m[1]: m[2] for m in re.finditer(r"^# ([\w-]+) = (.*)$", block, flags=re.MULTILINE)}
        if "text" not in head or "intent" not in head:
            continue
        slots = tuple(
            dict.fromkeys(
                cells[3][2:]
                for line in block.splitlines()
                if not line.startswith("#")
                and len(cells := line.split("\t")) == _CONLL_COLUMNS
                and cells[3].startswith("B-")
            )
        )
        yield head.get("id", ""), head["text"], head.get("text-en", ""), head["intent"], slots


def xsid(folder: Path, language: str, *, english: bool = False) -> list[Conversation]:
    """The language's xSID requests (test, then validation), grouped `GROUP` to a conversation.

    With ``english``, the English originals of the same requests (the baseline of the language).
    """
    items = [
        (f"{split}:{n}", english_text if english else text, english_text, intent, slots)
        for split in ("test", "valid")
        if (path := folder / f"{language}.{split}.conll").exists()
        for n, text, english_text, intent, slots in xsid_items(path)
    ]
    name = f"{language}-en" if english else language
    out = []
    for start in range(0, len(items) - GROUP + 1, GROUP):
        messages: list[dict[str, Any]] = []
        rows = []
        for item, raw, english_text, intent, slots in items[start : start + GROUP]:
            text = _unspaced(raw) if name in ("ja", "zh") else _untokenized(raw)
            rows.append(
                Row(
                    "xsid",
                    name,
                    f"xsid-{name}-{start // GROUP}",
                    len(messages),
                    text,
                    xsid_label(intent, slots),
                    f"{intent} {' '.join(slots)}".strip(),
                    "" if english else english_text,
                    item,
                )
            )
            messages += [
                {"role": "user", "content": text},
                {"role": "assistant", "content": filler(start + len(rows))},
            ]
        out.append(Conversation("xsid", name, rows[0].conversation, tuple(messages), tuple(rows)))
    return out


# -- X-RiSAWOZ ----------------------------------------------------------------------------------


def risawoz_label(sentence: str, acts: Sequence[Sequence[str]], surfaces: Iterable[str]) -> str:
    """What one sentence of a user turn is, from the turn's acts (the mapping).

    A sentence holding a value the turn Informs for a slot that does not only name the object
    (``surfaces``: the value as the turn words it) is a ``rule`` ("I want a restaurant that is a
    bit expensive, near the industrial park"), also asked politely ("Could you find a hotel that
    is not too expensive?") unless the turn Requests something or names the object it asks
    about ("Does the Lakeside Hotel have family rooms?"); a sentence of a turn that
    Informs nothing (it asks, greets, thanks or says goodbye) is ``not_rule``; a sentence beside
    a value it does not hold, or only naming the object, and a value that only parameterises a
    question about the weather, are ``unsure``.
    """
    kinds = {a[0] for a in acts}
    if "Inform" not in kinds:
        return "not_rule"
    if any(a[1] in _QUERY_DOMAINS_RISAWOZ for a in acts):
        return "unsure"
    names = any(a[0] == "Inform" and a[2] in _NAME_SLOTS_RISAWOZ for a in acts)
    if _ASKS.search(sentence) and ("Request" in kinds or names):
        return "unsure"
    folded = sentence.casefold()
    return "rule" if any(s and s.casefold() in folded for s in surfaces) else "unsure"


def _surfaces(turn: dict[str, Any]) -> list[str]:
    """How the turn words each value it Informs for a slot that does not only name the object."""
    utterance = turn["user_utterance"]
    spans = utterance[1] if isinstance(utterance, list) and len(utterance) > 1 else {}
    informed = {(a[1], a[2]) for a in turn["user_actions"] if a[0] == "Inform"} - {
        (a[1], s) for a in turn["user_actions"] for s in _NAME_SLOTS_RISAWOZ
    }
    out = [a[3] for a in turn["user_actions"] if (a[1], a[2]) in informed]
    for key, words in (spans or {}).items():
        domain, _, slot = key.partition("-")
        if (domain, slot) in informed:
            out += list(words)
    return [s for s in out if s.strip().casefold() not in _YES_NO]


def _turn_rows(
    where: tuple[str, str, str, int, int],
    text: str,
    acts: Sequence[Sequence[str]],
    surfaces: Sequence[str],
    judge: Judge,
) -> list[Row]:
    """A row per sentence of a user turn with dialogue acts (`risawoz_label`).

    ``where``: source, language, dialogue id, the message's index, the turn's number.
    """
    source, language, dialogue, at, turn = where
    why = "; ".join(" ".join(str(x) for x in a if x) for a in acts)
    return [
        Row(
            source,
            language,
            dialogue,
            at,
            sentence,
            risawoz_label(sentence, acts, surfaces),
            why,
            item=f"{dialogue}#{turn}",
        )
        for sentence in judge.sentences(text)
    ]


def risawoz(folder: Path, language: str, judge: Judge) -> list[Conversation]:
    """The language's X-RiSAWOZ dialogues, a row per sentence of each user turn."""
    dialogues = json.loads((folder / f"{language}_fewshot.json").read_text(encoding="utf-8"))
    out = []
    for dialogue in dialogues:
        messages: list[dict[str, Any]] = []
        rows = []
        for n, turn in enumerate(dialogue["dialogue"]):
            utterance = turn["user_utterance"]
            text = utterance[0] if isinstance(utterance, list) else utterance
            rows += _turn_rows(
                ("x-risawoz", language, dialogue["dialogue_id"], len(messages), n),
                text,
                turn["user_actions"],
                _surfaces(turn),
                judge,
            )
            reply = turn["system_utterance"]
            messages += [
                {"role": "user", "content": text},
                {"role": "assistant", "content": reply[0] if isinstance(reply, list) else reply},
            ]
        out.append(
            Conversation(
                "x-risawoz", language, dialogue["dialogue_id"], tuple(messages), tuple(rows)
            )
        )
    return out


def crosswoz(shared: Path, judge: Judge) -> list[Conversation]:
    """CrossWOZ's test dialogues (Chinese) from the shared data folder, as X-RiSAWOZ's.

    Its user acts are ``[intent, domain, slot, value]`` as X-RiSAWOZ's; with no span
    annotations, a value's own words show where it is (`risawoz_label`).

    Raises:
        shared_data.MissingData: ``shared`` holds no ``crosswoz/``.
    """
    with zipfile.ZipFile(shared_data.path(shared, "crosswoz")) as archive:
        dialogues = json.loads(archive.read(archive.namelist()[0]))
    out = []
    for dialogue_id, dialogue in dialogues.items():
        messages: list[dict[str, Any]] = []
        rows = []
        for message in dialogue["messages"]:
            text = message["content"]
            if message["role"] == "usr":
                acts = message.get("dialog_act") or []
                surfaces = [
                    str(a[3]).strip()
                    for a in acts
                    if a[0] == "Inform" and a[2] not in _NAME_SLOTS_RISAWOZ
                ]
                surfaces = [v for v in surfaces if v.casefold() not in _YES_NO]
                where = ("crosswoz", "zh", dialogue_id, len(messages), len(messages))
                rows += _turn_rows(where, text, acts, surfaces, judge)
            role = "user" if message["role"] == "usr" else "assistant"
            messages.append({"role": role, "content": text})
        out.append(Conversation("crosswoz", "zh", dialogue_id, tuple(messages), tuple(rows)))
    return out


def load(
    data: Path, judge: Judge, shared: Path | None = None
) -> dict[tuple[str, str], list[Conversation]]:
    """Every source's conversations under ``data``, by (source, language).

    With ``shared`` (the team's shared data folder), CrossWOZ's Chinese test dialogues too.

    Raises:
        MissingData: ``data`` holds neither source.
        shared_data.MissingData: ``shared`` holds no ``crosswoz/``.
    """
    found: dict[tuple[str, str], list[Conversation]] = {}
    for source, languages in SOURCES.items():
        folder = data / source
        for language in languages:
            if source == "xsid" and (folder / f"{language}.test.conll").exists():
                found[(source, language)] = xsid(folder, language)
                found[(source, f"{language}-en")] = xsid(folder, language, english=True)
            elif source == "x-risawoz" and (folder / f"{language}_fewshot.json").exists():
                found[(source, language)] = risawoz(folder, language, judge)
    if not found:
        raise MissingData(data, data / "xsid")
    if shared is not None:
        found[("crosswoz", "zh")] = crosswoz(shared, judge)
    return found


# -- measuring ----------------------------------------------------------------------------------


def verdict(row: Row, previous: str, judge: Judge) -> str:
    """The judge's label for a row: ``rule`` if any of its sentences is one, else the first's."""
    context = Context(author="user", kind="agent", previous=previous)
    labels: list[str] = [judge.judge(s, context).label for s in judge.sentences(row.text)]
    return "rule" if "rule" in labels else labels[0] if labels else "none"


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


@dataclass(frozen=True, slots=True)
class Fold:
    """What one fold of a conversation left: the header's words and the messages it folded."""

    binding: tuple[str, ...]
    """The words of each binding item (constraints and decisions)."""
    header: tuple[str, ...]
    """The words of every item in the header."""
    folded: frozenset[int]
    """The indexes of the messages folded into the header (not kept verbatim)."""

    def outcome(self, row: Row) -> str | None:
        """``binds``, ``kept`` (in the header, not binding), ``lost``, or None (not folded).

        An item holding the row's words, or a part of them, holds the row.
        """
        if row.at not in self.folded:
            return None
        words = _words(row.text)
        if not words:
            return "lost"
        if any(words in b or b in words for b in self.binding):
            return "binds"
        if any(words in h or h in words for h in self.header):
            return "kept"
        return "lost"


def fold(conversation: Conversation, judge: Judge) -> Fold:
    """The conversation folded once, all but its last two messages, by the offline summarizer.

    As a person's conversation with an assistant (``conversation="agent"``): the sources are
    requests to an assistant. ``judge`` reads it (the one the figures measure). A message the
    fold keeps verbatim (the first task message, the tail) is not folded.
    """
    compactor = Compactor(
        policy=Policy(context_window=100_000, keep=("messages", 2)),
        summarizer=ExtractiveSummarizer(),
        judge=judge,
        conversation="agent",
    )
    messages = [dict(m) for m in conversation.messages]
    state = compactor.compact(ConversationState(messages), force=True)
    kept = set(state.kept)
    summary = state.summary
    items = [
        (name, _words(str(getattr(item, "text", ""))))
        for name in (type(summary).model_fields if summary is not None else ())
        if isinstance(value := getattr(summary, name), (list, tuple))
        for item in value
        if hasattr(item, "text")
    ]
    return Fold(
        binding=tuple(w for name, w in items if name in ("constraints", "decisions") and w),
        header=tuple(w for _, w in items if w),
        folded=frozenset(range(len(messages))) - kept,
    )


def measure(
    conversations: Sequence[Conversation], judge: Judge
) -> tuple[dict[str, Any], list[tuple[Row, str]]]:
    """The figures of one (source, language), and each measured row with the judge's label."""
    said: list[tuple[Row, str]] = []
    ends: Counter[str] = Counter()
    for conversation in conversations:
        folding = fold(conversation, judge)
        for row in conversation.rows:
            if row.label == "unsure":
                continue
            before = conversation.messages[row.at - 1]["content"] if row.at else ""
            said.append((row, verdict(row, str(before), judge)))
            if row.label == "rule" and (end := folding.outcome(row)) is not None:
                ends[end] += 1
    rules = [s for r, s in said if r.label == "rule"]
    others = [s for r, s in said if r.label == "not_rule"]
    folded_rules = sum(ends.values())
    return (
        {
            "rule_rows": len(rules),
            "judged_rule": _share(sum(s == "rule" for s in rules), len(rules)),
            "judged_instead": dict(Counter(s for s in rules if s != "rule").most_common()),
            "rules_asked": sum(bool(_ASKS.search(r.text)) for r, _ in said if r.label == "rule"),
            "folded_rule_rows": folded_rules,
            "binds": _share(ends["binds"], folded_rules),
            "kept": _share(ends["binds"] + ends["kept"], folded_rules),
            "lost": ends["lost"],
            "not_rule_rows": len(others),
            "not_rule_judged_rule": _share(sum(s == "rule" for s in others), len(others)),
        },
        said,
    )


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def figures(
    data: Path, judge: Judge | None = None, shared: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The figures per ``source/language``, and the judged rows of each (for `sample`)."""
    judge = judge or current()
    out: dict[str, Any] = {}
    rows: dict[str, Any] = {}
    for (source, language), conversations in load(data, judge, shared).items():
        key = f"{source}/{language}"
        out[key], rows[key] = measure(conversations, judge)
    return out, rows


def sample(rows: Sequence[tuple[Row, str]], n: int, seed: int = 48) -> list[tuple[Row, str]]:
    """``n`` rule rows drawn at random (the same ones for a seed), for a hand check."""
    rules = [(r, s) for r, s in rows if r.label == "rule"]
    return random.Random(seed).sample(rules, min(n, len(rules)))


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def table(result: dict[str, Any]) -> str:
    """The figures as Markdown, a row per source and language, then the languages with no data."""
    lines = [
        (
            "| source / language | rule rows | judged rule | judged instead (top 3) | folded "
            "| binds | in header | lost | rules ending in ? | not-rule rows "
            "| not-rule judged rule |"
        ),
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, f in result.items():
        instead = ", ".join(f"{k} {v}" for k, v in list(f["judged_instead"].items())[:3])
        lines.append(
            f"| {key} | {f['rule_rows']} | {_pct(f['judged_rule'])} | {instead} | "
            f"{f['folded_rule_rows']} | {_pct(f['binds'])} | {_pct(f['kept'])} | {f['lost']} | "
            f"{f['rules_asked']} | {f['not_rule_rows']} | {_pct(f['not_rule_judged_rule'])} |"
        )
    measured = {key.split("/")[1] for key in result}
    lines.append("")
    lines += [
        f"* no data for {lang}: {MISSING.get(lang, 'no source of it under the data folder')}"
        for lang in LANGUAGES
        if lang not in measured
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the figures (and a sample of rule rows per source and language)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", type=Path, nargs="?", default=DEFAULT_DATA, help="the data folder")
    parser.add_argument(
        "--shared", type=Path, help="the shared data folder, to measure CrossWOZ (zh) too"
    )
    parser.add_argument("--sample", type=int, default=0, help="rule rows to print per language")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result, rows = figures(args.data, shared=args.shared)
    print(f"judge: progsum at {Path(progsum.__file__).parent}\n")
    print(json.dumps(result, indent=2, ensure_ascii=False) if args.json else table(result))
    for key, judged in rows.items():
        for row, label in sample(judged, args.sample):
            english = f" [en: {row.english}]" if row.english else ""
            print(f"{key}\t{row.item}\t{label}\t{row.text}{english}\t({row.why})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
