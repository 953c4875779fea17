"""The retention gate: facts kept by progsum beside truncation at the same size, and note quality.

    python bench/retention.py /work/shared/data
    python bench/retention.py DATA_DIR --sizes 2000 4000 8000 --streams 12

Data (read in place, never copied): MSC (``DATA_DIR/msc/session_3/test.txt``), MemoryBank
(``DATA_DIR/memorybank/``), and for the note-quality count also every conversation of
``claude_code/``, ``tau_bench/`` and ``swe_agent/`` through `progsum.replay._importers`.
bench/retention.md describes the method; in short:

**Chats.** A chat set's conversations are shorter than the windows measured, so they are replayed
as *streams*: consecutive conversations back to back (file order) until the stream holds at least
`STREAM_FACTOR` times the window in estimated tokens, so every stream is compacted many times.
Each message carries its speaker (``name``: "Speaker 1"/"Speaker 2" in MSC, the user's name and
"AI" in MemoryBank) and, in MemoryBank, its day (``timestamp``: the history's day key).

* MSC probes are `msc_probes.probes`: one per session-1 persona fact, its key words as said.
* MemoryBank probes are the team's labels where there are any (`ANSWERS`,
  ``bench/labels/memorybank_answers.jsonl``: per probing question, the message that states its
  answer and one to three strings copied from it that a right answer must hold, labelled by
  reading the whole history blind to progsum's output; a question labelled with no message has
  no probe). A question without a label (data the team has not labelled, the test fixtures) is
  labelled by rule from the chat (`memorybank_probes`): the question's key words
  (`msc_probes.key_words`, less `QUESTION_WORDS`) pick the stating message: a message of the
  user ("what did I ...") or, for "what did you recommend / say / tell ...", of the AI;
  restricted to the day the question names ("On April 27th"), else any day; the one holding
  most of them (earliest on a tie; none: no probe). The probe's strings are the answer: that
  message's names and numbers the question lacks, then its longest key words the question
  lacks, at most `ANSWER_STRINGS`.

Each stream is replayed turn by turn through ``Compactor.maybe_compact`` with the offline
`ExtractiveSummarizer` and ``Policy(context_window=size)``: the defaults (trigger at 0.9 of the
input window, target 0.6, the tail fitted to it, header budget 15%, half the room in a chat). Each
assistant message comes with the usage report a provider would give for it, in this script's measure
of tokens (the state's estimate, as for truncation; `usage_reports.replayed`; ``--no-usage``: none,
the safety margin in force throughout). The final context must fit the window's input part; a stream
over it scores 0 (counted in the table). Truncation keeps the newest messages within progsum's final
tokens (`progsum.replay._probes.truncate`), so both sides have the same size; *full budget*
truncation keeps the newest messages within the whole input window. Compactions per 1,000 messages
are counted beside (each one breaks the header's prompt cache). A probe survives when all its
strings are in the context (`progsum.replay._probes`); first-half probes are those stated in the
first half of the stream's messages.

**Note quality.** Every conversation of all five sets is compacted turn by turn (``progsum replay
--budget 500 --keep 4``'s policy, `progsum.cli._options.budget_policy`), and every live header
item at the end is checked by the bench's own rules (`note_quality.defect`): a *tag* (an XML/HTML
tag), a *code line* (a code fence, a prompt or indented line, a statement keyword, or a third of its
characters code symbols) or a *fragment* (unbalanced brackets, quotes or backticks, or ending in
``:`` or a dangling word such as "the", "and", "e.g."). Target: 0.

The agent sets (tau-bench gold values, the long Claude Code sessions' reused values and files
modified before the boundary) are measured by ``bench/retention_agents.py``; its table is printed
under the chat table, at the same sizes.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import retention_agents
import retention_recall
import shared_data
from msc_probes import Conversation, key_words, questions
from msc_probes import probes as msc_fact_probes
from note_quality import agent_sets, quality
from usage_reports import Measure, appended, estimated

from progsum import Compactor, ConversationState, Policy
from progsum.judge._judgement import Kind
from progsum.replay._probes import Probe, evaluate, normalize
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summary._merge import live_items

Message = dict[str, Any]

SIZES = (2_000, 4_000, 8_000)
"""Context windows measured, in tokens."""
KEEP = 4
"""Messages kept verbatim after each compaction by the fixed-tail policies of the studies that
compare with this gate (`retention_ceiling.study_policy`)."""
STREAM_FACTOR = 3
"""A stream holds at least this many windows of estimated tokens."""
ENDING_STEP = 2
"""Messages between two `endings` of a stream: one exchange of a chat."""
DEFAULT_STREAMS = 12
"""Streams per set and size at most (the run time grows with it)."""
ANSWERS = Path(__file__).parent / "labels" / "memorybank_answers.jsonl"
"""The team's labelled answers to MemoryBank's probing questions (bench/retention.md)."""
ANSWER_STRINGS = 2
"""Strings per MemoryBank probe: names and values of the stating message first, then its
longest key words the question lacks."""
QUESTION_WORDS = frozenset(
    {
        *("remember", "mentioned", "mention", "recommended", "recommend", "shared", "share"),
        *("told", "tell", "said", "talked", "talk", "asked", "ask", "before", "previously"),
        *("ago", "days", "day", "what", "name", "called", "kind", "type", "recall", "april"),
        *("march", "may", "june", "july", "august", "first", "second", "third", "fourth"),
        *("fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "2nd", "3rd", "4th"),
        *("also", "once", "last", "time", "content", "about", "were", "they", "them"),
    }
)
"""Words of a probing question that ask rather than say what the answer is about."""
_MONTHS = {
    m: n
    for n, m in enumerate(
        (
            *("january", "february", "march", "april", "may", "june", "july", "august"),
            *("september", "october", "november", "december"),
        ),
        start=1,
    )
}
_DAY = re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2})(?:st|nd|rd|th)?\b", re.IGNORECASE)


# -- the chat sets as conversations with probes ------------------------------------------------


def msc(data: Path) -> list[Conversation]:
    """MSC conversations with speakers named and their session-1 persona probes."""
    found = []
    for number, record in enumerate(shared_data.msc_records(shared_data.path(data, "msc"))):
        facts = msc_fact_probes(record)
        messages = shared_data.msc_messages(record)
        found.append(Conversation(f"msc-{number:03d}", messages, facts, questions(record, facts)))
    return found


def memorybank(data: Path, answers: Path | None = ANSWERS) -> list[Conversation]:
    """MemoryBank histories, a message per query and per response, with their probes.

    A question's probe is its label in ``answers`` (a JSON Lines file, `ANSWERS` by default; None:
    no labels), else the rule's (`memorybank_probes`).

    Raises:
        SystemExit: a label names another question, no such message, or a string its message
            does not hold; the message names the label and the fix.
    """
    labels = answer_labels(answers) if answers is not None and answers.is_file() else {}
    found = []
    for history in shared_data.memorybank(data):
        key, user, messages, asked = history.key, history.user, history.messages, history.questions
        ruled = {p.id: p for p in memorybank_probes(messages, asked)}
        probes = tuple(
            probe
            for k, question in enumerate(asked, start=1)
            if (probe := _labelled(user, k, question, messages, labels, ruled)) is not None
        )
        by_id = {f"q{k}": question for k, question in enumerate(asked, start=1)}
        found.append(
            Conversation(
                f"memorybank-{key}",
                tuple(messages),
                probes,
                {p.id: (by_id[p.id], p.strings) for p in probes},
            )
        )
    return found


def plain(conversations: Sequence[Conversation]) -> list[Conversation]:
    """``conversations`` with plain user and assistant roles: no speaker names.

    How a chat reaches progsum from an application that does not name its speakers; progsum
    then reads it as a person working with an assistant (`progsum.judge._conversation`).
    """
    return [
        Conversation(
            c.name,
            tuple({k: v for k, v in m.items() if k != "name"} for m in c.messages),
            c.probes,
            c.questions,
        )
        for c in conversations
    ]


def answer_labels(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The labels of ``path`` by user and question number (each a JSON object per line).

    A label holds ``user`` (the bank's key, spaces stripped), ``q`` (the question's number from
    1), ``question`` (its text, checked against the data), ``at`` (the stating message's index
    in `memorybank`'s order, or null: the history does not answer it) and ``strings``.
    """
    labels: dict[tuple[str, int], dict[str, Any]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            label = json.loads(line)
            key = (str(label["user"]).strip(), int(label["q"]))
            if key in labels:
                raise SystemExit(f"{path}:{number}: a second label for {key[0]} q{key[1]}")
            labels[key] = label
    return labels


def _labelled(  # noqa: PLR0917 - one question's context
    user: str,
    k: int,
    question: str,
    messages: Sequence[Message],
    labels: dict[tuple[str, int], dict[str, Any]],
    ruled: dict[str, Probe],
) -> Probe | None:
    """Question ``k``'s probe: its label, checked against the data, else the rule's."""
    label = labels.get((user, k))
    if label is None:
        return ruled.get(f"q{k}")
    where = f"the label of {user} q{k}"
    if label["question"] != question:
        raise SystemExit(
            f"{where} is for {label['question']!r}, but the data asks {question!r}: label the "
            "data's question again"
        )
    at = label["at"]
    if at is None:
        return None
    if not 0 <= at < len(messages):
        raise SystemExit(f"{where} names message {at}; the history has {len(messages)}")
    said = normalize(messages[at]["content"])
    strings = tuple(label["strings"])
    missing = [s for s in strings if normalize(s) not in said]
    if not strings or missing:
        raise SystemExit(
            f"{where}: message {at} does not hold {missing or 'any string'}; copy the answer's "
            "strings from the message that states it"
        )
    return Probe(f"q{k}", at, strings)


_YOURS = re.compile(
    r"\byou\b[^.?]*\b(?:recommend|suggest|say|said|tell|told|give|gave)", re.IGNORECASE
)
_NAMED = re.compile(r"(?<![.!?] )(?<=[\s\"'(])[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*|\d+(?:[.,:]\d+)*")
_GENERIC = frozenset({"today", "companion", "hello", "hi", "recently", "great", "interesting"})


def memorybank_probes(messages: Sequence[Message], questions: Sequence[str]) -> tuple[Probe, ...]:
    """One probe per question whose answer the chat states (the rule in the module docstring)."""
    days = {_day(m["timestamp"]) for m in messages}
    found = []
    for k, question in enumerate(questions, start=1):
        asked = set(key_words(question)) - QUESTION_WORDS
        role = "assistant" if _YOURS.search(question) else "user"
        named = _DAY.search(question)
        wanted_day = None
        if named is not None:
            month, number = _MONTHS[named[1].casefold()], int(named[2])
            wanted_day = next((d for d in days if (d.month, d.day) == (month, number)), None)
        best_at, best = -1, 0
        for at, message in enumerate(messages):
            if message["role"] != role:
                continue
            if wanted_day is not None and _day(message["timestamp"]) != wanted_day:
                continue
            hits = len(asked & set(key_words(message["content"])))
            if hits > best:
                best_at, best = at, hits
        if best_at < 0:
            continue
        text = messages[best_at]["content"]
        names = [
            n.casefold()
            for n in _NAMED.findall(text)
            if not set(key_words(n)) <= asked | QUESTION_WORDS or n[0].isdigit()
        ]
        words = [w for w in key_words(text) if w not in asked | QUESTION_WORDS | _GENERIC]
        names = [n for n in names if n not in _GENERIC]
        answer = list(dict.fromkeys([*names, *sorted(words, key=lambda w: -len(w))]))
        if answer:
            found.append(Probe(f"q{k}", best_at, tuple(answer[:ANSWER_STRINGS])))
    return tuple(found)


def _day(value: str) -> date:
    return date.fromisoformat(value)


def streams(
    conversations: Sequence[Conversation], tokens: int, limit: int
) -> Iterator[Conversation]:
    """Consecutive conversations joined until each stream holds ``tokens`` (estimated)."""
    counter = Compactor(policy=Policy(context_window=200_000)).counter
    messages: list[Message] = []
    probes: list[Probe] = []
    asked: dict[str, tuple[str, tuple[str, ...]]] = {}
    size = made = 0
    names: list[str] = []
    for conversation in conversations:
        offset = len(messages)
        messages.extend(conversation.messages)
        for p in conversation.probes:
            probes.append(Probe(f"{conversation.name}/{p.id}", p.at + offset, p.strings))
            if p.id in conversation.questions:
                asked[f"{conversation.name}/{p.id}"] = conversation.questions[p.id]
        names.append(conversation.name)
        size += sum(counter.count_message(m) for m in conversation.messages)
        if size >= tokens:
            name = f"{names[0]}..{names[-1]}"
            yield Conversation(name, tuple(messages), tuple(probes), asked)
            made += 1
            if made == limit:
                return
            messages, probes, asked, names, size = [], [], {}, [], 0


# -- scoring -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Score:
    """One set at one size: probe counts on both sides, sizes, and streams over budget."""

    streams: int
    probes: int
    progsum: int
    truncation: int
    first: int
    """Probes stated in the first half of their stream."""
    first_progsum: int
    first_truncation: int
    tokens: float
    """Mean estimated tokens of progsum's final context (= the truncation budget)."""
    over: int
    """Streams whose final context exceeded the window's input part (scored 0)."""
    header_items: float
    full: int = 0
    """Probes plain truncation of the stream to the whole input window keeps."""
    first_full: int = 0
    per_1000: float = 0.0
    """Compactions per 1,000 messages replayed (each one breaks the header's prompt cache)."""
    recall: int = 0
    """Probes kept with their question asked as the newest message (bench/retention_recall.py)."""
    first_recall: int = 0
    questions: int = 0
    """Probes with a question."""
    excerpts: float = 0.0
    """Mean excerpts in the recall block per question asked."""
    recall_over: int = 0
    """Questions whose request exceeded the window's input part (scored 0)."""
    recall_full: int = 0
    """The same probes (each with its question's answer strings) kept by full-budget truncation."""
    first_recall_full: int = 0
    bm25: int = 0
    """The same probes kept by plain BM25 over the folded messages filling the whole input window
    (`retention_recall.bm25`)."""
    bm25_same: int = 0
    """... filling only the tokens progsum's request with the question uses."""
    first_bm25: int = 0
    per_request: float = 0.0
    """Mean estimated tokens of the requests of the replay (after each message not the
    assistant's: what an agent sends)."""
    asked_tokens: float = 0.0
    """Mean estimated tokens of progsum's request with a probe's question."""


def chat_policy(size: int, header: float | None = None, recall: float | None = None) -> Policy:
    """The chat rows' policy: window ``size``, the defaults, the header and recall budgets.

    ``header`` and ``recall`` are fractions of the input window; None keeps the default.
    """
    changes: dict[str, Any] = {}
    if header is not None:
        changes["header_budget"] = ("fraction", header)
    if recall is not None:
        changes["recall_budget"] = ("fraction", recall)
    return Policy(context_window=size, **changes)


def endings(stream: Conversation, count: int, step: int = ENDING_STEP) -> Iterator[Conversation]:
    """``stream`` and ``count - 1`` copies, each ``step`` messages shorter, without later probes.

    What a stream's final context keeps depends on where its last compaction fell: just after
    one, the tail is short and the context small; just before the next, both are at their
    largest. Scoring several endings of one stream averages that phase out, which a set with
    few streams needs (the test fixtures hold one each).
    """
    for cut in range(count):
        end = len(stream.messages) - cut * step
        if end <= 0:
            return
        yield Conversation(
            stream.name,
            stream.messages[:end],
            tuple(p for p in stream.probes if p.at < end),
            stream.questions,
        )


def score(
    conversations: Sequence[Conversation],
    size: int,
    limit: int,
    header: float | None = None,
    *,
    ends: int = 1,
    usage: bool = True,
    recall: float | None = None,
    summarizer: Any = None,  # noqa: ANN401 - a Summarizer; None: ExtractiveSummarizer()
    each_request: Callable[[ConversationState[Any]], None] | None = None,
    conversation: Kind | None = None,
) -> Score:
    """Replay each stream at window ``size`` and count the probes each side keeps.

    ``header`` is the header budget as a fraction of the window (None: the policy's default);
    ``ends`` is how many `endings` of each stream are replayed; each counts as a stream;
    ``usage``: each assistant message comes with a usage report (`usage_reports.replayed`);
    ``recall``: the recall budget as a fraction of the input window (None: the default);
    ``summarizer`` folds instead of `ExtractiveSummarizer` (bench/retention_cost.py wraps it);
    ``each_request`` sees the state of each request of the replay; ``conversation`` is the
    kind the compactor is told (None: read off the conversation, `progsum.judge._conversation`).
    """
    policy = chat_policy(size, header, recall)
    compactor = Compactor(
        policy=policy,
        summarizer=summarizer or ExtractiveSummarizer(),
        conversation=conversation,
    )
    measure = estimated(compactor) if usage else None
    limit_tokens = policy.input_window or size
    totals = dict.fromkeys(("probes", "progsum", "truncation", "first", "fp", "ft", "w", "fw"), 0)
    tokens: list[int] = []
    items: list[int] = []
    over = count = compactions = length = 0
    recall = first_recall = questions = excerpts = recall_over = 0
    recall_full = first_recall_full = bm25 = bm25_same = first_bm25 = asked_tokens = 0
    requests: list[int] = []
    replays = (
        e
        for joined in streams(conversations, STREAM_FACTOR * size, limit)
        for e in endings(joined, ends)
    )
    for stream in replays:
        count += 1
        final = _replayed(stream.messages, compactor, measure, requests, each_request)
        result = evaluate(
            stream.messages, stream.probes, compactor, final=final, budget=limit_tokens
        )
        half = len(stream.messages) / 2
        length += len(stream.messages)
        compactions += sum(e.outcome == "compacted" for e in result.state.events)
        fits = result.tokens <= limit_tokens
        over += not fits
        tally = retention_recall.asked(compactor, result, stream.questions, half=half, fits=fits)
        recall += tally.kept
        first_recall += tally.first
        recall_full += tally.full
        first_recall_full += tally.first_full
        questions += tally.questions
        excerpts += tally.excerpts
        recall_over += tally.over
        bm25 += tally.bm25
        bm25_same += tally.bm25_same
        first_bm25 += tally.first_bm25
        asked_tokens += tally.tokens
        tokens.append(result.tokens)
        summary = result.state.summary
        items.append(0 if summary is None else sum(map(len, live_items(summary).values())))
        for r in result.results:
            first = r.probe.at < half
            totals["probes"] += 1
            totals["first"] += first
            totals["progsum"] += fits and r.progsum
            totals["truncation"] += r.truncation
            totals["fp"] += first and fits and r.progsum
            totals["ft"] += first and r.truncation
            totals["w"] += r.full_budget
            totals["fw"] += first and r.full_budget
    return Score(
        streams=count,
        probes=totals["probes"],
        progsum=totals["progsum"],
        truncation=totals["truncation"],
        first=totals["first"],
        first_progsum=totals["fp"],
        first_truncation=totals["ft"],
        tokens=statistics.mean(tokens) if tokens else 0.0,
        over=over,
        header_items=statistics.mean(items) if items else 0.0,
        full=totals["w"],
        first_full=totals["fw"],
        per_1000=1000 * compactions / max(length, 1),
        recall=recall,
        first_recall=first_recall,
        questions=questions,
        excerpts=excerpts / max(questions, 1),
        recall_over=recall_over,
        recall_full=recall_full,
        first_recall_full=first_recall_full,
        bm25=bm25,
        bm25_same=bm25_same,
        first_bm25=first_bm25,
        per_request=statistics.mean(requests) if requests else 0.0,
        asked_tokens=asked_tokens / max(questions, 1),
    )


def _replayed(
    messages: Sequence[Message],
    compactor: Compactor[Any],
    measure: Measure | None,
    requests: list[int],
    each_request: Callable[[ConversationState[Any]], None] | None = None,
) -> ConversationState[Any]:
    """The replay's final state (`usage_reports.replayed`).

    ``requests`` gets the estimated tokens of each request (the state after a message that is
    not the assistant's), and ``each_request`` sees its state.
    """
    state: ConversationState[Any] = ConversationState()
    counter = compactor.counter
    for message in messages:
        state = appended(compactor, state, message, measure=measure)
        if state.infos[-1].role != "assistant":
            requests.append(state.estimate(counter))
            if each_request is not None:
                each_request(state)
    return state


def ratio(ours: int, theirs: int) -> float:
    """Progsum / truncation; infinite when truncation kept nothing and progsum something."""
    if theirs:
        return ours / theirs
    return float("inf") if ours else 1.0


# -- the table ---------------------------------------------------------------------------------


def chat_scores(
    data: Path,
    sizes: Sequence[int],
    limit: int,
    header: float | None = None,
    *,
    usage: bool = True,
    recall: float | None = None,
    roles: bool = False,
) -> list[tuple[str, int, Score]]:
    """``(set, window, score)`` per chat set and size; ``roles``: `plain` roles, no names."""
    sets = [("MSC", msc(data)), ("MemoryBank", memorybank(data))]
    if roles:
        sets = [(f"{name}, plain roles", plain(found)) for name, found in sets]
    return [
        (name, size, score(conversations, size, limit, header, usage=usage, recall=recall))
        for name, conversations in sets
        for size in sizes
    ]


HEADER_COLUMNS = (
    "| set | window | streams | tokens (mean) | over budget | progsum | truncation | ratio "
    "| first half: progsum | truncation | ratio | header items | full budget: truncation "
    "| ratio | first half ratio | compactions per 1,000 messages | tokens per request |"
)
RECALL_COLUMNS = (
    "| set | window | questions | with recall | full-window truncation | ratio "
    "| first half ratio | BM25, whole window | ratio | first half ratio "
    "| BM25, progsum's tokens | ratio | tokens with the question | excerpts per question "
    "| over budget |"
)


def header_row(name: str, size: int, s: Score) -> str:
    """The header-only row: the final context without a question."""
    return (
        f"| {name} | {size:,} | {s.streams} | {s.tokens:,.0f} | {s.over} | "
        f"{s.progsum / max(s.probes, 1):.1%} | {s.truncation / max(s.probes, 1):.1%} | "
        f"{ratio(s.progsum, s.truncation):.2f}x | "
        f"{s.first_progsum / max(s.first, 1):.1%} | "
        f"{s.first_truncation / max(s.first, 1):.1%} | "
        f"{ratio(s.first_progsum, s.first_truncation):.2f}x | {s.header_items:.1f} | "
        f"{s.full / max(s.probes, 1):.1%} | {ratio(s.progsum, s.full):.2f}x | "
        f"{ratio(s.first_progsum, s.first_full):.2f}x | {s.per_1000:.1f} | "
        f"{s.per_request:,.0f} |"
    )


def recall_row(name: str, size: int, s: Score) -> str:
    """The row with recall: each probe's question asked, beside truncation and plain BM25."""
    share = max(s.probes, 1)
    return (
        f"| {name} | {size:,} | {s.questions} | {s.recall / share:.1%} | "
        f"{s.recall_full / share:.1%} | {ratio(s.recall, s.recall_full):.2f}x | "
        f"{ratio(s.first_recall, s.first_recall_full):.2f}x | {s.bm25 / share:.1%} | "
        f"{ratio(s.recall, s.bm25):.2f}x | {ratio(s.first_recall, s.first_bm25):.2f}x | "
        f"{s.bm25_same / share:.1%} | {ratio(s.recall, s.bm25_same):.2f}x | "
        f"{s.asked_tokens:,.0f} | {s.excerpts:.1f} | {s.recall_over} |"
    )


def chat_rows(
    data: Path,
    sizes: Sequence[int],
    limit: int,
    header: float | None = None,
    *,
    usage: bool = True,
    recall: float | None = None,
    roles: bool = False,
) -> list[str]:
    """The two chat tables, header only and with recall, as Markdown lines."""
    scores = chat_scores(data, sizes, limit, header, usage=usage, recall=recall, roles=roles)
    return [
        HEADER_COLUMNS,
        "|---|" + "---:|" * 16,
        *(header_row(*row) for row in scores),
        "",
        RECALL_COLUMNS,
        "|---|" + "---:|" * 14,
        *(recall_row(*row) for row in scores),
    ]


def agent_table(data: Path, sizes: Sequence[int], *, usage: bool = True) -> str:
    """The agent sets' table (``bench/retention_agents.py``) at the chat table's sizes.

    Values reused and files modified before the boundary, kept after it by progsum and by
    truncation at the same size; then Claude Code's own compactions beside progsum's.
    """
    rows = retention_agents.rows(data, sizes, usage=usage)
    native = retention_agents.native(data, usage=usage)
    return retention_agents.table(rows) + "\n\n" + retention_agents.native_table(native)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the gate and print the tables."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--streams", type=int, default=DEFAULT_STREAMS, help="per set and size")
    parser.add_argument("--no-quality", action="store_true", help="skip the note-quality count")
    parser.add_argument(
        "--header-budget",
        type=float,
        default=None,
        help="header budget as a fraction of the window (default: the policy's, 0.15)",
    )
    parser.add_argument(
        "--recall-budget",
        type=float,
        default=None,
        help="recall budget as a fraction of the input window (default: the policy's)",
    )
    parser.add_argument(
        "--plain-roles",
        action="store_true",
        help="replay the chats with plain user and assistant roles, no speaker names",
    )
    parser.add_argument(
        "--no-agents", action="store_true", help="skip the agent rows (bench/retention_agents.py)"
    )
    parser.add_argument(
        "--no-usage",
        action="store_true",
        help="report no usage with assistant messages: the safety margin stays in force",
    )
    args = parser.parse_args(argv)
    usage = not args.no_usage
    started = time.perf_counter()
    print(
        f"Retention at the same final size: streams of consecutive conversations, at least "
        f"{STREAM_FACTOR} windows each; Policy(context_window=size), the defaults (trigger 90%, "
        "target 60%, the tail fitted to it, header budget 15%, half the room in a chat); "
        "ExtractiveSummarizer(); "
        f"usage {'reported with each assistant message' if usage else 'never reported'}. "
        "Full budget: truncation of the stream to the whole input window."
    )
    print()
    rows = chat_rows(
        args.data,
        args.sizes,
        args.streams,
        args.header_budget,
        usage=usage,
        recall=args.recall_budget,
        roles=args.plain_roles,
    )
    for row in rows:
        print(row)
    if not args.no_agents:
        print()
        print(agent_table(args.data, args.sizes, usage=usage))
    if not args.no_quality:
        print()
        print("| set | conversations | header items | tags | code lines | fragments |")
        print("|---|---:|---:|---:|---:|---:|")
        sets: dict[str, list[tuple[Sequence[Message], Sequence[Any]]]] = {
            "msc": [(c.messages, ()) for c in msc(args.data)],
            "memorybank": [(c.messages, ()) for c in memorybank(args.data)],
            **agent_sets(args.data),
        }
        examples: list[str] = []
        for name, conversations in sets.items():
            q = quality(conversations)
            d = q.defects
            print(
                f"| {name} | {q.conversations} | {q.items:,} | {d['tag']} | {d['code']} | "
                f"{d['fragment']} |"
            )
            examples.extend(f"{name}: {e}" for e in q.examples)
        for example in examples:
            print(f"  {example}")
    print(f"ran in {time.perf_counter() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
