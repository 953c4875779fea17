"""The binding contract, enforced by the engine on every update, whichever summarizer wrote it.

A summarizer proposes; `enforce` decides what of the proposal may stand, before
`progsum.summary._merge` applies it. Pure: it reads the request (prior summary, segment, author
classes) and returns the update it accepts with what it refused, demoted or kept back, each with
the reason.

**Exact values.** A new item whose exact values are not carried token-exactly by the segment
(its text, and each message's speaker name and day, `progsum.judge._notes.stamp`) or the prior
summary is refused: "$3" for "$3,000", "TP123" for "TP1234", "April 4" for "April 14".

**Who may bind.** An item of a binding field stands as binding only when a message of the segment
supports it (holds all its exact values token-exactly and at least half its content words) and:

* for the rules field (`progsum.contract._guards.constraint_field`: constraints, requirements,
  ...), the supporting message was written by the user (`progsum.judge._provenance`);
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
exact value or half its content words) and reopens it (a sentence the judge reads as a
``revision``, `progsum.judge._seam.reopens`: never a question, a prohibition or a reaffirmation)
or states its replacement in the same update. A reason alone never
suffices. Refused retirements leave the item in place; `reopened` answers the same question for
keyed supersession.

What a message states or refers to is read in `progsum.contract._support`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from progsum.contract._guards import BUDGET_FULL, constraint_field, fact_field
from progsum.contract._support import SUPPORT, Said, Shown, refers, said_in, substantive, words
from progsum.judge import _seam as seam
from progsum.judge._provenance import AUTHORS, Author
from progsum.judge._values import stated_values, value_keys
from progsum.summary._merge import Refusal, normalise
from progsum.summary._request import Segment, SummaryRequest
from progsum.summary._schema import FieldSpec, Item, SchemaSpec
from progsum.summary._update import NewItem, Retirement, SummaryUpdate

__all__ = [
    "ITEM_OVERHEAD",
    "Verdict",
    "enforce",
    "reopened",
]

ITEM_OVERHEAD = 6
"""Tokens a header line takes besides the item's text ("- [C12] " and the line break)."""


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


def _accepted(item_words: frozenset[str], source: Said, folded: Sequence[Said]) -> Said | None:
    """The user's message of the folded segment that accepts what ``source`` states.

    Either the user's next message answers the proposal before it with a yes, or a user message
    that is no question states at least two and half of the item's content words.
    """
    later_user = next((s for s in folded if s.at > source.at and s.author == "user"), None)
    if (
        later_user is not None
        and _accepts(later_user)
        and "?" in next((s.text for s in reversed(folded) if s.at < later_user.at), "")
    ):
        return later_user
    wanted = max(_ACCEPT_WORDS, math.ceil(SUPPORT * len(item_words)))
    for s in folded:
        if s.author == "user" and not s.question and len(item_words & s.words) >= wanted:
            return s
    return None


def _accepts(said: Said) -> bool:
    """Whether the first sentence of a user message is judged a decision (a "yes" to an offer)."""
    found = seam.sentences(said.text)
    return bool(found) and seam.judge(found[0], seam.context("user")).label == "decision"


def _reopens(said: Said) -> bool:
    return seam.reopens(said.text, seam.context("user"))


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
    prior = request.prior
    folded = said_in(request.segment)
    summary_text = "\n".join(_prior_texts(prior, spec))
    intake = _Intake(
        segment=request.segment,
        said=(*(said_in(request.head) if request.head is not None else ()), *folded),
        folded=folded,
        summarized=Said(-1, "tool", {"role": "user", "content": summary_text}),
        rules=constraint_field(spec),
        facts=fact_field(spec),
        live_binding=[
            _likeness(item.text) for f in spec.binding for item in getattr(prior, f.name)
        ],
        room=binding_room,
        count=count,
    )
    for f in spec.lists:
        for entry in update.add.get(f.name, ()):
            intake.admit(f, entry)
    retire, refused = _retirements(request, update, folded, intake.add)
    checked = update.model_copy(
        update={"add": {name: tuple(items) for name, items in intake.add.items()}, "retire": retire}
    )
    return Verdict(
        checked,
        tuple(intake.rejected),
        tuple(intake.demoted),
        tuple(refused),
        tuple(intake.duplicates),
    )


_Likeness = tuple[tuple[str, tuple[str, ...]], frozenset[str], frozenset[str]]


def _likeness(text: str) -> _Likeness:
    return normalise(text), words(text), value_keys(text)


def _near_duplicate(new: _Likeness, old: _Likeness) -> bool:
    """Equal once normalised, or no content word and no value that ``old`` lacks."""
    if new[0] == old[0]:
        return True
    return bool(new[1]) and new[1] <= old[1] and new[2] <= old[2]


@dataclass
class _Intake:
    """The new items of one update as `enforce` admits them, one at a time.

    Holds what every item is checked against (the messages, the prior summary's text, the live
    binding items, the binding room left) and what the checks decided so far.
    """

    segment: Segment
    said: tuple[Said, ...]
    """The head (when the request has one) and the folded segment."""
    folded: tuple[Said, ...]
    summarized: Said
    """The prior summary's texts, read as one tool message."""
    rules: FieldSpec | None
    facts: FieldSpec | None
    live_binding: list[_Likeness]
    """Likenesses of the prior binding items and of the binding items admitted so far."""
    room: int | None
    count: Callable[[str], int] | None
    add: dict[str, list[NewItem]] = field(default_factory=dict)
    rejected: list[Refusal] = field(default_factory=list)
    demoted: list[Refusal] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    _shown: Shown | None = None

    @property
    def shown(self) -> Shown:
        """`said` indexed by what each message shows, built when an item first needs it."""
        if self._shown is None:
            self._shown = Shown(self.said)
        return self._shown

    def known(self, value: str, cites: tuple[int, ...]) -> bool:
        """Whether the summary or the segment holds ``value``: the messages cited read first."""
        if self.summarized.shows_value(value):
            return True
        if cites and any(s.shows_value(value) for s in self.said if s.at in cites):
            return True
        return self.shown.shows(value)

    def admit(self, f: FieldSpec, entry: str | NewItem) -> None:
        """Check one proposed item of field ``f`` and file it where it may stand, if anywhere."""
        item = entry if isinstance(entry, NewItem) else NewItem(text=entry)
        text = item.text.strip()
        if not text:
            return
        values = stated_values(text)
        invented = [v for v in values if not self.known(v, _asked(item))]
        if invented:
            self.rejected.append(
                Refusal(
                    id=_short(text),
                    why=f"carries {invented[0]!r}, which neither the segment nor the summary "
                    "holds token-exactly (a paraphrased, truncated or invented value)",
                )
            )
        elif not f.binding:
            self._file(f.name, _cited(item, values, self.shown, self.segment))
        else:
            self._admit_binding(f, item, text, values)

    def _admit_binding(self, f: FieldSpec, item: NewItem, text: str, values: Sequence[str]) -> None:
        """Bind the item, or demote or refuse it: unsupported, a near-duplicate, over budget."""
        rule = self.rules is not None and f is self.rules
        likeness = _likeness(text)
        if any(_near_duplicate(likeness, other) for other in self.live_binding):
            self.duplicates.append(text)  # a restatement of a live binding item, bound or not
            return
        ruling = _bind(item, text, values, self.shown, self.folded, rule=rule)
        if isinstance(ruling, str):
            if ruling.startswith("!") or self.facts is None:
                self.rejected.append(Refusal(id=_short(text), why=ruling.lstrip("!")))
            else:
                self._demote(text, ruling, _cited(item, values, self.shown, self.segment))
            return
        if self.room is not None and self.count is not None:
            cost = self.count(text) + ITEM_OVERHEAD
            if cost > self.room:
                self._demote(text, BUDGET_FULL, ruling)
                return
            self.room -= cost
        self.live_binding.append(likeness)
        self._file(f.name, ruling)

    def _demote(self, text: str, why: str, item: NewItem) -> None:
        """File ``item`` as a fact, or refuse it when the schema has no facts field."""
        if self.facts is None:
            self.rejected.append(Refusal(id=_short(text), why=why))
        else:
            self.demoted.append(Refusal(id=_short(text), why=why))
            self._file(self.facts.name, item)

    def _file(self, name: str, item: NewItem) -> None:
        self.add.setdefault(name, []).append(item)


def _bind(
    item: NewItem,
    text: str,
    values: Sequence[str],
    shown: Shown,
    folded: Sequence[Said],
    *,
    rule: bool,
) -> NewItem | str:
    """The binding item with its citations, or why it cannot bind ("!" first: refuse it)."""
    if not substantive(text):
        return "!states nothing beyond pleasantries, so it cannot bind"
    item_words = words(text)
    cited = [s for s in shown.said if s.at in _asked(item)] or shown.said
    supports = shown.stating(values, item_words, cited)
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


def _cited(item: NewItem, values: Sequence[str], shown: Shown, segment: Segment) -> NewItem:
    """A non-binding item with the messages that state it, if the summarizer did not say."""
    asked = [at for at in _asked(item) if segment.author(at) is not None]
    if asked:
        author = _author_of(segment.author(at) for at in asked)
        return item.model_copy(update={"cites": tuple(asked), "author": author})
    item_words = words(item.text)
    supports = shown.stating(values, item_words, shown.said) if values or item_words else []
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
    said: Sequence[Said],
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
    item: Item, retirement: Retirement, said: Sequence[Said], replacements: Sequence[NewItem]
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
        if s.author != "user" or not refers(item, s):
            continue
        if _reopens(s) or any(s.at in r.cites for r in replacements):
            return s.at
    return (
        "binding item; no message the user wrote in the folded segment reopens or changes it "
        f"(reason given: {retirement.reason.strip() or 'none'!r}), so it stays"
    )


def reopened(item: Item, segment: Segment) -> bool:
    """Whether a user message of ``segment`` refers to ``item`` and reopens or changes it."""
    return any(s.author == "user" and refers(item, s) and _reopens(s) for s in said_in(segment))


def _prior_texts(prior: object, spec: SchemaSpec) -> list[str]:
    texts = [getattr(prior, spec.objective.name)] if spec.objective else []
    texts += [item.text for f in spec.lists for item in getattr(prior, f.name)]
    return texts


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
