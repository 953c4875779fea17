"""The extractive pass: what a segment states that must not be lost, found by rule, without a model.

Run on every segment before the summarizer is called. It finds the user's prohibitions ("never",
"do not", "must not", ...), obligations and limits ("must", "only", "at most", budgets, deadlines),
the questions asked, and the exact values the user stated. Summarizers receive it as must-keep
candidates (``request.extraction``); the engine's guards use it after the call, so a negative
constraint can never be lost to paraphrase.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from progsum.messages import MessageInfo, Role, field
from progsum.values import exact_values

__all__ = ["Extraction", "Statement", "extract", "message_text", "sentences"]

MAX_SENTENCE = 400
"""Longer "sentences" are pasted content (logs, documents), not statements; they are skipped."""

_PROHIBITION = re.compile(
    r"\b(never|do not|don't|dont|does not|doesn't|must not|mustn't|may not|cannot|can't|"
    r"should not|shouldn't|shall not|will not|won't|not allowed|no longer allowed|forbidden|"
    r"prohibited|avoid|under no circumstances|stay away from|do not want|don't want|"
    r"refuse|not to)\b",
    re.IGNORECASE,
)
_OBLIGATION = re.compile(
    r"\b(must|have to|has to|need to|needs to|required|requires|requirement|make sure|ensure|"
    r"always|only|at most|at least|no more than|not more than|no later than|up to|maximum|"
    r"minimum|budget|deadline|due|limit|prefer|insist|before|after|by (?:monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|noon|midnight|the end|eod|\d))\b",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


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
    """Questions asked in the segment, by the user or the assistant."""
    values: tuple[tuple[int, str], ...] = ()
    """Exact values the user stated, as ``(log index, value)``, first occurrence only."""

    @property
    def user_values(self) -> tuple[str, ...]:
        """The values alone, in order."""
        return tuple(value for _, value in self.values)


def message_text(message: object) -> str:
    """The prose of a message: string content and text blocks (not tool data or thinking)."""
    content = field(message, "content")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [
            str(field(block, "text") or "") for block in content if field(block, "type") == "text"
        ]
        return "\n".join(text for text in texts if text)
    return ""


def sentences(text: str) -> Iterator[str]:
    """Split prose into sentences (on end punctuation and line breaks), whitespace collapsed."""
    for piece in _SPLIT.split(text):
        sentence = " ".join(piece.split()).lstrip("-*•> ").strip()
        if sentence and len(sentence) <= MAX_SENTENCE:
            yield sentence


def extract(messages: Sequence[object], infos: Sequence[MessageInfo], *, start: int) -> Extraction:
    """Run the extractive pass over ``messages`` (log indices from ``start``)."""
    prohibitions: list[Statement] = []
    obligations: list[Statement] = []
    questions: list[Statement] = []
    values: list[tuple[int, str]] = []
    seen_values: set[str] = set()
    seen_sentences: set[str] = set()
    for offset, (message, info) in enumerate(zip(messages, infos, strict=True)):
        if info.role not in ("user", "assistant"):
            continue
        at = start + offset
        for sentence in sentences(message_text(message)):
            key = sentence.casefold()
            if sentence.endswith("?"):
                if key not in seen_sentences:
                    questions.append(Statement(at, info.role, sentence))
                    seen_sentences.add(key)
                continue
            if info.role != "user" or key in seen_sentences:
                continue
            if _PROHIBITION.search(sentence):
                prohibitions.append(Statement(at, info.role, sentence))
                seen_sentences.add(key)
            elif _OBLIGATION.search(sentence):
                obligations.append(Statement(at, info.role, sentence))
                seen_sentences.add(key)
        if info.role == "user":
            for value in exact_values(message_text(message)):
                if value not in seen_values:
                    seen_values.add(value)
                    values.append((at, value))
    return Extraction(tuple(prohibitions), tuple(obligations), tuple(questions), tuple(values))
