"""What recall puts in a request: excerpts of folded messages, and the block that quotes them.

A `Recall` is a value on the conversation state: the message it answers (the newest message a
person wrote), the cutoff it was chosen at, and its `Excerpt` spans. The text is not copied: an
excerpt names a character span of its message's `progsum.recall._terms.document`, read back from
the log whenever the block is rendered (`block_text`), so a saved state stays small.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from progsum._templates import environment
from progsum.errors import ConfigError
from progsum.judge._dates import day_of
from progsum.messages._formats import Message, field
from progsum.messages._transcript import escape
from progsum.recall._terms import document, fold

__all__ = ["ELLIPSIS", "Excerpt", "Recall", "block_text", "excerpt_text", "passage"]

ELLIPSIS = "…"
"""Marks an excerpt that starts after its message's start or stops before its end."""
_WORD = re.compile(r"\w+")
_SNAP = 40
"""Characters an excerpt's edge may move to reach a line break or a space."""


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Characters ``[start, stop)`` of the text of log message ``index``."""

    index: int
    start: int
    stop: int


@dataclass(frozen=True, slots=True)
class Recall:
    """The excerpts recalled for log message ``at`` while the cutoff was ``cutoff``.

    Without excerpts it records that nothing was found for that message at that cutoff, so it is
    not asked again until a fold moves the cutoff (`progsum.engine._recall.due`).
    """

    at: int
    cutoff: int
    excerpts: tuple[Excerpt, ...] = ()

    def to_data(self) -> dict[str, Any]:
        """JSON data (`from_data` reads it back)."""
        spans = [[e.index, e.start, e.stop] for e in self.excerpts]
        return {"at": self.at, "cutoff": self.cutoff, "excerpts": spans}

    @classmethod
    def from_data(cls, data: object, length: int) -> Recall | None:
        """The recall of a stored state of ``length`` messages (None when it has none).

        Raises:
            ConfigError: the data is damaged.
        """
        if data is None:
            return None
        try:
            assert isinstance(data, dict)  # noqa: S101 - caught below with the rest
            at, cutoff = int(data["at"]), int(data["cutoff"])
            spans = tuple(Excerpt(int(i), int(a), int(b)) for i, a, b in data["excerpts"])
        except (AssertionError, KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"the state's recall does not validate: {exc!r}") from exc
        if not 0 <= at < length or any(not 0 <= e.index < length or e.index == at for e in spans):
            raise ConfigError(
                f"the state's recall (message {at}, excerpts of messages "
                f"{[e.index for e in spans]}) does not fit its {length}-message log"
            )
        return cls(at, cutoff, spans)


def passage(text: str, query: Sequence[str], limit: int) -> tuple[int, int]:
    """The span of at most ``limit`` characters of ``text`` holding most query terms.

    The whole text when it fits; else the window that starts at a query term and holds the
    most occurrences (the earliest such), its edges moved back to a line break or a space.
    """
    if len(text) <= limit:
        return 0, len(text)
    wanted = set(query)
    starts = [m.start() for m in _WORD.finditer(text) if fold(m.group()) in wanted]
    if not starts:
        return 0, _snap_end(text, limit)
    best, best_hits = starts[0], 0
    for position, start in enumerate(starts):
        hits = sum(1 for at in starts[position:] if at < start + limit)
        if hits > best_hits:
            best, best_hits = start, hits
    start = max(0, best - limit // 4)
    start = _snap_start(text, start, best)
    return start, _snap_end(text, min(len(text), start + limit))


def _snap_start(text: str, start: int, first: int) -> int:
    if start == 0:
        return 0
    for mark in ("\n", " "):
        found = text.rfind(mark, max(0, start - _SNAP), first)
        if found >= 0:
            return found + 1
    return start


def _snap_end(text: str, stop: int) -> int:
    if stop >= len(text):
        return len(text)
    for mark in ("\n", " "):
        found = text.rfind(mark, max(0, stop - _SNAP), stop)
        if found > 0:
            return found
    return stop


def excerpt_text(excerpt: Excerpt, message: Message) -> str:
    """The excerpt's text as the block shows it: its span, marked where it was cut."""
    text = document(message)
    shown = text[excerpt.start : excerpt.stop].strip()
    lead = ELLIPSIS if excerpt.start > 0 else ""
    trail = ELLIPSIS if excerpt.stop < len(text) else ""
    return f"{lead}{shown}{trail}"


def block_text(
    recall: Recall | None,
    log: Sequence[Message],
    day: Callable[[int], date | None] | None = None,
    *,
    authors: Sequence[str] | None = None,
) -> str:
    """The recall block for a request: quoted history that binds nothing; empty without excerpts.

    ``day`` gives the day of log message ``i`` (the state's: its own, else the one its
    conversation carried to it, `progsum.judge._dates.carried_days`); without it, a message's
    own day. Each excerpt's speaker is who wrote it, ``authors[i]`` (the engine's author class:
    user, assistant, tool), else its role; never a free-text field such as ``name``, which
    anyone can set to "user" or "system". Every excerpt is escaped
    (`progsum.messages._transcript.escape`), so no text in it can close the block or open another
    excerpt.
    """
    if recall is None or not recall.excerpts:
        return ""
    rows = []
    for excerpt in recall.excerpts:
        message = log[excerpt.index]
        day_said = day(excerpt.index) if day is not None else day_of(message)
        rows.append(
            {
                "number": excerpt.index + 1,
                "speaker": authors[excerpt.index]
                if authors is not None
                else str(field(message, "role") or "unknown"),
                "date": day_said.isoformat() if day_said is not None else "",
                "text": escape(excerpt_text(excerpt, message)),
            }
        )
    return environment().get_template("recall.j2").render(excerpts=rows).strip()
