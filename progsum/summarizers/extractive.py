"""The extractive summarizer: a complete summary update from the segment's own sentences, no model.

`ExtractiveSummarizer` is the offline default (no API key) and the last resort of a fallback chain.
It writes no new content: every item it proposes is a whole sentence of the segment
(`progsum.judge.segment.sentences`: code blocks, markup tags, logs, stack traces and fragments are never
sentences), so exact values survive by construction. Facts are written as terse, self-contained
notes (`progsum.judge.notes`): ``Caroline (8 May 2023): went to LGBTQ support group``, the speaker's
``name`` (else User/Assistant) and the message's day (``timestamp``) in front, a leading "I"
resolved into them, and fillers, hedges, articles and end marks left out (`progsum.judge.notes.terse`:
words are only removed, never changed, so every value stays token-exact). The notes of one
speaker and day in one update share one item and one label, ``Speaker 1: has jeep; works in
marketing`` (at most `GROUP_CHARS` characters each). Binding items, questions and keyed fields
keep the wording verbatim. It is deterministic: the same request always gives an equal update.

How a sentence is sorted (only ``user`` and ``assistant`` prose is read; tool data and thinking
are not). A sentence may fit several kinds; it goes to the first, in this order, that the schema
has a field for, and to nothing when none fits:

1. **question** (ends with ``?``): kept only if *unanswered*, i.e. no later message of the other
   speaker with prose follows it in the segment. A question answered in the segment is dropped.
2. **constraint**: a user sentence the extractive pass marked as a prohibition or an obligation
   (``request.extraction``: never, do not, must, only, at most, budgets, deadlines, ...).
3. **decision**: a decision cue, from either speaker: "let's go with", "we'll use", "decided",
   "agreed", "book it", "go ahead", "confirmed", "chose", "settled on", "opted for", ...
4. **rejected**: a ruled-out option: "instead of", "rather than", "ruled out", "won't work",
   "too expensive", "rejected", "decided against", "not an option", ...
5. **fact**: a sentence carrying exact values (`progsum.judge.values.exact_values`); a first-person
   statement (I/we, then at most a few auxiliaries and adverbs, then a word that is not a hedge
   or a pleasantry: "I have/own/work/live/am ...", "I don't eat meat", but not "I think so",
   "I'm sure", "I hope you ..."); a statement about the speaker's own world ("my X is/has ...",
   "... is my X", "he/she/they ...", "there is/are ...", but not a request such as "Find my
   order."); or, from the assistant, a reported result ("found", "passed", "failed", "returned",
   "costs", ...) or named advice ("I recommend One Hundred Years of Solitude", "you could visit
   Huangshan": a capitalised word past the first).
6. **answer**: the first sentence of a reply to the other speaker's question, when it fits none of
   the above ("Matte black, please."), is a fact joined to its question, both verbatim: "Which
   finish do you want? Matte black, please." (its provenance is the whole segment).

A sentence with no content word (3+ letters, not a function word or pleasantry) outside its cue
("Go ahead.", "Book it.", "I'd like that!", a list number "2.") carries nothing on its own and is
skipped, and so is a pleasantry, acknowledgement or reaction ("That sounds like fun!", "Thanks so
much.", `progsum.judge.salience.is_pleasantry`) unless the user's rule was marked in it.

A fact is then sorted further when the schema declares a field for it (``extract = [...]``,
`progsum.summary.schema.EXTRACTORS`): **dates** (a date or a dated event: birthday, appointment),
**people** (my sister, our neighbour, ...), **preferences** (I like/love/prefer/hate, my
favourite), **profile** (the user's own first-person statement), else **facts**; an answer joined
to its question is **answers**. A kind with no field of its own goes to the facts field.

Which field gets which kind, for any schema: a field that declares the kind (``extract``) takes it
first; for the rest, constraints go to `progsum.contract.guards.constraint_field`
(``constraints``, else a binding field named like rules, policies or requirements), the same
field the engine's prohibition guard writes to. Every other field is matched on its name and label,
then on its description: ``reject``/``ruled out`` takes rejected; ``question``, ``thread``,
``open``, ``todo``, ``pending``, ``unresolved`` take questions; ``decision``, ``choice`` take
decisions; ``fact``, ``finding``, ``result``, ``known``, ``observation`` take facts and answers.
Each kind goes to the first field (in declaration order) that takes it; a field no rule matches
gets nothing.

Deduplication: a sentence equal (after `progsum.summary.merge.normalise`) to a live item of the prior
summary or to one chosen earlier in this update is skipped, and so is a restatement of an item of
the same field (all its content words and exact values already in that item). Across fields such a
sentence may say something new: a decision taken among options that were listed as facts.

Salience, not first-come: candidates are ranked by `progsum.judge.salience.salience` (exact values,
named entities, the speaker's own statements, answers, novelty against the prior summary, less for
hedges), the shorter first among equals. ``max_per_field`` (default None) may cap the count per
field; without it the most salient items of non-binding fields fill
``max_share`` of the segment's prose characters together (a note is charged its body; binding
items are never dropped for length), so a compaction frees tokens. Items are listed in log order.
When the header outgrows its budget, the engine's consolidation drops the note that adds least per
character first, a joined note worth the sum of its notes (`progsum.engine.consolidate.drop_oldest`,
`progsum.engine.consolidate.note_density`), never the last carrier of a
value the user stated.

Retirement follows the rule for questions: a prior item of the questions field that is a verbatim
question (ends with ``?`` and comes from one message before the segment) is retired as answered
when the segment holds prose of both speakers, since the other speaker has then replied after it.
That is what becomes of the question that ended the previous segment once its reply is folded.
Nothing else is retired: whether a sentence resolves a written item cannot be told by rule.
The objective is left alone (the engine keeps the first task message verbatim), and ``usage`` is
None, since no model is called.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, get_args

from progsum.contract.guards import constraint_field
from progsum.errors import ConfigError
from progsum.judge.extract import Statement, message_text, sentences
from progsum.judge.notes import SEPARATOR, joined, note_parts, terse
from progsum.judge.provenance import user_prose
from progsum.judge.salience import content_words, is_pleasantry, plain, salience
from progsum.judge.values import exact_values
from progsum.messages.formats import Role, moment, speaker
from progsum.summary.merge import normalise
from progsum.summary.request import Segment, SummaryRequest
from progsum.summary.schema import FieldSpec, SchemaSpec
from progsum.summary.update import NewItem, Retirement, SummaryUpdate

__all__ = [
    "DEFAULT_MAX_PER_FIELD",
    "DEFAULT_MAX_SHARE",
    "KINDS",
    "ExtractiveSummarizer",
    "Kind",
    "fact_weight",
    "routes",
]

DEFAULT_MAX_PER_FIELD = 8
"""New items per field and update: enough for a busy segment, small enough to keep headers short."""

DEFAULT_MAX_SHARE = 0.35
"""New items of non-binding fields fill at most 35% of the characters of the segment's prose, so a
compaction always frees tokens. With salience choosing what fills it, 0.35 keeps as many facts as
0.5 did at the same final size on MSC and MemoryBank (bench/retention.py) and compacts the README's
trip 2.1x instead of 1.7x."""

GROUP_CHARS = 1_000
"""Characters of note bodies one joined note holds at most (about a paragraph). Joined notes of a
segment's speaker read as one note and cost one id and label; on MSC at the same final size
(bench/retention.py, 30 streams) caps of 300, 600 and none kept 2.25/1.60/1.48x, 2.31/1.67/1.63x
and 2.32/1.76/1.82x truncation at 2k/4k/8k, so the cap only bounds a very long segment."""

Kind: TypeAlias = Literal[
    "questions",
    "constraints",
    "decisions",
    "rejected",
    "dates",
    "people",
    "preferences",
    "profile",
    "facts",
    "answers",
]
"""What a sentence states, and so which field it belongs in (`progsum.summary.schema.EXTRACTORS`)."""

KINDS: tuple[Kind, ...] = get_args(Kind)
"""Every kind, in the order a sentence that fits several is given to one."""
_FACT_KINDS: tuple[Kind, ...] = ("dates", "people", "preferences", "profile", "answers")
"""Kinds of fact a schema may declare a field for; without one they go to the facts field."""
_NOTE_KINDS: frozenset[Kind] = frozenset({"dates", "people", "preferences", "profile", "facts"})
"""Kinds written as self-contained notes (who and when) in a non-binding, unkeyed field."""
_DATES = re.compile(
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?\s+\d{1,2}\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:january|february|march|april|may|june|july|"
    r"august|september|october|november|december)\b|\b\d{4}-\d\d-\d\d\b|"
    r"\b(?:birthday|anniversary|appointment|wedding|graduation)\b",
    re.IGNORECASE,
)
_PEOPLE = re.compile(
    r"\b(?:my|our|his|her|their)\s+(?:\w+\s+)?(?:wife|husband|partner|boyfriend|girlfriend|"
    r"sister|brother|mom|mum|mother|dad|father|parents|son|daughter|kids?|children|friend|"
    r"friends|boss|coworker|colleague|aunt|uncle|cousin|grandma|grandpa|grandmother|"
    r"grandfather|neighbou?r|roommate|fiancee?)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:i|we)(?:'m|'d| am| would)?\s+(?:really\s+|also\s+|just\s+|do\s+|don't\s+|"
    r"do not\s+|absolutely\s+)*(?:like|love|enjoy|prefer|hate|dislike|adore|can't stand|"
    r"fond of|into|a fan of)\b|\b(?:my|our)\s+favou?rite\b",
    re.IGNORECASE,
)

_I = r"(?:i|we|im|ive)(?:'(?:m|ve|d|ll|re))?"
"""A first-person subject: I, I'm, I've, I'd, I'll, we, we're, ... (also unpunctuated Im, Ive)."""
_AUX = (
    r"(?:really|also|actually|just|still|usually|always|never|often|sometimes|recently|"
    r"currently|mostly|definitely|totally|only|even|too|do|don't|dont|did|didn't|does|can|can't|"
    r"cannot|could|couldn't|will|won't|would|wouldn't|have|haven't|had|used to|kind of|kinda|am|"
    r"is|are|was|were|not|now|already|both|all)"
)
"""Words that may stand between a subject and what it says."""
_HEDGE = (
    r"(?:think|thought|guess|know|knew|hope|see|mean|bet|wish|agree|suppose|wonder|wondered|"
    r"understand|believe|imagine|feel|felt|hear|heard|remember|forgot|appreciate|sorry|glad|sure|"
    r"afraid|happy|excited|good|great|fine|well|okay|ok|doing|kidding|joking|jealous|curious|so|"
    r"very|hoping|thinking|going to|gonna|looking forward|say|said|tell|told|get it|got it|wait|"
    r"recommend|suggest|apologize|apologise)"
)
"""Hedges and pleasantries: "I think ...", "I'm sure", "I hope you ...": no fact follows."""
_STATEMENT = rf"(?:\s+{_AUX})*\s+(?!(?:{_HEDGE}|{_AUX})\b)[a-z]"
_SELF = re.compile(rf"\b{_I}{_STATEMENT}", re.IGNORECASE)
_PERSONAL = re.compile(
    r"\b(?:my|our)\s+(?:[\w']+\s+){0,2}?(?:is|are|was|were|has|have|had|lives|works|loves|"
    r"likes|plays|makes)\b|\b(?:is|are|was|were|'s|'re)\s+(?:my|our)\s+[a-z]|"
    rf"\b(?:he|she|they)(?:'(?:s|re|d|ll|ve))?{_STATEMENT}|"
    r"\bshes\s+[a-z]|\b(?:his|her|their)\s+(?:name|job|work|family|favou?rite|age)\b|"
    r"\bmine (?:is|are|was|were)\b|^there(?:'s| is| are| was| were)\b",
    re.IGNORECASE,
)
_RESULT = re.compile(
    r"\b(?:found|passes|passed|fails|failed|succeeded|returns|returned|shows|showed|"
    r"costs|is available|are available|is booked|is confirmed|completed|finished|added|removed|"
    r"updated|cancell?ed|changed|modified|processed|issued|refunded|created|deleted|"
    r"fixed|successfully)\b",
    re.IGNORECASE,
)
_ADVICE = re.compile(
    r"\b(?:i (?:would |'d )?(?:recommend|suggest)|recommended|a good choice|worth (?:a )?(?:visit|"
    r"try|read|watch)|you (?:could|can|might|should|may) (?:try|visit|read|watch|listen to|"
    r"check out|consider|go to|cook|make)|how about|why not try)\b",
    re.IGNORECASE,
)
"""The assistant's named advice ("I recommend One Hundred Years of Solitude", "you could visit
Huangshan"): what a user later asks about ("what did you recommend?"). A fact when it names
something (a capitalised word past the first, or a value)."""
_NEXT_STEP = re.compile(
    r"^(?:let me|let us|i'll|i will|i'm going to|i am going to)\s+"
    r"(?:look|check|see|search|find|try|think|get back)\b",
    re.IGNORECASE,
)
"""The speaker's next step ("Let me look for flights around April 3"): what they will do, not a
fact; the result that follows is."""
_NAMES = re.compile(r"(?<=\s)[A-Z][\w'-]+")
_DECISION = re.compile(
    r"\b(?:let's|lets|let us)\s+(?:go with|go for|use|book|take|pick|stick with|do)\b|"
    r"\b(?:we|i)(?:'ll| will| are going to| shall)\s+"
    r"(?:use|go with|go for|book|take(?! a look| a break| care)|stick with)\b|"
    r"\b(?:decided|decide to|our decision|agreed|agree to go|book it|go ahead|confirmed|"
    r"chose|chosen|settled on|opted for|going with|we picked|i picked)\b",
    re.IGNORECASE,
)
_OTHERS = (
    r"(?:(?i:he|she|they|it|my \w+|his \w+|her \w+|their \w+)|"
    r"(?!(?:We|You|Let|Then|So|And|But)\b)[A-Z][a-z]+)(?:\s+\w+)?"
)
_NOT_OURS = re.compile(
    rf"\b(?i:what|which|why|how|when|where|who)\b.*\b(?:decided|chose|picked|agreed)\b|"
    rf"(?:^|[,;]\s*|\b(?i:and|but|then|so)\s+){_OTHERS}\s+(?:decided|chose|picked|agreed|"
    rf"confirmed|opted)\b|"
    r"\b(?i:haven't|have not|hasn't|has not|not yet|didn't|did not|can't|cannot)\s+(?:\w+\s+)?"
    r"(?i:decided?|chosen|agreed)\b|\b(?i:take|took)\s+(?i:your|my|his|her|the)\s+(?i:advice)\b",
)
"""A decision cue that is not the speakers' decision: someone else's ("my boss decided to sell
online", "they chose"), asked about ("what was your major that you decided on"), not taken ("we
haven't decided yet") or advice taken to heart ("I will take your advice")."""
_HEDGED = re.compile(
    r"\b(?:might|maybe|perhaps|probably|not sure|i think|i guess|lol|haha\w*|must say|"
    r"have to say|have to admit|a must|will (?:just )?have to|'ll (?:just )?have to|"
    r"(?:talk|chat) (?:to you |with you )?(?:again )?(?:later|soon|next time|tomorrow))\b|"
    rf"^(?:{_OTHERS})\s+(?:like|likes|tell|tells|said|says|thought|think|want|wants)\b",
    re.IGNORECASE,
)
"""An obligation that is a remark, not a rule for the work: hedged ("I might have to"), a plan
("I'll have to look around"), an idiom ("I must say", "a must") or about someone else ("They like
to keep the classes to no more than 12"). It is sorted like any other sentence (a fact)."""


_FAREWELL = re.compile(
    r"\b(?:have|need) to (?:go|leave|run|get going|rest|sleep|head out|log off)"
    r"(?:(?:\s+\w+){0,3}\s+now\b|\W*$)",
    re.IGNORECASE,
)
"""Leaving the chat: "I have to go now", "I have to go prepare dinner now", "I have to leave."."""


def _remark(sentence: str) -> bool:
    """Whether an obligation the extractive pass marked is a remark, not a rule (`_HEDGED`)."""
    text = plain(sentence)
    return _HEDGED.search(text) is not None or _FAREWELL.search(text) is not None


_REJECTED = re.compile(
    r"\b(?:instead of|rather than|ruled out|rule out|rules out|won't work|will not work|"
    r"wouldn't work|doesn't work|does not work|didn't work|did not work|"
    r"too (?:expensive|pricey|costly|slow|risky|far|complicated)|rejected|reject|"
    r"decided against|not an option|no longer an option|gave up on|give up on|"
    r"not going with|scrapped|abandoned)\b",
    re.IGNORECASE,
)
_KEYWORDS: tuple[tuple[Kind, tuple[str, ...]], ...] = (
    ("rejected", ("reject", "ruled out", "ruled_out")),
    ("questions", ("question", "thread", "open", "todo", "pending", "unresolved")),
    ("decisions", ("decision", "choice")),
    ("facts", ("fact", "finding", "result", "known", "observation", "option")),
)
"""Field name, label or description words that say which kind a field takes (first match wins)."""

_content_words = content_words
_plain = plain


# -- routing: which field takes which kind ----------------------------------------------------


@functools.cache
def routes(spec: SchemaSpec) -> Mapping[Kind, str]:
    """The field each kind of sentence goes to in a schema; kinds without a field are absent.

    Example:
        ``routes(spec_of(Summary))["facts"] == "established_facts"``
    """
    found: dict[Kind, str] = {}
    for kind in KINDS:  # a field that declares ``extract = [kind]`` takes it first
        declared = spec.extracting(kind)
        if declared is not None:
            found[kind] = declared.name
    target = constraint_field(spec)
    if target is not None:
        found.setdefault("constraints", target.name)
    for f in spec.lists:
        if target is not None and f.name == target.name:
            continue
        by_name = _field_kind(f)
        if by_name is not None and by_name not in found and f.name not in found.values():
            found[by_name] = f.name
    return MappingProxyType(found)


def _target(table: Mapping[Kind, str], kind: Kind) -> str | None:
    """The field ``kind`` goes to: its own, else (for a kind of fact) the facts field."""
    field = table.get(kind)
    if field is None and kind in _FACT_KINDS:
        return table.get("facts")
    return field


def _field_kind(spec: FieldSpec) -> Kind | None:
    """The kind a field takes: by its name and label first, else by its description."""
    name = f"{spec.name} {spec.label}".casefold()
    for kind, words in _KEYWORDS:
        if any(word in name for word in words):
            return kind
    description = spec.description.casefold()
    hits = [
        (position, kind)
        for kind, words in _KEYWORDS
        for word in words
        if (position := description.find(word)) >= 0
    ]
    return min(hits)[1] if hits else None


# -- classification: what each sentence states ------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A sentence that may become an item."""

    field: str
    at: int | None
    """Log index of the message it comes from; None for an answer joined to its question."""
    order: int
    """Position of the sentence in the segment, for ties and log order."""
    weight: int
    """Higher is kept first when the field is over its bound."""
    text: str
    raw: str = ""
    """The verbatim sentence a note was written from (empty: ``text`` is verbatim)."""
    label: str = ""
    """A note's label (``who (day)``): notes of one label in one update share it, and ``text`` is
    then the note's body alone (`progsum.judge.notes.note_parts`)."""


def fact_weight(sentence: str, role: Role) -> int | None:
    """How telling a fact ``sentence`` is (higher is kept first), or None if it states no fact.

    Exact values weigh 2, a user's sentence 1 more, a first-person statement 1 more.
    """
    plain = _plain(sentence)
    if _NEXT_STEP.match(plain):
        return None
    values = bool(exact_values(sentence))
    own = _SELF.search(plain) is not None
    advice = role == "assistant" and _ADVICE.search(plain) and _NAMES.search(plain)
    if not (
        values
        or own
        or advice
        or _PERSONAL.search(plain)
        or (role == "assistant" and _RESULT.search(plain))
    ):
        return None
    return 2 * values + (role == "user") + own


def _kinds(sentence: str, role: Role, *, marked: bool) -> Iterator[Kind]:
    """The kinds ``sentence`` fits, in preference order (questions are handled apart)."""
    if marked:
        yield "constraints"
    plain = _plain(sentence)
    if (
        _DECISION.search(plain)
        and not _NOT_OURS.search(plain)
        and _substantive(_DECISION.sub(" ", plain))
    ):
        yield "decisions"
    if _REJECTED.search(plain) and _substantive(_REJECTED.sub(" ", plain)):
        yield "rejected"
    if fact_weight(sentence, role) is not None:
        if _DATES.search(plain):
            yield "dates"
        if _PEOPLE.search(plain):
            yield "people"
        if _PREFERENCE.search(plain):
            yield "preferences"
        if role == "user" and _SELF.search(plain):
            yield "profile"
        yield "facts"


def _substantive(text: str) -> bool:
    """Whether ``text`` has a content word (a lone value, such as a list number, says nothing)."""
    return bool(_content_words(text))


def _answered(segment: Segment, index: int, role: Role) -> bool:
    """Whether a message of the other speaker with prose follows message ``index``."""
    for info, message in zip(
        segment.infos[index + 1 :], segment.messages[index + 1 :], strict=True
    ):
        if info.role in ("user", "assistant") and info.role != role and message_text(message):
            return True
    return False


_DEFAULT_NAMES: Mapping[Role, str] = MappingProxyType({"user": "User", "assistant": "Assistant"})


def _names(segment: Segment) -> dict[Role, str]:
    """The name each speaker carries in the segment (the last ``name`` seen), else None."""
    names: dict[Role, str] = {}
    for info, message in zip(segment.infos, segment.messages, strict=True):
        name = speaker(message)
        if name is not None and info.role in ("user", "assistant"):
            names[info.role] = name
    return names


def _candidates(
    request: SummaryRequest[Any],
    table: Mapping[Kind, str],
    notes: frozenset[str],
    known: frozenset[str],
) -> Iterator[_Candidate]:
    """Every sentence of the segment that fits a field of the schema, in log order.

    Sentences for a field in ``notes`` are written as self-contained notes (`progsum.judge.notes`);
    ``known`` are the prior summary's content words (for novelty, `salience`).
    """
    extraction = request.extraction
    prohibitions = _keys(extraction.prohibitions)
    marked = prohibitions | _keys([s for s in extraction.obligations if not _remark(s.text)])
    segment = request.segment
    names = _names(segment)
    order = 0
    asked: tuple[Role, str] | None = None  # the question that ended the last prose message
    for index, (info, message) in enumerate(zip(segment.infos, segment.messages, strict=True)):
        role, author = info.role, segment.authors[index]
        if author == "tool" or role not in ("user", "assistant"):
            continue  # machine text in the user role (command output, harness notes) is no prose
        text = user_prose(message) if author == "user" else message_text(message)
        if not text:
            continue
        at = segment.start + index
        answered: bool | None = None
        question = asked[1] if asked is not None and asked[0] != role else None
        asked = None
        who = names.get(role) or _DEFAULT_NAMES[role]
        other = names.get("assistant" if role == "user" else "user")
        day = moment(message)
        for position, sentence in enumerate(sentences(text)):
            order += 1
            if sentence.endswith("?"):
                asked = (role, sentence)
                if "questions" not in table or not _substantive(sentence):
                    continue
                if answered is None:
                    answered = _answered(segment, index, role)
                if not answered:
                    yield _Candidate(table["questions"], at, order, 0, sentence)
                continue
            asked = None
            key = (at, sentence)
            if key not in marked and (not _substantive(sentence) or is_pleasantry(sentence)):
                continue
            kind = next(
                (k for k in _kinds(sentence, role, marked=key in marked) if _target(table, k)),
                None,
            )
            field = None if kind is None else _target(table, kind)
            if kind is not None and field is not None:
                weight = _weight(kind, sentence, role, prohibition=key in prohibitions, known=known)
                label, item = "", sentence
                if field in notes:
                    label, item = note_parts(terse(sentence), who=who, day=day, other=other)
                yield _Candidate(field, at, order, weight, item, sentence, label)
            elif position == 0 and question is not None and _target(table, "answers"):
                answer = f"{question} {sentence}"
                weight = salience(answer, user=role == "user", answer=True, known=known)
                yield _Candidate(
                    table.get("answers") or table["facts"], None, order, weight, answer
                )


def _weight(
    kind: Kind, sentence: str, role: Role, *, prohibition: bool, known: frozenset[str]
) -> int:
    if kind == "constraints":
        return int(prohibition)
    return salience(sentence, user=role == "user", known=known)


def _keys(statements: Sequence[Statement]) -> frozenset[tuple[int, str]]:
    return frozenset((s.at, s.text) for s in statements)


# -- selection: dedupe and bound ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Said:
    """What an item is compared on: its field, normalised form, content words and exact values."""

    field: str
    key: tuple[str, tuple[str, ...]]
    words: frozenset[str]
    values: frozenset[str]

    @classmethod
    def of(cls, field: str, text: str) -> _Said:
        return cls(field, normalise(text), _content_words(text), frozenset(exact_values(text)))

    def restates(self, other: _Said) -> bool:
        """Whether ``self`` adds nothing to ``other``.

        It adds nothing when it has the same wording (in any field), or, in the same field, only
        content words and exact values ``other`` already has.
        """
        if self.key == other.key:
            return True
        return (
            self.field == other.field
            and bool(self.words)
            and self.words <= other.words
            and self.values <= other.values
        )


def _select(
    candidates: Sequence[_Candidate], said: Sequence[_Said], bound: int | None
) -> list[_Candidate]:
    """The (at most ``bound``) most salient candidates restating nothing said before, in order."""
    known = list(said)
    fresh: list[_Candidate] = []
    for candidate in sorted(candidates, key=_rank):
        if len(fresh) == bound:
            break
        new = [_Said.of(candidate.field, text) for text in {candidate.text, candidate.raw} if text]
        if not any(one.restates(old) for one in new for old in known):
            known.extend(new)
            fresh.append(candidate)
    return sorted(fresh, key=lambda c: c.order)


def _rank(candidate: _Candidate) -> tuple[int, int, int]:
    """Most salient first; then the shorter (more fit in the budget), then the earlier."""
    return (-candidate.weight, len(candidate.text), candidate.order)


def _prose_size(segment: Segment) -> int:
    """Characters of the segment's prose sentences, a separator each (what items are copied from).

    With ``max_share=1`` every selection fits: an item is a sentence, or an answer joined to its
    question by one space.
    """
    return sum(
        len(sentence) + 1
        for info, message in zip(segment.infos, segment.messages, strict=True)
        if info.role in ("user", "assistant")
        for sentence in sentences(message_text(message))
    )


def _fit(
    picked: Mapping[str, Sequence[_Candidate]], binding: frozenset[str], room: float
) -> dict[str, list[_Candidate]]:
    """Keep binding fields whole; fill what ``room`` (characters) is left by weight, in order.

    A candidate that does not fit is passed over for lighter, shorter ones that do. A note is
    charged its body and separator (`_size`): it shares its label with the other notes of its
    speaker and day. (Filling by salience per character instead kept about as many chat facts and
    lost the coding example's long root-cause finding: docs/retention.md.)
    """
    used = sum(_size(c) for name in binding for c in picked.get(name, ()))
    rest = [c for name, chosen in picked.items() if name not in binding for c in chosen]
    fitted: set[tuple[str, int]] = set()
    for candidate in sorted(rest, key=_rank):
        if used + _size(candidate) <= room:
            used += _size(candidate)
            fitted.add((candidate.field, candidate.order))
    return {
        name: [c for c in chosen if name in binding or (name, c.order) in fitted]
        for name, chosen in picked.items()
    }


def _size(candidate: _Candidate) -> int:
    """Characters a candidate costs: a note its body and separator, other items their text."""
    return len(candidate.text) + 2 if candidate.label else len(candidate.raw or candidate.text)


def _grouped(chosen: Sequence[_Candidate]) -> list[NewItem]:
    """The field's new items: notes of one label (speaker and day) joined into one, in order.

    ``Speaker 1: has a jeep; works in marketing`` says two facts for one label; a note's
    provenance is its message, a joined note's the segment (``at=None``).
    """
    items: list[NewItem] = []
    groups: dict[str, list[list[_Candidate]]] = {}
    for candidate in chosen:
        if candidate.label:
            runs = groups.setdefault(candidate.label, [[]])
            if runs[-1] and sum(_size(c) for c in runs[-1]) + _size(candidate) > GROUP_CHARS:
                runs.append([])
            runs[-1].append(candidate)
    done: set[int] = set()
    for candidate in chosen:
        label = candidate.label
        if not label:
            items.append(NewItem(text=candidate.text, at=candidate.at, origin="extracted"))
            continue
        group = next(run for run in groups[label] if candidate in run)
        if id(group) in done:
            continue
        done.add(id(group))
        at = {c.at for c in group}
        text = joined(label, SEPARATOR.join(c.text for c in group))
        items.append(NewItem(text=text, at=at.pop() if len(at) == 1 else None, origin="extracted"))
    return items


# -- retirement --------------------------------------------------------------------------------


def _answered_threads(request: SummaryRequest[Any], field: str) -> tuple[Retirement, ...]:
    """Retire prior verbatim questions that both speakers have written after (see the rules)."""
    segment = request.segment
    speakers = {
        info.role
        for info, message in zip(segment.infos, segment.messages, strict=True)
        if info.role in ("user", "assistant") and message_text(message)
    }
    if speakers != {"user", "assistant"}:
        return ()
    reason = f"answered: both speakers wrote after it (messages {segment.start}-{segment.end - 1})"
    return tuple(
        Retirement(id=item.id, reason=reason)
        for item in getattr(request.prior, field)
        if item.text.endswith("?")
        and item.source[1] - item.source[0] == 1
        and item.source[1] <= segment.start
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractiveSummarizer:
    """A deterministic summarizer that copies the segment's telling sentences into the schema.

    No model, no network: the offline default and the last resort of a fallback chain. See the
    module docstring for the rules.

    Example:
        ``Compactor(policy=Policy(context_window=8_000), summarizer=ExtractiveSummarizer())``
    """

    max_per_field: int | None = None
    """New items per field in one update at most; None (the default): no count, the most salient
    sentences fill the share (see the rules)."""
    max_share: float = DEFAULT_MAX_SHARE
    """Characters of new non-binding items, as a share of the segment's prose characters (0 to 1];
    binding items (constraints, decisions) are kept whatever their length."""

    def __post_init__(self) -> None:
        bound = self.max_per_field
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, int) or bound < 1
        ):
            raise ConfigError(
                f"max_per_field={bound!r} must be a whole number of at least 1, or None (no "
                f"count); use e.g. max_per_field={DEFAULT_MAX_PER_FIELD}"
            )
        share = self.max_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ConfigError(
                f"max_share={share!r} must be a share of the segment's prose above 0 and at "
                f"most 1; use e.g. max_share={DEFAULT_MAX_SHARE}"
            )

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """New items for ``request.segment``, sorted into the schema's fields by rule."""
        spec = request.spec
        table = routes(spec)
        prior_texts = [item.text for f in spec.lists for item in getattr(request.prior, f.name)]
        known = frozenset().union(*(content_words(text) for text in prior_texts))
        by_field: dict[str, list[_Candidate]] = {}
        for candidate in _candidates(request, table, _note_fields(spec), known):
            by_field.setdefault(candidate.field, []).append(candidate)
        said = tuple(
            _Said.of(f.name, item.text)
            for f in spec.lists
            for item in getattr(request.prior, f.name)
        )
        picked: dict[str, list[_Candidate]] = {}
        for f in spec.lists:  # in schema order: a sentence chosen for one field is not repeated
            chosen = _select(by_field.get(f.name, ()), said, self.max_per_field)
            picked[f.name] = chosen
            said += tuple(_Said.of(c.field, c.text) for c in chosen)
        binding = frozenset(f.name for f in spec.binding)
        room = self.max_share * _prose_size(request.segment)
        kept = _fit(picked, binding, room)
        add: dict[str, tuple[str | NewItem, ...]] = {
            name: tuple(_grouped(items)) for name, items in kept.items() if items
        }
        questions = table.get("questions")
        retire = _answered_threads(request, questions) if questions else ()
        return SummaryUpdate(add=add, retire=retire)

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Async `summarize` (the work is pure and fast, so it runs inline)."""
        return self.summarize(request)


def _note_fields(spec: SchemaSpec) -> frozenset[str]:
    """Fields written as self-contained notes: non-binding, unkeyed, taking a kind of fact."""
    table = routes(spec)
    names = {_target(table, kind) for kind in _NOTE_KINDS}
    return frozenset(
        f.name for f in spec.lists if f.name in names and not f.binding and f.kind != "keyed"
    )
