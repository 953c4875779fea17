"""Whether a message of the segment supports an item: its values, and its content words.

Pure. `Said` is one message as the contract reads it (the user's prose, the assistant's text, or
everything a tool message shows, with the speaker and day a note may name); `states` asks whether
it holds all of an item's exact values token-exactly and at least `SUPPORT` of its content words
(`words`: case-folded, lightly stemmed, without function words and pleasantries); `refers` whether
it shares a value or half the content words. `progsum.contract._enforce` decides with these who
may bind and unbind.

`Shown` indexes the messages of one fold by what they show, once, so that "which messages hold
this value" is a search of one text rather than a question asked of every message.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Sequence
from datetime import date

from progsum._memo import memoized
from progsum.judge._extract import message_text
from progsum.judge._lexicon import stop_words
from progsum.judge._notes import stamp
from progsum.judge._provenance import Author, user_prose
from progsum.judge._values import carried, stated_values, value_key, value_keys
from progsum.messages._formats import Message
from progsum.messages._transcript import source_text
from progsum.summary._request import Segment
from progsum.summary._schema import Item

__all__ = [
    "MIN_LETTERS",
    "SUPPORT",
    "Said",
    "Shown",
    "refers",
    "said_in",
    "states",
    "substantive",
    "words",
]

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
        """The speaker and day a note may name (`progsum.judge._notes.stamp`)."""
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


@memoized("progsum.contract._support.anchor", 128 * 1024)
def _anchor(value: str) -> str:
    """A part of ``value`` that every text carrying it holds verbatim, and holds no whitespace.

    Keys are tokens of the text, or a number of the text with a unit word
    (`progsum.judge._values`). A value without whitespace whose key is itself is carried only
    as a token, so the anchor is the whole value ("2027-05-08", "HX-01911"). Otherwise (a
    quantity: "5-day", "3 nights") it is the value up to a space or hyphen, its number, which
    holds neither. A text without the anchor cannot carry the value.
    """
    if not _SPACE.search(value) and value_key(value) == value:
        return value
    return _ANCHOR_END.split(value, maxsplit=1)[0]


_ANCHOR_END = re.compile(r"[\s-]")
_SPACE = re.compile(r"\s")


class Shown:
    """The messages of one fold, indexed by what each shows (its text, tool data and stamp).

    The texts are joined once, each message's after the one before; a value's anchor (see
    `_anchor`, never holding whitespace, so never spanning two messages) is then found in the
    joined text in C, and its offsets name the messages that show it. A message without the
    anchor neither shows nor states the value (`Said.shows_value`, `Said.states_value`), so
    only the messages found are asked.
    """

    def __init__(self, said: Sequence[Said]) -> None:
        self.said = tuple(said)
        starts: list[int] = []
        pieces: list[str] = []
        offset = 0
        for s in self.said:
            starts.append(offset)
            piece = f"{s.shown}\n{s.stamp}\n"
            pieces.append(piece)
            offset += len(piece)
        self._text = "".join(pieces)
        self._starts = starts
        self._found: dict[str, tuple[Said, ...]] = {}

    def showing(self, value: str) -> tuple[Said, ...]:
        """The messages whose text or stamp holds the anchor of ``value``, in order."""
        anchor = _anchor(value)
        found = self._found.get(anchor)
        if found is None:
            found = self._found[anchor] = tuple(self.said[i] for i in self._holding(anchor))
        return found

    def _holding(self, anchor: str) -> list[int]:
        text, starts = self._text, self._starts
        held: list[int] = []
        at = text.find(anchor)
        while 0 <= at < len(text):
            i = bisect.bisect_right(starts, at) - 1
            held.append(i)
            if i + 1 == len(starts):
                break
            at = text.find(anchor, starts[i + 1])
        return held

    def shows(self, value: str) -> bool:
        """Whether any message shows ``value`` token-exactly (`Said.shows_value` of each)."""
        return any(s.shows_value(value) for s in self.showing(value))

    def stating(
        self, item_keys: Sequence[str], item_words: frozenset[str], among: Sequence[Said]
    ) -> list[Said]:
        """The messages of ``among`` (all of them messages of the index) that `states` the item.

        With a value, only the messages that show its anchor are asked; without one, all.
        """
        if item_keys:
            held = {id(s) for s in self.showing(item_keys[0])}
            among = [s for s in among if id(s) in held]
        return [s for s in among if states(item_keys, item_words, s)]


_REMEMBERED_CHARS = 2_000
"""Texts up to this long (summary items, short messages) have their words remembered: every
compaction reads every live item again. Longer ones (tool output) are read once anyway."""


def words(text: str) -> frozenset[str]:
    """Content words of ``text``: case-folded, stemmed lightly, without fillers and pleasantries."""
    return _short_words(text) if len(text) <= _REMEMBERED_CHARS else _words(text)


@memoized("progsum.contract._support.short_words", 384 * 1024)
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
