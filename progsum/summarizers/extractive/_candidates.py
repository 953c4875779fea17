"""Candidates: every sentence of the segment that fits a field of the schema, with its weight."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from types import MappingProxyType
from typing import Any, Literal

from progsum.judge import _seam as seam
from progsum.judge._extract import Statement, message_text, prose
from progsum.judge._notes import joined, note_parts, terse
from progsum.judge._notes import label as note_label
from progsum.judge._salience import salience
from progsum.messages._formats import Role, speaker
from progsum.summarizers.extractive._kinds import kinds, substantive
from progsum.summarizers.extractive._routing import Kind, field_for
from progsum.summary._request import Segment, SummaryRequest

__all__ = ["Candidate", "candidates"]


@dataclass(frozen=True, slots=True)
class Candidate:
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
    then the note's body alone (`progsum.judge._notes.note_parts`)."""
    kept: bool = False
    """Kept whatever the share: a question of the user's nobody answered in the segment, or a
    request of the user's (open until it is done or dropped)."""
    speaker: str = ""
    """A note's speaker: what it says restates only what its speaker said before."""


def _answered(segment: Segment, index: int, role: Role) -> bool:
    """Whether the other speaker answers message ``index`` later in the segment (`answers`)."""
    other = _other(role)
    return any(
        info.role == other and answers(message_text(message), role)
        for info, message in zip(
            segment.infos[index + 1 :], segment.messages[index + 1 :], strict=True
        )
    )


def answers(text: str, asker: Role) -> bool:
    """Whether ``text``, said by the speaker other than ``asker``, answers what ``asker`` said.

    An answer has a sentence the current judge reads as more than chatter ("Good question!"
    answers nothing), read as the other speaker's in the conversation kind in force.
    """
    judge = seam.current()
    context = seam.context(_other(asker))
    return any(judge.judge(s, context).label != "chatter" for s in judge.sentences(text))


def _other(role: Role) -> Literal["user", "assistant"]:
    """The other speaker of a message of ``role``: the assistant for the user, else the user."""
    return "assistant" if role == "user" else "user"


_DEFAULT_NAMES: Mapping[Role, str] = MappingProxyType({"user": "User", "assistant": "Assistant"})


def _names(segment: Segment) -> dict[Role, str]:
    """The name each speaker carries in the segment (the last ``name`` seen), else None."""
    names: dict[Role, str] = {}
    for info, message in zip(segment.infos, segment.messages, strict=True):
        name = speaker(message)
        if name is not None and info.role in ("user", "assistant"):
            names[info.role] = name
    return names


def candidates(
    request: SummaryRequest[Any],
    table: Mapping[Kind, str],
    notes: frozenset[str],
    known: frozenset[str],
) -> Iterator[Candidate]:
    """Every sentence of the segment that fits a field of the schema, in log order.

    Sentences for a field in ``notes`` are written as self-contained notes (`progsum.judge._notes`);
    ``known`` are the prior summary's content words (for novelty, `salience`).
    """
    extraction = request.extraction
    prohibitions = _keys(extraction.prohibitions)
    marked = prohibitions | _keys(extraction.obligations)
    segment = request.segment
    names = _names(segment)
    order = 0
    asked: tuple[Role, str] | None = None  # the question that ended the last prose message
    judge = seam.current()
    chat = seam.conversation() == "chat"
    previous = segment.previous
    for index, (info, message) in enumerate(zip(segment.infos, segment.messages, strict=True)):
        role, author = info.role, segment.authors[index]
        text = prose(message, info, author)  # machine text in the user role is no prose
        if not text:
            continue
        at = segment.start + index
        answered: bool | None = None
        question = asked[1] if asked is not None and asked[0] != role else None
        asked = None
        who = names.get(role) or _DEFAULT_NAMES[role]
        other = names.get("assistant" if role == "user" else "user")
        day = segment.days[index]
        context = seam.context(author, previous=previous, speaker=speaker(message), day=day)
        previous = text
        for position, sentence in enumerate(judge.sentences(text)):
            order += 1
            verdict = judge.judge(sentence, context)
            if verdict.label == "question" or _asks_user(verdict.label, role, sentence):
                asked = (role, sentence)
                if "questions" not in table or not substantive(sentence):
                    continue
                if answered is None:
                    answered = _answered(segment, index, role)
                if not answered:
                    yield Candidate(
                        table["questions"], at, order, 0, sentence, kept=author == "user"
                    )
                continue
            asked = None
            key = (at, sentence)
            if key not in marked and (not substantive(sentence) or not verdict.item):
                continue
            kind = next(
                (
                    k
                    for k in kinds(sentence, verdict, role, marked=key in marked)
                    if field_for(table, k)
                ),
                None,
            )
            field = None if kind is None else field_for(table, kind)
            if kind is not None and field is not None:
                weight = _weight(kind, sentence, role, prohibition=key in prohibitions, known=known)
                label, item, by = _wording(sentence, field in notes, chat, who, day, other)
                asked_for = kind == "questions" and author == "user"  # open until done or dropped
                yield Candidate(
                    field, at, order, weight, item, sentence, label, kept=asked_for, speaker=by
                )
            elif (
                position == 0
                and question is not None
                and verdict.item
                and field_for(table, "answers")
            ):
                answer = f"{question} {sentence}"
                weight = salience(answer, user=role == "user", answer=True, known=known)
                yield Candidate(table.get("answers") or table["facts"], None, order, weight, answer)


def _wording(  # noqa: PLR0917 - a sentence and what a note of it names
    sentence: str, note: bool, chat: bool, who: str, day: date | None, other: str | None
) -> tuple[str, str, str]:
    """An item's label, text and speaker: a chat's terse note, an agent's whole sentence.

    In a chat a note drops fillers and shares its label (who, day) with the speaker's other
    notes of the update; in an agent's conversation it is the speaker's whole sentence with the
    label in front, an item of its own; an item of another field is the sentence as it is.
    """
    if note and chat:
        label, body = note_parts(terse(sentence), who=who, day=day, other=other)
        return label, body, who
    if note:
        return "", joined(note_label(who, day), sentence), ""
    return "", sentence, ""


def _asks_user(label: str, role: Role, sentence: str) -> bool:
    """Whether the assistant asks the user something, put as a question ("Should I also ...?").

    It waits for the user's answer, so it is read as a question (open until answered), not as
    narration.
    """
    return label == "todo" and role == "assistant" and sentence.rstrip().endswith("?")


def _weight(
    kind: Kind, sentence: str, role: Role, *, prohibition: bool, known: frozenset[str]
) -> int:
    if kind == "constraints":
        return int(prohibition)
    return salience(sentence, user=role == "user", known=known)


def _keys(statements: Sequence[Statement]) -> frozenset[tuple[int, str]]:
    return frozenset((s.at, s.text) for s in statements)
