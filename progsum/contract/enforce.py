"""The binding contract, enforced by the engine on every update, whichever summarizer wrote it.

A summarizer proposes; `enforce` decides what of the proposal may stand, before `progsum.summary.merge`
applies it. Pure: it reads the request (prior summary, segment, author classes) and returns the
update it accepts with what it refused, demoted or kept back, each with the reason.

**Exact values.** A new item whose exact values are not carried token-exactly by the segment
(its text, and each message's speaker name and day, `progsum.judge.notes.stamp`) or the prior summary is
refused: "$3" for "$3,000", "TP123" for "TP1234", "April 4" for "April 14".

**Who may bind.** An item of a binding field stands as binding only when a message of the segment
supports it (holds all its exact values token-exactly and at least half its content words) and:

* for the rules field (`progsum.contract.guards.constraint_field`: constraints, requirements, ...), the
  supporting message was written by the user (`progsum.judge.provenance`);
* for other binding fields (decisions, bookings, ...), the user wrote the supporting message, or
  accepted it: a user message of the segment that is not a question states two and half of its
  content words, or
  answers the assistant's proposal with a yes ("Yes, book it.").

Its ``cites`` then name those messages. A binding item that only machine or assistant text
supports is demoted to the facts field (text from tools can become facts, never rules); one that
nothing in the segment supports, or that carries no content beyond pleasantries ("Agreed.",
"I'm always here for you!"), is refused. A near-duplicate of a live binding item is dropped, and
binding items beyond the binding budget are demoted, each with the reason.

**Who may unbind.** Retiring a binding item needs the user's word: a user message of the folded
segment (``Retirement.evidence``, else found in the segment) that refers to the item (shares an
exact value or half its content words) and reopens it (a cue such as "instead", "no longer",
"cancel", "change", "actually") or states its replacement in the same update. A reason alone never
suffices. Refused retirements leave the item in place; `reopened` answers the same question for
keyed supersession.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from progsum.contract.guards import constraint_field, fact_field
from progsum.judge.extract import message_text
from progsum.judge.notes import stamp
from progsum.judge.provenance import AUTHORS, Author, user_prose
from progsum.judge.values import carried, stated_values, value_keys
from progsum.messages.formats import Message
from progsum.messages.transcript import source_text
from progsum.summary.merge import Refusal, normalise
from progsum.summary.request import Segment, SummaryRequest
from progsum.summary.schema import Item, SchemaSpec
from progsum.summary.update import NewItem, Retirement, SummaryUpdate

__all__ = [
    "ITEM_OVERHEAD",
    "Verdict",
    "enforce",
    "reopened",
    "substantive",
    "words",
]

SUPPORT = 0.5
"""Share of an item's content words a message must hold (with all its values) to state it."""
ITEM_OVERHEAD = 6
"""Tokens a header line takes besides the item's text ("- [C12] " and the line break)."""

_WORD = re.compile(r"[^\W\d_][\w'-]*")
MIN_LETTERS = 3
_FILLER = frozenset(
    {
        *("the", "and", "for", "with", "from", "this", "that", "these", "those", "are", "was"),
        *("were", "been", "being", "have", "has", "had", "you", "your", "yours", "our", "ours"),
        *("they", "them", "their", "she", "her", "his", "him", "its", "it's", "i'm", "i've"),
        *("i'd", "i'll", "you're", "we're", "we'll", "don't", "dont", "not", "never", "always"),
        *("must", "should", "would", "will", "can", "cannot", "can't", "won't", "shall", "may"),
        *("might", "could", "please", "just", "also", "any", "all", "some", "does", "did"),
        *("here", "there", "really", "very", "sure", "glad", "happy", "thanks", "thank"),
        *("welcome", "okay", "agreed", "agree", "prob", "problem", "problems", "worries"),
        *("worry", "great", "good", "nice", "cool", "awesome", "love", "lovely", "wonderful"),
        *("hope", "hopefully", "fun", "enjoy", "yes", "yeah", "yep", "nope", "totally"),
        *("definitely", "absolutely", "indeed", "course", "anytime", "pleasure", "sorry", "bye"),
        *("later", "talk", "soon", "chat", "luck", "care", "well", "best", "wish", "wishes"),
        *("fine", "alright", "right", "exactly", "true", "same", "too", "much", "lot", "lots"),
        *("anyway", "either", "maybe", "kind", "sort", "thing", "things", "stuff", "someone"),
        *("something", "everything", "anything", "ever", "user", "users", "assistant", "agent"),
        *("what", "which", "who", "whom", "when", "where", "why", "how", "than", "then"),
        *("into", "onto", "about", "over", "under", "again", "still", "yet", "only", "even"),
        *("like", "know", "think", "sounds", "sound", "get", "got", "let", "let's", "want"),
        *("need", "make", "made", "take", "use", "used", "way", "one", "ones", "more", "most"),
        *("say", "said", "tell", "told", "ask", "asked", "feel", "mean", "guess", "hey", "hi"),
        *("hello", "wow", "haha", "lol", "omg", "gonna", "wanna", "kinda", "stated", "states"),
    }
)
"""Function words and pleasantries: words that state no rule, fact or decision."""
_REOPEN = re.compile(
    r"\b(?:no longer|not anymore|any ?more|instead|change[sd]?|changing|switch(?:ed)?|"
    r"cancel(?:l?ed)?|drop(?:ped)?|forget|scratch|ignore|lift(?:ed)?|remove[sd]?|relax(?:ed)?|"
    r"allowed|you can now|ok(?:ay)? to|fine to|go ahead and|actually|rather|replace[sd]?|"
    r"update[sd]?|revis\w*|reopen\w*|undo|revert\w*|never ?mind|disregard|increase[sd]?|"
    r"decrease[sd]?|raise[sd]?|lower(?:ed)?|extend(?:ed)?|move[sd]?|postpone[sd]?|"
    r"reschedule[sd]?|done|finished|completed|resolved|not needed|doesn't matter|"
    r"does not matter|now)\b",
    re.IGNORECASE,
)
"""What a user says when reopening, changing, lifting or completing something."""
_ACCEPT = re.compile(
    r"^\W*(?:yes|yep|yeah|sure|ok(?:ay)?|agreed|sounds good|perfect|great|do it|go ahead|"
    r"let'?s do (?:it|that)|book it|confirm(?:ed)?|approved?|please do|that works|deal)\b",
    re.IGNORECASE,
)
"""How a user accepts a proposal."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What `enforce` decided: the update that may stand, and what it refused or moved."""

    update: SummaryUpdate
    """The update to merge: checked items with their citations and authors."""
    rejected: tuple[Refusal, ...] = ()
    """New items refused (their text, and why): invented or paraphrased values, unsupported or
    empty binding items."""
    demoted: tuple[Refusal, ...] = ()
    """Binding items filed as facts instead (their text, and why)."""
    refused: tuple[Refusal, ...] = ()
    """Retirements refused (the item id, and why)."""
    duplicates: tuple[str, ...] = ()
    """Binding texts dropped as near-duplicates of live binding items."""


class _Said:
    """One message of the segment as the contract reads it.

    Each reading (the prose, the values, the words) is made the first time an item needs it:
    most messages are only ever asked whether they hold a value, and a substring test answers
    that for most of them without reading their values at all.
    """

    def __init__(self, at: int, author: Author, message: Message) -> None:
        self.at, self.author, self.message = at, author, message

    @functools.cached_property
    def shown(self) -> str:
        """Everything the message shows the summarizer, tool data included."""
        return source_text((self.message,))

    @functools.cached_property
    def stamp(self) -> str:
        """The speaker and day a note may name (`progsum.judge.notes.stamp`)."""
        return stamp(self.message)

    @functools.cached_property
    def text(self) -> str:
        """What the author said: the user's prose, the assistant's text, or all of it (tools)."""
        if self.author == "user":
            return user_prose(self.message)
        if self.author == "assistant":
            return message_text(self.message)
        return self.shown

    @functools.cached_property
    def question(self) -> bool:
        """The text ends with a question mark."""
        return self.text.rstrip().endswith("?")

    @functools.cached_property
    def known(self) -> frozenset[str]:
        """The values of everything the message shows, and of its stamp."""
        return value_keys(self.shown) | value_keys(self.stamp)

    @functools.cached_property
    def keys(self) -> frozenset[str]:
        """The values of its text (with the stamp's when the text is all it shows)."""
        return self.known if self.text == self.shown else value_keys(self.text)

    @functools.cached_property
    def words(self) -> frozenset[str]:
        """Its content words."""
        return words(self.text)

    def states_value(self, value: str) -> bool:
        """Whether the text holds ``value`` token-exactly (`keys`), a substring test first."""
        anchor = _anchor(value)
        if anchor not in self.shown and anchor not in self.stamp:
            return False  # the text is part of what it shows: no prose read
        if anchor not in self.text and not (self.text == self.shown and anchor in self.stamp):
            return False
        return carried(value, self.keys)

    def shows_value(self, value: str) -> bool:
        """Whether anything the message shows holds ``value`` token-exactly (`known`)."""
        anchor = _anchor(value)
        if anchor not in self.shown and anchor not in self.stamp:
            return False
        return carried(value, self.known)


@functools.lru_cache(maxsize=4_096)
def _anchor(value: str) -> str:
    """A part of ``value`` that every text carrying it holds verbatim: up to a space or hyphen.

    Keys are tokens of the text, or a number of the text with a unit word (`progsum.judge.values`), and
    a number holds no space or hyphen: so a text without the anchor cannot carry the value.
    """
    return _ANCHOR_END.split(value, maxsplit=1)[0]


_ANCHOR_END = re.compile(r"[\s-]")


_REMEMBERED_CHARS = 2_000
"""Texts up to this long (summary items, short messages) have their words remembered: every
compaction reads every live item again. Longer ones (tool output) are read once anyway."""


def words(text: str) -> frozenset[str]:
    """Content words of ``text``: case-folded, stemmed lightly, without fillers and pleasantries."""
    return _short_words(text) if len(text) <= _REMEMBERED_CHARS else _words(text)


@functools.lru_cache(maxsize=4_096)
def _short_words(text: str) -> frozenset[str]:
    return _words(text)


def _words(text: str) -> frozenset[str]:
    found = set()
    for raw in _WORD.findall(text.replace("\u2019", "'").casefold()):
        word = raw.strip("'-")
        if len(word) < MIN_LETTERS or word in _FILLER:
            continue
        found.add(_stem(word))
    return frozenset(found)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_LETTERS:
            return word[: -len(suffix)]
    return word


def substantive(text: str) -> bool:
    """Whether ``text`` states anything beyond pleasantries: a content word at least."""
    return bool(words(text))


def _said(segment: Segment) -> tuple[_Said, ...]:
    return tuple(
        _Said(at, author, message)
        for (at, message), author in zip(segment, segment.authors, strict=True)
    )


def _states(item_keys: Sequence[str], item_words: frozenset[str], said: _Said) -> bool:
    """Whether ``said`` holds every value and at least `SUPPORT` of the content words."""
    if not all(said.states_value(value) for value in item_keys):
        return False
    if not item_words:
        return bool(item_keys)
    return len(item_words & said.words) >= max(1, math.ceil(SUPPORT * len(item_words)))


def _refers(item: Item, said: _Said) -> bool:
    """Whether ``said`` refers to ``item``: a shared value, or half its content words."""
    values = stated_values(item.text)
    if any(said.states_value(value) for value in values):
        return True
    item_words = words(item.text)
    return bool(item_words) and len(item_words & said.words) >= max(
        1, math.ceil(SUPPORT * len(item_words))
    )


def _accepted(item_words: frozenset[str], source: _Said, folded: Sequence[_Said]) -> _Said | None:
    """The user's message of the folded segment that accepts what ``source`` states.

    Either the user's next message answers the proposal before it with a yes, or a user message
    that is no question states at least two and half of the item's content words.
    """
    later_user = next((s for s in folded if s.at > source.at and s.author == "user"), None)
    if (
        later_user is not None
        and _ACCEPT.match(later_user.text)
        and "?" in next((s.text for s in reversed(folded) if s.at < later_user.at), "")
    ):
        return later_user
    wanted = max(_ACCEPT_WORDS, math.ceil(SUPPORT * len(item_words)))
    for s in folded:
        if s.author == "user" and not s.question and len(item_words & s.words) >= wanted:
            return s
    return None


_ACCEPT_WORDS = 2
"""Fewest content words a user message shares with a decision it states or asks for."""


def enforce(
    request: SummaryRequest[Any],
    update: SummaryUpdate,
    *,
    binding_room: int | None = None,
    count: Callable[[str], int] | None = None,
) -> Verdict:
    """What of ``update`` may stand (see the module docstring).

    Args:
        request: The request the update answers (prior summary, segment, author classes).
        update: The summarizer's proposal.
        binding_room: Tokens new binding items may still take (None: no bound).
        count: Token estimate of an item's text (needed with ``binding_room``).
    """
    spec = request.spec
    segment = request.segment
    folded = _said(segment)
    said = (*(_said(request.head) if request.head is not None else ()), *folded)
    prior = request.prior
    summary_text = "\n".join(_prior_texts(prior, spec))
    summarized = _Said(-1, "tool", {"role": "user", "content": summary_text})

    def known(value: str, cites: tuple[int, ...]) -> bool:
        """Whether the summary or the segment holds ``value``: the messages cited read first."""
        if summarized.shows_value(value):
            return True
        if any(s.shows_value(value) for s in said if s.at in cites):
            return True
        return any(s.shows_value(value) for s in said if s.at not in cites)

    rules = constraint_field(spec)
    facts = fact_field(spec)
    live_binding = [_likeness(item.text) for f in spec.binding for item in getattr(prior, f.name)]
    rejected: list[Refusal] = []
    demoted: list[Refusal] = []
    duplicates: list[str] = []
    add: dict[str, list[NewItem]] = {}
    room = binding_room
    for f in spec.lists:
        for entry in update.add.get(f.name, ()):
            item = entry if isinstance(entry, NewItem) else NewItem(text=entry)
            text = item.text.strip()
            if not text:
                continue
            values = stated_values(text)
            invented = [v for v in values if not known(v, _asked(item))]
            if invented:
                rejected.append(
                    Refusal(
                        id=_short(text),
                        why=f"carries {invented[0]!r}, which neither the segment nor the summary "
                        "holds token-exactly (a paraphrased, truncated or invented value)",
                    )
                )
                continue
            if not f.binding:
                add.setdefault(f.name, []).append(_cited(item, values, said, segment))
                continue
            ruling = _bind(item, text, values, said, folded, rule=rules is not None and f is rules)
            if isinstance(ruling, str):
                if ruling.startswith("!") or facts is None:
                    rejected.append(Refusal(id=_short(text), why=ruling.lstrip("!")))
                else:
                    demoted.append(Refusal(id=_short(text), why=ruling))
                    add.setdefault(facts.name, []).append(_cited(item, values, said, segment))
                continue
            likeness = _likeness(text)
            if any(_near_duplicate(likeness, other) for other in live_binding):
                duplicates.append(text)
                continue
            if room is not None and count is not None:
                cost = count(text) + ITEM_OVERHEAD
                if cost > room:
                    why = "the binding budget is full; kept as a fact so that nothing is lost"
                    if facts is None:
                        rejected.append(Refusal(id=_short(text), why=why))
                    else:
                        demoted.append(Refusal(id=_short(text), why=why))
                        add.setdefault(facts.name, []).append(ruling)
                    continue
                room -= cost
            live_binding.append(likeness)
            add.setdefault(f.name, []).append(ruling)
    retire, refused = _retirements(request, update, folded, add)
    checked = update.model_copy(
        update={"add": {name: tuple(items) for name, items in add.items()}, "retire": retire}
    )
    return Verdict(checked, tuple(rejected), tuple(demoted), tuple(refused), tuple(duplicates))


_Likeness = tuple[tuple[str, tuple[str, ...]], frozenset[str], frozenset[str]]


def _likeness(text: str) -> _Likeness:
    return normalise(text), words(text), value_keys(text)


def _near_duplicate(new: _Likeness, old: _Likeness) -> bool:
    """Equal once normalised, or no content word and no value that ``old`` lacks."""
    if new[0] == old[0]:
        return True
    return bool(new[1]) and new[1] <= old[1] and new[2] <= old[2]


def _bind(
    item: NewItem,
    text: str,
    values: Sequence[str],
    said: Sequence[_Said],
    folded: Sequence[_Said],
    *,
    rule: bool,
) -> NewItem | str:
    """The binding item with its citations, or why it cannot bind ("!" first: refuse it)."""
    if not substantive(text):
        return "!states nothing beyond pleasantries, so it cannot bind"
    item_words = words(text)
    cited = [s for s in said if s.at in _asked(item)] or list(said)
    supports = [s for s in cited if _states(values, item_words, s)]
    users = [s for s in supports if s.author == "user"]
    if users:
        return item.model_copy(update={"cites": tuple(s.at for s in users), "author": "user"})
    if not supports:
        where = "the messages it cites" if _asked(item) else "the segment"
        return f"!nothing in {where} states it (all its values and half its content words)"
    if not rule:
        for source in supports:
            accepted = _accepted(item_words, source, folded)
            if accepted is not None:
                cites = tuple(sorted({source.at, accepted.at}))
                return item.model_copy(update={"cites": cites, "author": "user"})
    who = "machine text" if all(s.author == "tool" for s in supports) else "the assistant"
    what = "a rule" if rule else "a decision the user did not state or accept"
    return f"only {who} states it (message {supports[0].at}): {what}, so it is kept as a fact"


def _asked(item: NewItem) -> tuple[int, ...]:
    if item.cites:
        return item.cites
    return () if item.at is None else (item.at,)


def _cited(
    item: NewItem, values: Sequence[str], said: Sequence[_Said], segment: Segment
) -> NewItem:
    """A non-binding item with the messages that state it, if the summarizer did not say."""
    asked = [at for at in _asked(item) if segment.author(at) is not None]
    if asked:
        author = _author_of(segment.author(at) for at in asked)
        return item.model_copy(update={"cites": tuple(asked), "author": author})
    item_words = words(item.text)
    supports = [s for s in said if _states(values, item_words, s)] if values or item_words else []
    if not supports:
        return item.model_copy(update={"cites": (), "author": None})
    return item.model_copy(
        update={
            "cites": tuple(s.at for s in supports[:3]),
            "author": _author_of(s.author for s in supports),
        }
    )


def _author_of(authors: Iterable[Author | None]) -> Author | None:
    found = {a for a in authors if a is not None}
    return next((author for author in AUTHORS if author in found), None)


def _retirements(
    request: SummaryRequest[Any],
    update: SummaryUpdate,
    said: Sequence[_Said],
    add: Mapping[str, Sequence[NewItem]],
) -> tuple[tuple[Retirement, ...], list[Refusal]]:
    """The retirements that may stand; a binding one needs the user's word in the segment."""
    spec = request.spec
    binding = {item.id: (f, item) for f in spec.binding for item in getattr(request.prior, f.name)}
    kept: list[Retirement] = []
    refused: list[Refusal] = []
    for retirement in update.retire:
        found = binding.get(retirement.id)
        if found is None:
            kept.append(retirement)  # not binding (or unknown: the merge refuses it)
            continue
        f, item = found
        why = _unbinds(item, retirement, said, add.get(f.name, ()))
        if isinstance(why, str):
            refused.append(Refusal(id=retirement.id, why=why))
        else:
            kept.append(retirement.model_copy(update={"evidence": why}))
    return tuple(kept), refused


def _unbinds(
    item: Item, retirement: Retirement, said: Sequence[_Said], replacements: Sequence[NewItem]
) -> int | str:
    """The user's message that reopens ``item``, or why the retirement is refused."""
    if retirement.evidence is not None:
        cited = [s for s in said if s.at == retirement.evidence]
        if not cited:
            return (
                f"binding item; its evidence, message {retirement.evidence}, is not in the folded "
                "segment, so it stays"
            )
        if cited[0].author != "user":
            return (
                f"binding item; message {retirement.evidence} was written by the "
                f"{cited[0].author}, and only the user can reopen it, so it stays"
            )
    else:
        cited = [s for s in said if s.author == "user"]
    for s in cited:
        if s.author != "user" or not _refers(item, s):
            continue
        if _REOPEN.search(s.text) or any(s.at in r.cites for r in replacements):
            return s.at
    return (
        "binding item; no message the user wrote in the folded segment reopens or changes it "
        f"(reason given: {retirement.reason.strip() or 'none'!r}), so it stays"
    )


def reopened(item: Item, segment: Segment) -> bool:
    """Whether a user message of ``segment`` refers to ``item`` and reopens or changes it."""
    return any(
        s.author == "user" and _refers(item, s) and _REOPEN.search(s.text) for s in _said(segment)
    )


def _prior_texts(prior: object, spec: SchemaSpec) -> list[str]:
    texts = [getattr(prior, spec.objective.name)] if spec.objective else []
    texts += [item.text for f in spec.lists for item in getattr(prior, f.name)]
    return texts


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
