"""The append-only log storage that states derived from one another share.

An append costs O(1) plus reading the new message, however long the history; appending to an
older state copies the log once (copy on fork). Per-message token estimates are cached with
running totals, and author classes are read lazily, once per message.
"""

from __future__ import annotations

import bisect
import itertools
from array import array
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from datetime import date
from typing import TypeVar, overload

from progsum.errors import ConfigError, MessageFormatError
from progsum.judge._conversation import Structure
from progsum.judge._dates import carried_days
from progsum.judge._provenance import Author, check_author, classify
from progsum.messages._formats import FORMAT_NAMES, Format, Message, MessageInfo, inspect
from progsum.policy._tokens import TokenCounter
from progsum.recall._excerpt import Recall
from progsum.recall._index import Index
from progsum.recall._terms import document
from progsum.state._shown import Fresh, View
from progsum.summary._header import render_header
from progsum.summary._schema import BaseSummary

__all__ = ["Authors", "Log", "Prefix", "check_thread_id"]

T = TypeVar("T")

READING_STRIDE = 32
"""Messages between two readings of the conversation's kind the log keeps (`Log.readings`)."""
HEADERS = 4
"""Headers a log remembers (`Log.header`): a fold renders the new summary for probes, the
final state and a consolidation."""
RECENT_READINGS = 4
"""The latest readings kept besides (a retry forks the log where the reading before it ended)."""


def _upto(reading: Structure) -> int:
    return reading.upto


class Log:
    """Append-only storage shared by the states derived from one another."""

    __slots__ = (
        "asks",
        "authors",
        "chosen",
        "classified",
        "counted_text",
        "counter",
        "cum",
        "days",
        "evidence",
        "format",
        "format_at",
        "fresh",
        "headers",
        "infos",
        "marked",
        "messages",
        "quoted",
        "ranked",
        "readings",
        "recent",
        "structure",
        "view",
    )

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.infos: list[MessageInfo] = []
        self.authors: list[Author | None] = []
        """Author classes; None until read (`classify` runs lazily, off the per-turn path)."""
        self.classified = 0
        """Every author class below this index is known (`classified_in`)."""
        self.marked: dict[int, Author] = {}
        """Authors the caller or an importer gave that differ from `classify` (persisted)."""
        self.format: Format | None = None
        self.format_at = -1
        self.evidence = ""
        self.counter: TokenCounter | None = None
        self.cum: array[int] = array("q", (0,))
        """Running totals of the per-message estimates (machine integers: 8 bytes a message)."""
        self.days: list[date | None] = []
        """The day in force at each message read so far (`progsum.judge._dates.carried_days`)."""
        self.ranked: Index | None = None
        """Recall's index of the folded messages (`recall_index`), built on first use."""
        self.asks: tuple[object, bytearray] | None = None
        """Recall's reading of which messages ask a question, by log index (0: not read yet,
        1: no, 2: yes), with the judgement context it was read under (`progsum.engine._recall`)."""
        self.quoted: tuple[tuple[Recall, ...], frozenset[int]] | None = None
        """The messages quoted by the last recalls read, with them (`progsum.engine._recall`)."""
        self.chosen: object = None
        """The last recall chosen for a message of this log, with what it read
        (`progsum.engine._recall`): one, so a question is searched once a turn."""
        self.structure = Structure()
        """The furthest reading of the conversation's kind (`structure_at`)."""
        self.readings: list[Structure] = []
        """Earlier readings, one every `READING_STRIDE` messages, ascending: a branch or an
        older state reads on from near its own length."""
        self.recent: list[Structure] = []
        """The last `RECENT_READINGS` readings besides, ascending (a retry forks the log where
        the reading before the attempt ended)."""
        self.headers: list[tuple[BaseSummary, tuple[int, int], int, str | None, str]] = []
        """The last `HEADERS` headers rendered for states of this log, with what they read."""
        self.counted_text: tuple[str, TokenCounter, int] | None = None
        """The last text `count` estimated, with its counter and count."""
        self.view: View | None = None
        """The model view last built over these messages (`progsum.state._shown`)."""
        self.fresh: Fresh | None = None
        """That view without stale thinking, last built (`progsum.state._shown.fresh`)."""

    def fork(self, length: int) -> Log:
        """A copy of the first ``length`` messages, for a state appended to from an older one."""
        copy = Log()
        copy.messages = self.messages[:length]
        copy.infos = self.infos[:length]
        copy.authors = self.authors[:length]
        copy.classified = min(self.classified, length)
        copy.marked = {at: author for at, author in self.marked.items() if at < length}
        if self.format_at < length:
            copy.format, copy.format_at, copy.evidence = self.format, self.format_at, self.evidence
        copy.counter = self.counter
        copy.cum = self.cum[: length + 1]
        copy.days = self.days[:length]
        if self.ranked is not None:  # the messages below the fork are the same: so is their index
            copy.ranked = self.ranked.branch(length)
        if self.asks is not None:
            copy.asks = (self.asks[0], self.asks[1][:length])
        copy.readings = self.readings[: bisect.bisect_right(self.readings, length, key=_upto)]
        copy.recent = [r for r in self.recent if r.upto <= length]
        if self.structure.upto <= length:
            copy.structure = self.structure
        return copy

    def structure_at(self, length: int) -> Structure:
        """The structure of the first ``length`` messages (`progsum.judge._conversation`).

        Read on from the nearest reading at or below ``length``, so each message is read once
        on a chain, and a branch or an older state reads at most `READING_STRIDE` messages
        again (none for a retry of the newest turn: the last few readings are kept).
        """
        latest = self.structure
        if latest.upto == length:
            return latest
        read = latest if latest.upto < length else Structure()
        below = self._reading_below(length)
        if below is not None and below.upto > read.upto:
            read = below
        if latest.upto < length:
            self._remember(latest)
        while read.upto < length:
            stop = min(length, (read.upto // READING_STRIDE + 1) * READING_STRIDE)
            read = read.read(self.messages, self.infos, stop)
            if stop < length:
                self._remember(read)
        if read.upto > latest.upto:
            self.structure = read
        return read

    def _reading_below(self, length: int) -> Structure | None:
        """The furthest kept reading of at most ``length`` messages."""
        at = bisect.bisect_right(self.readings, length, key=_upto)
        found = self.readings[at - 1] if at else None
        for reading in self.recent:
            if reading.upto <= length and (found is None or reading.upto > found.upto):
                found = reading
        return found

    def _remember(self, reading: Structure) -> None:
        """Keep ``reading``: on a `READING_STRIDE`, or among the last `RECENT_READINGS`."""
        if reading.upto % READING_STRIDE:
            self.recent = [*self.recent[1 - RECENT_READINGS :], reading]
        elif reading.upto and (not self.readings or self.readings[-1].upto < reading.upto):
            self.readings.append(reading)

    def header(
        self,
        summary: BaseSummary,
        folded: tuple[int, int],
        compactions: int,
        thread_id: str | None,
    ) -> str:
        """`render_header` of ``summary``: a fold renders one summary for several states.

        Remembered for the last `HEADERS` summaries and arguments rendered on this log (the
        summary compared by identity: summaries are frozen, and each entry holds its own).
        """
        for known, was_folded, was_compactions, was_thread, text in self.headers:
            if known is summary and (was_folded, was_compactions, was_thread) == (
                folded,
                compactions,
                thread_id,
            ):
                return text
        text = render_header(summary, folded=folded, compactions=compactions, thread_id=thread_id)
        self.headers = [
            *self.headers[1 - HEADERS :],
            (summary, folded, compactions, thread_id, text),
        ]
        return text

    def recall_index(self, start: int, stop: int) -> Index:
        """Recall's index of this log, holding at least messages ``[start, stop)``.

        Each message is indexed once, in order, as the cutoff moves; every branch of the log
        (`fork`) shares what was indexed before it (`progsum.recall._index.Index.branch`).
        """
        index = self.ranked
        if index is None:
            index = self.ranked = Index()
        at = max(index.upto, start)
        if at < stop:
            index.extend(at, [document(message) for message in self.messages[at:stop]])
        return index

    def extend(
        self, messages: Iterable[Message], authors: Iterable[Author | None] | None = None
    ) -> None:
        """Append messages, all or none: on a malformed one, roll back and raise.

        ``authors`` gives each message's author class (None: decided by `classify`).
        """
        if not isinstance(messages, Iterable):
            raise ConfigError(
                f"messages={messages!r} is not a list of messages; pass a list such as "
                "[{'role': 'user', 'content': '...'}]"
            )
        if authors is not None and (isinstance(authors, str) or not isinstance(authors, Iterable)):
            raise ConfigError(
                f"authors={authors!r} is not a list of author classes; give one of 'user', "
                "'assistant' or 'tool' (or None) per message, or leave authors out"
            )
        start = len(self.messages)
        fmt, fmt_at, evidence = self.format, self.format_at, self.evidence
        marks = iter(authors) if authors is not None else None
        try:
            for message in messages:
                self.add(message, next(marks, None) if marks is not None else None)
        except BaseException:
            del self.messages[start:], self.infos[start:], self.authors[start:]
            del self.days[start:]
            self.classified = min(self.classified, start)
            for at in [at for at in self.marked if at >= start]:
                del self.marked[at]
            del self.cum[start + 1 :]
            self.format, self.format_at, self.evidence = fmt, fmt_at, evidence
            raise

    def add(self, message: Message, given: Author | None) -> None:
        """Append one message (``given``: its author class, None for `classify`'s).

        Raises:
            MessageFormatError: the message is malformed; nothing was appended.
            ConfigError: ``given`` is not an author class; nothing was appended.
        """
        index = len(self.messages)
        info = inspect(message, index, self.infos[-1] if self.infos else None)
        author = None if given is None else check_author(given, index)
        if info.format is not None:
            self._note_format(info, index)  # raises before it changes anything; the last check
        if author is not None and author != classify(message, info):
            self.marked[index] = author
        self.messages.append(message)
        self.infos.append(info)
        self.authors.append(author)

    def _note_format(self, info: MessageInfo, index: int) -> None:
        if info.format is None:
            return
        if self.format is None:
            self.format, self.format_at, self.evidence = info.format, index, info.evidence
        elif info.format != self.format:
            raise MessageFormatError(
                index,
                f"is {FORMAT_NAMES[info.format]} format ({info.evidence}), but message "
                f"{self.format_at} is {FORMAT_NAMES[self.format]} format ({self.evidence}); one "
                "conversation must use one format, so convert the messages before appending",
            )

    def author(self, index: int) -> Author:
        """The author class of message ``index``, classified on first read."""
        found = self.authors[index]
        if found is None:
            found = self.authors[index] = classify(self.messages[index], self.infos[index])
        return found

    def classified_in(self, start: int, stop: int) -> list[Author]:
        """The author list with every class in ``[start, stop)`` known.

        Each message is classified once; messages before ``start`` (folded long ago) are not read.
        """
        authors = self.authors
        low = self.classified
        for index in range(max(start, low), stop):
            if authors[index] is None:
                authors[index] = classify(self.messages[index], self.infos[index])
        if start <= low:
            self.classified = max(low, stop)
        return authors  # type: ignore[return-value]  # no None in the range, checked above

    def day_before(self, index: int) -> date | None:
        """The day in force before message ``index``: read once per message, in order."""
        days = self.days
        if len(days) < index:
            before = days[-1] if days else None
            days.extend(carried_days(self.messages[len(days) : index], before=before))
        return days[index - 1] if index > 0 else None

    def count(self, counter: TokenCounter, text: str) -> int:
        """``counter.count_text(text)``, remembered for the last text counted (by identity).

        The states a fold makes share one header text (`header`); each counts it once otherwise.
        """
        last = self.counted_text
        if last is not None and last[0] is text and last[1] is counter:
            return last[2]
        tokens = counter.count_text(text)
        self.counted_text = (text, counter, tokens)
        return tokens

    def counted(self, counter: TokenCounter, length: int) -> array[int]:
        """Running totals of per-message estimates, extended to ``length`` messages."""
        cum = self.cum
        if self.counter is counter and len(cum) > length:
            return cum  # the common case: counted already
        if self.counter is not counter and self.counter != counter:
            self.counter, self.cum = counter, array("q", (0,))
            cum = self.cum
        for message in self.messages[len(cum) - 1 : length]:
            cum.append(cum[-1] + counter.count_message(message))
        return cum


class Prefix(Sequence[T]):
    """Read-only view of the first ``length`` items of a shared list, without copying it."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: MutableSequence[T], length: int) -> None:
        self._items, self._length = items, length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            if step < 0:  # a negative stop from indices() means "before 0", not "from the end"
                return [self._items[i] for i in range(start, stop, step)]
            found = self._items[start:stop:step]
            return found if type(found) is list else list(found)
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(self._items, self._length)

    def __repr__(self) -> str:
        return f"<first {self._length} of a shared list>"


class Authors(Sequence[Author]):
    """Read-only view of the first ``length`` author classes of a store, classified on read."""

    __slots__ = ("_length", "_store")

    def __init__(self, store: Log, length: int) -> None:
        self._store, self._length = store, length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Author: ...
    @overload
    def __getitem__(self, index: slice) -> list[Author]: ...
    def __getitem__(self, index: int | slice) -> Author | list[Author]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            if step < 0:  # a negative stop from indices() means "before 0", not "from the end"
                return [self._store.author(i) for i in range(start, stop, step)]
            return self._store.classified_in(start, max(start, stop))[start:stop:step]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._store.author(index)

    def __iter__(self) -> Iterator[Author]:
        return itertools.islice(self._store.classified_in(0, self._length), self._length)

    def __repr__(self) -> str:
        return f"<first {self._length} author classes of a shared log>"


def check_thread_id(thread_id: object) -> None:
    """Refuse a thread id that cannot name a conversation.

    Raises:
        ConfigError: it is not a non-empty string.
    """
    if not isinstance(thread_id, str) or not thread_id.strip():
        raise ConfigError(
            f"thread_id={thread_id!r} must be a non-empty string naming the conversation, "
            "e.g. 'support-4821'"
        )
