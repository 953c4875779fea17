"""The extractive pass: what a segment states that must not be lost, as the judge reads it.

Run on every segment before the summarizer is called. It asks the judge (`progsum.judge._seam`)
about every sentence of the segment's prose and keeps the user's rules (a ``must_not`` rule is a
prohibition, every other modality an obligation), the questions asked, and the exact values the
user stated. Summarizers receive it as must-keep candidates (``request.extraction``); the engine's
guards use it after the call, so a rule can never be lost to paraphrase.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from progsum.judge import _seam as seam
from progsum.judge._dates import day_of, without_stamp
from progsum.judge._provenance import Author, classify, user_prose
from progsum.judge._values import stated_values
from progsum.messages._formats import MessageInfo, Role, field, speaker
from progsum.messages._responses import as_chat

__all__ = ["Extraction", "Statement", "extract", "message_text", "preceding_prose", "prose"]

PRECEDING = 16
"""Messages looked back through for the prose before a segment (tool rounds in between)."""


@dataclass(frozen=True, slots=True)
class Statement:
    """One sentence of the segment, verbatim (inner whitespace collapsed), with where it was."""

    at: int
    """Log index of the message."""
    role: Role
    text: str


@dataclass(frozen=True, slots=True)
class Extraction:
    """What the extractive pass found in a segment."""

    prohibitions: tuple[Statement, ...] = ()
    """User sentences that forbid something: never, do not, must not, avoid, ..."""
    obligations: tuple[Statement, ...] = ()
    """User sentences that require or bound something: must, only, at most, budgets, deadlines."""
    questions: tuple[Statement, ...] = ()
    """Questions asked in the segment, by the user or the assistant, requests phrased as one
    ("Can you find a trail near York?") included."""
    values: tuple[tuple[int, str], ...] = ()
    """Exact values the user stated, as ``(log index, value)``, first occurrence only."""

    @property
    def user_values(self) -> tuple[str, ...]:
        """The values alone, in order."""
        return tuple(value for _, value in self.values)


def message_text(message: object) -> str:
    """The prose of a message: string content and text blocks (not tool data or thinking)."""
    content = field(as_chat(message), "content")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [
            str(field(block, "text") or "") for block in content if field(block, "type") == "text"
        ]
        return "\n".join(text for text in texts if text)
    return ""


def prose(message: object, info: MessageInfo, author: Author) -> str:
    """What a person or the assistant said in ``message``, as the judge reads it; else ``""``.

    A person's prose in a user-role message (`user_prose`), the assistant's text, without the
    date stamp that opens it; tool output and system messages say nothing.
    """
    if author == "tool" or info.role not in ("user", "assistant"):
        return ""
    return without_stamp(user_prose(message) if author == "user" else message_text(message))


def preceding_prose(
    messages: Sequence[object],
    infos: Sequence[MessageInfo],
    authors: Sequence[Author],
    end: int,
) -> str:
    """The prose of the last message before ``end`` that has some: the judge's context there.

    Looks back at most `PRECEDING` messages, so a long tool loop costs nothing more.
    """
    for at in range(end - 1, max(end - PRECEDING, 0) - 1, -1):
        text = prose(messages[at], infos[at], authors[at])
        if text.strip():
            return text
    return ""


def extract(
    messages: Sequence[object],
    infos: Sequence[MessageInfo],
    *,
    start: int,
    authors: Sequence[Author] | None = None,
    days: Sequence[date | None] | None = None,
    previous: str = "",
) -> Extraction:
    """Run the extractive pass over ``messages`` (log indices from ``start``).

    Only user-authored messages (``authors``, else `progsum.judge._provenance.classify`) yield
    rules and values, and only their prose (`user_prose`): machine text in a user-role message
    never becomes a rule. ``days`` gives each message's day (else its own, `day_of`); a date
    stamp opening a message is its day, never part of a sentence (`without_stamp`).
    ``previous`` is the prose said before the first message (`preceding_prose`), which the
    judge reads as that message's context, as it reads each earlier message for the next.
    """
    prohibitions: list[Statement] = []
    obligations: list[Statement] = []
    questions: list[Statement] = []
    values: list[tuple[int, str]] = []
    seen_values: set[str] = set()
    seen_sentences: set[str] = set()
    judge = seam.current()
    for offset, (message, info) in enumerate(zip(messages, infos, strict=True)):
        author = authors[offset] if authors is not None else classify(message, info)
        text = prose(message, info, author)  # tool output and system messages: none
        if not text:
            continue
        at = start + offset
        day = days[offset] if days is not None else day_of(message)
        context = seam.context(author, previous=previous, speaker=speaker(message), day=day)
        for sentence in judge.sentences(text):
            key = sentence.casefold()
            if key in seen_sentences:
                continue
            verdict = judge.judge(sentence, context)
            if verdict.label == "question" or (verdict.label == "todo" and sentence.endswith("?")):
                questions.append(Statement(at, info.role, sentence))  # asked, or asked for
            elif verdict.label == "rule" and author == "user":
                kept = prohibitions if verdict.modality == "must_not" else obligations
                kept.append(Statement(at, info.role, sentence))
            else:
                continue
            seen_sentences.add(key)
        if author == "user":
            for value in stated_values(text):
                if value not in seen_values:
                    seen_values.add(value)
                    values.append((at, value))
        if text.strip():
            previous = text
    return Extraction(tuple(prohibitions), tuple(obligations), tuple(questions), tuple(values))
