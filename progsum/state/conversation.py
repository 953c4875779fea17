"""The conversation state: an append-only log, the cutoff, the summary and what compaction did.

A `ConversationState` is a value: `append`, `record_usage` and compaction return a new state and
leave the old one valid. States derived from one another share the append-only log storage, so an
append costs O(1) (plus reading the new message) however long the history; appending to an older
state copies the log once (copy on fork). Per-message token estimates are cached with running
totals, so measuring the context costs O(new messages) per turn.

Three views of one conversation:

* ``log``: every message ever appended, in order, never edited;
* ``effective``: the kept head (leading system messages and the first task message) plus
  ``log[cutoff:]``, with ``summary`` standing for what lies between;
* the model view: `progsum.render_anthropic` / `progsum.render_openai`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError

from progsum.errors import ConfigError, MessageFormatError
from progsum.judge.provenance import Author, check_author, classify
from progsum.judge.values import StatedValue as Entry
from progsum.messages.formats import FORMAT_NAMES, Format, Message, MessageInfo, inspect, to_record
from progsum.policy.tokens import (
    Anchor,
    HeuristicCounter,
    Method,
    TokenCounter,
    anchor_usage,
)
from progsum.policy.usage import AgentUsage, CostAlert, share, total
from progsum.state.cleared import Cleared
from progsum.summary.header import header_text
from progsum.summary.merge import MergeReport
from progsum.summary.schema import Summary, spec_of
from progsum.summary.schema import SummaryT as S
from progsum.summary.update import SummarizerUsage

__all__ = ["CompactionEvent", "ConversationState", "StallKind"]

T = TypeVar("T")

STATE_FORMAT = 1
"""Version of the JSON layout written by `ConversationState.to_dict`."""

StallKind = Literal["nothing_to_fold", "no_gain", "not_smaller"]
"""Why a due compaction did not fold anything (see `CompactionEvent.stall`)."""


class CompactionEvent(BaseModel):
    """One compaction attempt: what was folded, the counts around it, and how it went."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int
    """1-based position in ``state.events``."""
    outcome: Literal[
        "compacted", "reduced", "consolidated", "stalled", "repaired", "failed", "archived"
    ]
    """``compacted``: a segment was folded into the summary; ``reduced``: old tool data was
    cleared from the model view (see ``cleared``), no model call; ``consolidated``: the summary
    outgrew its header budget and was condensed (see ``merge``); ``stalled``: nothing could be
    folded; ``repaired``: a degraded segment was summarized again (see ``repairs``); ``failed``:
    the summarizer or the archive failed, the engine backs off (see ``failure``, ``retry_at``);
    ``archived``: segments folded while the archive was down were written (see ``archives``)."""
    at: datetime
    """When it happened (UTC)."""
    reason: str
    """Why it fired, or why it stalled, in one sentence."""
    tokens_before: int
    """Counted context tokens before."""
    tokens_after: int
    """Counted context tokens after (equal to before when stalled)."""
    method: Method
    """How tokens were counted: anchored on real usage, or estimated."""
    folded: tuple[int, int] | None = None
    """Log range ``[start, end)`` folded into the summary."""
    forced: bool = False
    """Triggered by ``compact(..., force=True)`` rather than by the policy."""
    stall: StallKind | None = None
    """Why nothing was folded, when stalled."""
    retry_at_tokens: int | None = None
    """After a ``not_smaller`` stall: the estimated segment size before the summarizer is asked
    again (twice the larger of the refused segment and the summary growth it produced)."""
    degraded: bool = False
    """A fallback summarizer produced the update; the segment may deserve a repair later."""
    repairs: int | None = None
    """For a ``repaired`` event: the number of the degraded event whose segment it re-did."""
    degraded_reason: str | None = None
    usage: SummarizerUsage | None = None
    """Tokens and latency of the summarizer call, separate from the agent's own usage."""
    merge: MergeReport | None = None
    """What the merge added, dropped, retired and refused."""
    extracted: tuple[str, ...] = ()
    """Ids of constraints the guard added verbatim: user prohibitions the summary left out."""
    cleared: tuple[int, ...] = ()
    """For a ``reduced`` event: log indices of the messages whose tool data was cleared."""
    missing_values: tuple[str, ...] = ()
    """Exact values the user stated that the context no longer carries and the ledger could not
    restore (the schema has no field for them); they survive only in the log. See
    `progsum.contract.ledger`: usually empty, as the user's sentence is restored instead."""
    pinned: tuple[int, int] | None = None
    """For a ``compacted`` event that cut inside a tool cycle with thinking: the log range of the
    turn's opening round kept in view in front of the tail (see `ConversationState.pinned`)."""
    failure: Literal["summarizer", "archive"] | None = None
    """For a ``failed`` event: what failed (the summarizer call or the archive write)."""
    retry_at: int | None = None
    """For a ``failed`` event: the log length at which the failed call is tried again (the wait
    doubles with each consecutive failure, capped)."""
    archive_pending: bool = False
    """For a ``compacted`` event: its segment could not be archived yet; the state's log keeps it
    until a later ``archived`` event writes it."""
    archives: tuple[int, ...] = ()
    """For an ``archived`` event: numbers of the compacted events whose segments it wrote."""
    over_window: str | None = None
    """Set when the context after this event is still above the model's input window: one line
    saying which messages, how big, and what would help."""
    cost_alert: CostAlert | None = None
    """Set on the event whose summarizer call lifted the summarization share to or above the
    compactor's ``cost_alert`` (`progsum.policy.usage`); once per crossing."""


class _Store:
    """Append-only storage shared by the states derived from one another."""

    __slots__ = (
        "authors",
        "classified",
        "counter",
        "cum",
        "evidence",
        "format",
        "format_at",
        "infos",
        "marked",
        "messages",
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
        self.cum: list[int] = [0]

    def fork(self, length: int) -> _Store:
        copy = _Store()
        copy.messages = self.messages[:length]
        copy.infos = self.infos[:length]
        copy.authors = self.authors[:length]
        copy.classified = min(self.classified, length)
        copy.marked = {at: author for at, author in self.marked.items() if at < length}
        if self.format_at < length:
            copy.format, copy.format_at, copy.evidence = self.format, self.format_at, self.evidence
        copy.counter = self.counter
        copy.cum = self.cum[: length + 1]
        return copy

    def extend(
        self, messages: Iterable[Message], authors: Iterable[Author | None] | None = None
    ) -> None:
        """Append messages, all or none: on a malformed one, roll back and raise.

        ``authors`` gives each message's author class (None: decided by `classify`).
        """
        start = len(self.messages)
        fmt, fmt_at, evidence = self.format, self.format_at, self.evidence
        marks = iter(authors) if authors is not None else None
        try:
            for message in messages:
                self.add(message, next(marks, None) if marks is not None else None)
        except BaseException:
            del self.messages[start:], self.infos[start:], self.authors[start:]
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

    def counted(self, counter: TokenCounter, length: int) -> list[int]:
        """Running totals of per-message estimates, extended to ``length`` messages."""
        if self.counter is not counter and self.counter != counter:
            self.counter, self.cum = counter, [0]
        cum = self.cum
        for message in self.messages[len(cum) - 1 : length]:
            cum.append(cum[-1] + counter.count_message(message))
        return cum


class _Prefix(Sequence[T]):
    """Read-only view of the first ``length`` items of a shared list, without copying it."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[T], length: int) -> None:
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
            return self._items[start:stop:step]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(self._items, self._length)

    def __repr__(self) -> str:
        return f"<first {self._length} of a shared list>"


class _Authors(Sequence[Author]):
    """Read-only view of the first ``length`` author classes of a store, classified on read."""

    __slots__ = ("_length", "_store")

    def __init__(self, store: _Store, length: int) -> None:
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


class ConversationState(Generic[S]):
    """An agent conversation: its full log, the summary, and the compaction history.

    Example:
        ``state = ConversationState([{"role": "user", "content": "Plan my trip."}])``
        then ``state = state.append(reply, usage=response.usage)`` each turn.

    States are safe to share between threads for reading; appending to the same state from two
    threads at once is not supported (give each worker its own chain of states).

    Raises:
        MessageFormatError: a message is malformed or in a different format from the others.
    """

    __slots__ = (
        "_agent_usage",
        "_anchor",
        "_attempted_at",
        "_cleared",
        "_compactions",
        "_cutoff",
        "_events",
        "_head_end",
        "_header",
        "_header_tokens",
        "_in_view",
        "_in_view_saved",
        "_ledger",
        "_length",
        "_pinned",
        "_store",
        "_summary",
        "_thread_id",
        "_version",
    )

    _store: _Store
    _length: int
    _cutoff: int
    _head_end: int
    _summary: S | None
    _thread_id: str | None
    _events: tuple[CompactionEvent, ...]
    _version: int
    _anchor: Anchor | None
    _attempted_at: int | None
    _cleared: tuple[Cleared, ...]
    _compactions: int
    """How many of ``_events`` are ``compacted`` (the header says it)."""
    _pinned: tuple[int, int] | None
    _header: str | None
    _header_tokens: tuple[TokenCounter, int] | None
    _in_view: tuple[Cleared, ...]
    """The cleared blocks of messages in `effective` (kept up to date by `record`)."""
    _in_view_saved: int
    """Estimated tokens those blocks saved."""
    _ledger: tuple[Entry, ...]
    _agent_usage: AgentUsage

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        thread_id: str | None = None,
        authors: Iterable[Author | None] | None = None,
    ) -> None:
        if thread_id is not None:
            check_thread_id(thread_id)
        store = _Store()
        store.extend(messages, authors)
        self._store, self._length = store, len(store.messages)
        self._cutoff = self._head_end = 0
        self._summary = None
        self._thread_id = thread_id
        self._events = ()
        self._compactions = 0
        self._version = 0
        self._anchor = None
        self._attempted_at = None
        self._cleared = ()
        self._pinned = None
        self._header = self._header_tokens = None
        self._in_view, self._in_view_saved = (), 0
        self._ledger = ()
        self._agent_usage = _NO_USAGE

    # -- views ----------------------------------------------------------------------------------

    @property
    def log(self) -> Sequence[Message]:
        """Every message ever appended, in order: the caller's own objects."""
        return _Prefix(self._store.messages, self._length)

    @property
    def effective(self) -> list[Message]:
        """The kept head, the pinned opening round (if any) and ``log[cutoff:]``.

        These are the messages a model still sees verbatim.
        """
        messages = self._store.messages
        if self._cutoff == 0:
            return messages[: self._length]
        pinned = messages[self._pinned[0] : self._pinned[1]] if self._pinned else []
        return messages[: self._head_end] + pinned + messages[self._cutoff : self._length]

    @property
    def kept(self) -> list[int]:
        """Log indices of `effective`, in order."""
        if self._cutoff == 0:
            return list(range(self._length))
        pinned = list(range(*self._pinned)) if self._pinned else []
        return [*range(self._head_end), *pinned, *range(self._cutoff, self._length)]

    @property
    def pinned(self) -> tuple[int, int] | None:
        """Log range ``[start, end)`` before the cutoff that stays in view, or None.

        It is the opening round of the tool cycle the tail continues, kept so that the turn still
        opens with its thinking (docs/thinking-rules.md, rule T3). Already folded into the summary.
        """
        return self._pinned

    def is_kept(self, index: int) -> bool:
        """Whether log message ``index`` is in `effective`."""
        if self._cutoff == 0 or index >= self._cutoff or index < self._head_end:
            return 0 <= index < self._length
        return self._pinned is not None and self._pinned[0] <= index < self._pinned[1]

    @property
    def cleared(self) -> tuple[Cleared, ...]:
        """Tool data the cheap reduction replaced with placeholders in the model view.

        See `progsum.engine.reduce`; the log keeps every cleared block whole.
        """
        return self._cleared

    @property
    def cleared_in_view(self) -> tuple[Cleared, ...]:
        """The `cleared` blocks of messages still in `effective`, in the same order.

        O(1): kept up to date as compactions move the cutoff, so a turn, a render or a compaction
        reads only the blocks in view, however many were cleared and folded before.
        """
        return self._in_view

    @property
    def cutoff(self) -> int:
        """Log index of the first message not folded into the summary; only moves forward."""
        return self._cutoff

    @property
    def head_end(self) -> int:
        """``log[:head_end]`` stays in front of the context (set by the first compaction)."""
        return self._head_end

    @property
    def thread_id(self) -> str | None:
        """The conversation's id in an archive or store, if it has one."""
        return self._thread_id

    @property
    def summary(self) -> S | None:
        """The current summary, or None before the first compaction."""
        return self._summary

    @property
    def events(self) -> tuple[CompactionEvent, ...]:
        """Every compaction attempt, oldest first."""
        return self._events

    @property
    def version(self) -> int:
        """Counts changes: every append, usage report and compaction makes a new version."""
        return self._version

    @property
    def anchor(self) -> Anchor | None:
        """The last real usage report, if the caller has given one."""
        return self._anchor

    @property
    def attempted_at(self) -> int | None:
        """Log length at the last compaction attempt (at most one attempt per turn)."""
        return self._attempted_at

    @property
    def format(self) -> Format | None:
        """``anthropic`` or ``openai`` once a message has shown it; None while either fits."""
        store = self._store
        return store.format if store.format_at < self._length else None

    @property
    def format_evidence(self) -> str:
        """Which message decided the format, and why."""
        store = self._store
        if store.format_at < 0 or store.format_at >= self._length:
            return "no message has shown a format yet"
        return f"message {store.format_at}: {store.evidence}"

    @property
    def infos(self) -> Sequence[MessageInfo]:
        """What progsum read from each logged message (role, tool calls, thinking)."""
        return _Prefix(self._store.infos, self._length)

    @property
    def ledger(self) -> tuple[Entry, ...]:
        """The exact values the user stated in folded messages, with their sentences.

        The engine keeps each one carried, token-exactly, by a live item or a kept message
        (`progsum.contract.ledger`).
        """
        return self._ledger

    @property
    def authors(self) -> Sequence[Author]:
        """Who wrote each logged message: ``user``, ``assistant`` or ``tool``.

        See `progsum.judge.provenance`; only ``user`` messages can create or lift binding items.
        """
        return _Authors(self._store, self._length)

    @property
    def header(self) -> str:
        """The rendered summary header; empty before the first compaction."""
        if self._header is None:
            if self._summary is None:
                self._header = ""
            else:
                self._header = header_text(
                    self._summary,
                    (self._head_end, self._cutoff),
                    self._compactions,
                    self._thread_id,
                )
        return self._header

    @property
    def pending_repairs(self) -> tuple[CompactionEvent, ...]:
        """Compactions folded by a fallback summarizer and not repaired yet (oldest first)."""
        repaired = {e.repairs for e in self._events if e.outcome == "repaired"}
        return tuple(
            e
            for e in self._events
            if e.outcome == "compacted" and e.degraded and e.number not in repaired
        )

    @property
    def summarizer_usage(self) -> SummarizerUsage:
        """The summarizer's usage summed over all compactions (zero when none called a model)."""
        total = SummarizerUsage(calls=0)
        for event in self._events:
            if event.usage is not None:
                total += event.usage
        return total

    @property
    def agent_usage(self) -> AgentUsage:
        """The agent's own usage reports summed (``append(..., usage=)``, `record_usage`)."""
        return self._agent_usage

    @property
    def summarization_share(self) -> float | None:
        """Summarizer tokens over all reported tokens (agent and summarizer); None if none."""
        return share(total(self.summarizer_usage), self._agent_usage.tokens)

    def __len__(self) -> int:
        """Number of logged messages."""
        return self._length

    def __repr__(self) -> str:
        return (
            f"<ConversationState v{self._version}: {self._length} messages, cutoff "
            f"{self._cutoff}, {len(self._events)} compaction events>"
        )

    # -- token accounting ----------------------------------------------------------------------

    def estimate(self, counter: TokenCounter) -> int:
        """Estimated tokens of the effective context with its header. O(new messages) per call."""
        cum = self._store.counted(counter, self._length)
        tokens = cum[self._length]
        if self._cutoff:
            tokens -= cum[self._cutoff] - cum[self._head_end]
            if self._pinned:
                tokens += cum[self._pinned[1]] - cum[self._pinned[0]]
        tokens -= self._in_view_saved
        return tokens + self.header_tokens(counter)

    def header_tokens(self, counter: TokenCounter) -> int:
        """Estimated tokens of the rendered header (cached per counter)."""
        cached = self._header_tokens
        if cached is None or (cached[0] is not counter and cached[0] != counter):
            header = self.header
            cached = (counter, counter.count_text(header) + 4 if header else 0)
            self._header_tokens = cached
        return cached[1]

    def running_totals(self, counter: TokenCounter) -> Sequence[int]:
        """Running totals of per-message estimates: ``totals[j] - totals[i]`` is ``log[i:j]``."""
        return _Prefix(self._store.counted(counter, self._length), self._length + 1)

    @property
    def effective_length(self) -> int:
        """Number of messages in `effective`."""
        if self._cutoff == 0:
            return self._length
        pinned = self._pinned[1] - self._pinned[0] if self._pinned else 0
        return self._head_end + pinned + self._length - self._cutoff

    # -- changes --------------------------------------------------------------------------------

    def append(
        self, message: Message, *, usage: object = None, author: Author | None = None
    ) -> ConversationState[S]:
        """A new state with ``message`` appended, and the provider's usage if given.

        Pass ``usage=response.usage`` when appending a model's reply: the reported tokens anchor
        the count (see `record_usage`). Pass ``author="tool"`` for machine text the agent sends
        in the user role (command output, observations), so it can never bind; by default
        `progsum.judge.provenance.classify` decides.

        Raises:
            MessageFormatError: the message is malformed; this state is unchanged.
            ConfigError: ``author`` is not an author class.
        """
        store = self._store
        if len(store.messages) != self._length:
            store = store.fork(self._length)
        store.add(message, author)
        state = self._replace(_store=store, _length=self._length + 1)
        if usage is not None:  # as record_usage, without a second copy: nobody holds it yet
            report = AgentUsage.of(usage)
            state._anchor = state._anchored(report.tokens, None)  # noqa: SLF001 - the state just made
            state._agent_usage += report  # noqa: SLF001 - the state just made
            state._version += 1  # noqa: SLF001 - counted as record_usage counts it
        return state

    def extend(
        self, messages: Iterable[Message], *, authors: Iterable[Author | None] | None = None
    ) -> ConversationState[S]:
        """A new state with ``messages`` appended, all or none.

        Args:
            messages: The messages, in order.
            authors: Their author classes, in the same order (None for one: `classify` decides).

        Raises:
            MessageFormatError: a message is malformed; this state is unchanged.
            ConfigError: an author is not an author class; this state is unchanged.
        """
        store = self._store
        if len(store.messages) != self._length:
            store = store.fork(self._length)
        store.extend(messages, authors)
        return self._replace(_store=store, _length=len(store.messages))

    def record_usage(
        self, usage: object, *, counter: TokenCounter | None = None, billed: bool = True
    ) -> ConversationState[S]:
        """A new state anchored on the provider's reported usage for this context.

        Call it after appending the model's reply, with ``response.usage`` (Anthropic: input,
        cache creation, cache read and output tokens; OpenAI: prompt and completion tokens) or an
        int. From then on the count is "last real usage + estimate of what changed since".

        Args:
            usage: The provider's usage object or dict, or a token count.
            counter: The counter the compactor uses (default: the last one that measured this
                conversation, else `HeuristicCounter`).
            billed: Add the report to `agent_usage` (False for a count the provider gave while
                refusing the request, such as a prompt-too-long error).
        """
        report = AgentUsage.of(usage)
        anchor = self._anchored(report.tokens, counter)
        if not billed:
            return self._replace(_anchor=anchor)
        return self._replace(_anchor=anchor, _agent_usage=self._agent_usage + report)

    def _anchored(self, tokens: int, counter: TokenCounter | None) -> Anchor:
        """The anchor after a report of ``tokens`` (`usage_tokens`: the same as the report's)."""
        counter = counter or self._store.counter or _DEFAULT_COUNTER
        return anchor_usage(self._anchor, tokens, self.estimate(counter))

    def record(
        self,
        event: CompactionEvent | None,
        *,
        summary: S | None = None,
        cutoff: int | None = None,
        head_end: int | None = None,
        cleared: tuple[Cleared, ...] = (),
        ledger: tuple[Entry, ...] | None = None,
        pinned: tuple[int, int] | Literal[False] | None = False,
    ) -> ConversationState[S]:
        """A new state recording a compaction attempt at this log length (engine use).

        Args:
            event: The event to append, or None to note the attempt only (a repeated stall).
            summary: The new summary, when one was merged.
            cutoff: The new cutoff, when messages were folded.
            head_end: The kept head, fixed by the first compaction.
            cleared: Blocks the cheap reduction cleared (added to those cleared before).
            ledger: The exact-value ledger after this step, when it changed.
            pinned: The new pinned opening round, or None to release it (False: unchanged).

        Raises:
            ConfigError: the cutoff would move backwards or past the log.
        """
        changes: dict[str, Any] = {"_attempted_at": self._length}
        if event is not None:
            changes["_events"] = (*self._events, event)
            if event.outcome == "compacted":  # the header says how many: render it anew
                changes.update(
                    _compactions=self._compactions + 1, _header=None, _header_tokens=None
                )
        if cutoff is not None:
            head = self._head_end if head_end is None else head_end
            if not self._cutoff <= cutoff <= self._length or not 0 <= head <= cutoff:
                raise ConfigError(
                    f"cutoff={cutoff} (head_end={head}) must lie between the current cutoff "
                    f"{self._cutoff} and the log length {self._length}; cutoff only moves forward"
                )
            changes.update(_cutoff=cutoff, _head_end=head, _header=None, _header_tokens=None)
        if pinned is not False:
            limit = self._cutoff if cutoff is None else cutoff
            head = changes.get("_head_end", self._head_end)
            if pinned is not None and not head <= pinned[0] < pinned[1] <= limit:
                raise ConfigError(
                    f"pinned={pinned} must lie between the kept head ({head}) and the cutoff "
                    f"({limit})"
                )
            changes["_pinned"] = pinned
        if summary is not None:
            changes.update(_summary=summary, _header=None, _header_tokens=None)
        moved = "_cutoff" in changes or "_pinned" in changes
        if cleared or moved:
            probe = self._replace(**changes)
            if any(not probe.is_kept(c.at) for c in cleared):
                raise ConfigError(
                    f"cleared blocks {[c.at for c in cleared]} must lie in the messages still in "
                    f"view (the kept head, the pinned round, or after the cutoff {self._cutoff})"
                )
            in_view = self._in_view
            if moved:
                in_view = tuple(c for c in in_view if probe.is_kept(c.at))
                span = changes.get("_pinned", self._pinned)  # a round folded before, pinned now
                if span is not None and span != self._pinned:
                    back = [c for c in self._cleared if span[0] <= c.at < span[1]]
                    in_view += tuple(c for c in back if c not in in_view)
            in_view += cleared
            changes.update(_in_view=in_view, _in_view_saved=sum(c.saved for c in in_view))
            if cleared:
                changes["_cleared"] = (*self._cleared, *cleared)
        if ledger is not None:
            changes["_ledger"] = ledger
        return self._replace(**changes)

    def annotated(self, event: CompactionEvent) -> ConversationState[S]:
        """This state with its event of the same number replaced by ``event`` (engine use).

        Raises:
            ConfigError: no event has that number, or ``event`` changes its outcome.
        """
        index = event.number - 1
        if not 0 <= index < len(self._events) or self._events[index].outcome != event.outcome:
            raise ConfigError(
                f"event {event.number} ({event.outcome}) does not annotate an event of this "
                f"state, which has {len(self._events)}; pass a copy of one of state.events"
            )
        events = (*self._events[:index], event, *self._events[index + 1 :])
        return self._replace(_events=events)

    def _replace(self, **changes: Any) -> ConversationState[S]:  # noqa: ANN401 - slot values
        new: ConversationState[S] = object.__new__(type(self))
        # every slot, one line each: a loop over the slots costs a quiet turn twice as much
        new._agent_usage = self._agent_usage
        new._anchor = self._anchor
        new._attempted_at = self._attempted_at
        new._cleared = self._cleared
        new._compactions = self._compactions
        new._cutoff = self._cutoff
        new._events = self._events
        new._head_end = self._head_end
        new._header = self._header
        new._header_tokens = self._header_tokens
        new._in_view = self._in_view
        new._in_view_saved = self._in_view_saved
        new._ledger = self._ledger
        new._length = self._length
        new._pinned = self._pinned
        new._store = self._store
        new._summary = self._summary
        new._thread_id = self._thread_id
        for name, value in changes.items():
            setattr(new, name, value)
        new._version = self._version + 1
        return new

    # -- persistence ----------------------------------------------------------------------------

    def to_dict(
        self, *, log: bool = True, events: bool = True, cleared: bool = True
    ) -> dict[str, Any]:
        """A JSON-compatible dict of the whole state (log, summary, events, anchor).

        Args:
            log: Include the log; a store that keeps messages in rows of its own passes False
                and puts them back under ``"log"`` before `from_dict`.
            events: Include the events (False: left out, for a store that keeps them as rows).
            cleared: Include the cleared marks (False: left out, likewise).
        """
        summary = self._summary
        data = {
            "progsum_state": STATE_FORMAT,
            "schema": type(summary).__name__ if summary is not None else None,
            "version": self._version,
            "thread_id": self._thread_id,
            "log": [to_record(m, n) for n, m in enumerate(self.log)] if log else None,
            "cutoff": self._cutoff,
            "head_end": self._head_end,
            "summary": summary.model_dump(mode="json") if summary is not None else None,
            "events": [e.model_dump(mode="json") for e in self._events] if events else None,
            "anchor": None
            if self._anchor is None
            else {
                "tokens": self._anchor.tokens,
                "estimate": self._anchor.estimate,
                "ratio": self._anchor.ratio,
                "observations": self._anchor.observations,
            },
            "attempted_at": self._attempted_at,
            "cleared": [list(c) for c in self._cleared] if cleared else None,
            "ledger": [[e.value, e.at, e.sentence, e.rule] for e in self._ledger],
            "authors": {
                str(at): author for at, author in self._store.marked.items() if at < self._length
            },
            "pinned": None if self._pinned is None else list(self._pinned),
            "agent_usage": self._agent_usage.to_dict(),
        }
        for name, wanted in (("log", log), ("events", events), ("cleared", cleared)):
            if not wanted:
                del data[name]
        return data

    def to_json(self, *, indent: int | None = None) -> str:
        """The state as JSON text (`to_dict`); `from_json` reads it back."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, schema: type[S] = Summary) -> ConversationState[S]:  # type: ignore[assignment]  # mypy cannot default a TypeVar-typed parameter
        """Rebuild a state written by `to_dict`; ``schema`` is the summary's class.

        Raises:
            ConfigError: the data is not a progsum state, or was written with another schema.
            MessageFormatError: a logged message is malformed.
        """
        if not isinstance(data, dict) or data.get("progsum_state") != STATE_FORMAT:
            raise ConfigError(
                "not a progsum state (expected a dict with 'progsum_state': "
                f"{STATE_FORMAT}); pass what ConversationState.to_dict() returned"
            )
        spec_of(schema)
        written = data.get("schema")
        if written is not None and written != schema.__name__:
            raise ConfigError(
                f"the state was summarized with schema {written!r}; pass schema={written} to "
                "read it"
            )
        log = data.get("log") or []
        marked = data.get("authors") or {}
        if not isinstance(marked, dict):
            raise ConfigError("the state's authors must map log indices to author classes")
        authors = [marked.get(str(at)) for at in range(len(log))] if marked else None
        state: ConversationState[S] = cls(log, thread_id=data.get("thread_id"), authors=authors)
        try:
            summary = (
                None if data.get("summary") is None else schema.model_validate(data["summary"])
            )
            events = tuple(CompactionEvent.model_validate(e) for e in data.get("events") or [])
        except ValidationError as exc:
            raise ConfigError(f"the state's summary or events do not validate: {exc}") from exc
        anchor = data.get("anchor")
        cutoff, head_end = int(data.get("cutoff", 0)), int(data.get("head_end", 0))
        if not 0 <= head_end <= cutoff <= len(state) or (cutoff and summary is None):
            raise ConfigError(
                f"the state's cutoff={cutoff} and head_end={head_end} do not fit its "
                f"{len(state)}-message log; the data is damaged"
            )
        state._cutoff, state._head_end, state._summary, state._events = (
            cutoff,
            head_end,
            summary,
            events,
        )
        state._compactions = sum(1 for e in events if e.outcome == "compacted")
        state._anchor = None if anchor is None else Anchor(**anchor)
        state._attempted_at = data.get("attempted_at")
        try:
            state._cleared = tuple(Cleared(*c) for c in data.get("cleared") or [])
        except TypeError as exc:
            raise ConfigError(f"the state's cleared blocks do not validate: {exc}") from exc
        try:
            state._ledger = tuple(Entry(*e) for e in data.get("ledger") or [])
        except TypeError as exc:
            raise ConfigError(f"the state's exact-value ledger does not validate: {exc}") from exc
        pinned = data.get("pinned")
        if pinned is not None and not (
            isinstance(pinned, list)
            and len(pinned) == 2  # noqa: PLR2004 - a [start, end) pair
            and head_end <= int(pinned[0]) < int(pinned[1]) <= cutoff
        ):
            raise ConfigError(
                f"the state's pinned={pinned!r} does not lie between its head_end={head_end} and "
                f"cutoff={cutoff}; the data is damaged"
            )
        state._pinned = None if pinned is None else (int(pinned[0]), int(pinned[1]))
        try:  # states saved before the usage totals existed load with none
            state._agent_usage = AgentUsage.from_dict(data.get("agent_usage") or {})
        except ConfigError as exc:
            raise ConfigError(f"the state's {exc}; the data is damaged") from exc
        state._in_view = tuple(c for c in state._cleared if state.is_kept(c.at))
        state._in_view_saved = sum(c.saved for c in state._in_view)
        state._version = int(data.get("version", 0))
        return state

    @classmethod
    def from_json(cls, text: str, *, schema: type[S] = Summary) -> ConversationState[S]:  # type: ignore[assignment]  # see from_dict
        """Rebuild a state from `to_json` output."""
        return cls.from_dict(json.loads(text), schema=schema)


_DEFAULT_COUNTER = HeuristicCounter()
_NO_USAGE = AgentUsage()


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
