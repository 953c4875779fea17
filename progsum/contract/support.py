"""Whether a message of the segment supports an item: its values, and its content words.

Pure. `Said` is one message as the contract reads it (the user's prose, the assistant's text, or
everything a tool message shows, with the speaker and day a note may name); `states` asks whether
it holds all of an item's exact values token-exactly and at least `SUPPORT` of its content words
(`words`: case-folded, lightly stemmed, without function words and pleasantries); `refers` whether
it shares a value or half the content words. `progsum.contract.enforce` decides with these who
may bind and unbind.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from datetime import date

from progsum.judge.extract import message_text
from progsum.judge.lexicon import stop_words
from progsum.judge.notes import stamp
from progsum.judge.provenance import Author, user_prose
from progsum.judge.values import carried, stated_values, value_keys
from progsum.messages.formats import Message
from progsum.messages.transcript import source_text
from progsum.summary.request import Segment
from progsum.summary.schema import Item

__all__ = ["MIN_LETTERS", "SUPPORT", "Said", "refers", "said_in", "states", "substantive", "words"]

SUPPORT = 0.5
"""Share of an item's content words a message must hold (with all its values) to state it."""

_WORD = re.compile(r"[^\W\d_][\w'-]*")
MIN_LETTERS = 3


class Said:
    """One message of the segment as the contract reads it.

    Each reading (the prose, the values, the words) is made the first time an item needs it:
    most messages are only ever asked whether they hold a value, and a substring test answers
    that for most of them without reading their values at all.
    """

    def __init__(self, at: int, author: Author, message: Message, day: date | None = None) -> None:
        self.at, self.author, self.message, self.day = at, author, message, day

    @functools.cached_property
    def shown(self) -> str:
        """Everything the message shows the summarizer, tool data included."""
        return source_text((self.message,))

    @functools.cached_property
    def stamp(self) -> str:
        """The speaker and day a note may name (`progsum.judge.notes.stamp`)."""
        return stamp(self.message, self.day)

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

    Keys are tokens of the text, or a number of the text with a unit word
    (`progsum.judge.values`), and a number holds no space or hyphen: so a text without the anchor
    cannot carry the value.
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
        if len(word) < MIN_LETTERS or word in stop_words():
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


def said_in(segment: Segment) -> tuple[Said, ...]:
    """Each message of ``segment`` as the contract reads it, with its author class."""
    return tuple(
        Said(at, author, message, day)
        for (at, message), author, day in zip(segment, segment.authors, segment.days, strict=True)
    )


def states(item_keys: Sequence[str], item_words: frozenset[str], said: Said) -> bool:
    """Whether ``said`` holds every value and at least `SUPPORT` of the content words."""
    if not all(said.states_value(value) for value in item_keys):
        return False
    if not item_words:
        return bool(item_keys)
    return len(item_words & said.words) >= max(1, math.ceil(SUPPORT * len(item_words)))


def refers(item: Item, said: Said) -> bool:
    """Whether ``said`` refers to ``item``: a shared value, or half its content words."""
    values = stated_values(item.text)
    if any(said.states_value(value) for value in values):
        return True
    item_words = words(item.text)
    return bool(item_words) and len(item_words & said.words) >= max(
        1, math.ceil(SUPPORT * len(item_words))
    )
