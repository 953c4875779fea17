"""What a conversation state shows: the read-only views `ConversationState` inherits.

Its log, the effective context, the summary and its header, the events, and the token figures
the engine measures; `ConversationState` adds the changes and the persistence.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Generic

from progsum.judge._judgement import Kind
from progsum.judge._provenance import Author
from progsum.judge._values import StatedValue as Entry
from progsum.messages._formats import Format, Message, MessageInfo
from progsum.policy._tokens import Anchor, TokenCounter
from progsum.policy._usage import AgentUsage, Counts, share, total
from progsum.recall._excerpt import Recall, block_text
from progsum.state._cleared import Cleared
from progsum.state._edits import Edits
from progsum.state._events import CompactionEvent
from progsum.state._log import Authors, Log, Prefix
from progsum.state._shown import Fresh, View, fresh, shown
from progsum.summary._schema import SummaryT as S
from progsum.summary._update import SummarizerUsage

__all__ = ["StateViews", "Totals", "summed_usage"]

Totals = tuple[int, int, int, int, int]
"""`AgentUsage`'s fields in order, as plain ints."""


class StateViews(Generic[S]):
    """The read-only views of a `ConversationState` (whose slots hold the fields below)."""

    __slots__ = ("_quotes",)  # the one slot read and written by a view here (`quotes`)

    _store: Log
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
    _agent_usage: AgentUsage | Totals
    """The agent's usage totals: a record, or its fields as ints (`agent_usage` builds it)."""
    _recalls: tuple[Recall, ...]
    """The recalls chosen since the last fold, by message (`progsum.recall`)."""
    _quotes: tuple[tuple[int, str], ...] | None
    """Their rendered blocks, by message; None until first read."""
    _recall_tokens: tuple[TokenCounter, int] | None
    _edits: Edits
    """Where progsum changed what earlier requests sent (`progsum.state._edits`)."""
    _header_archived: bool | None
    """Whether the header names the archive; None until it is rendered after a fold."""

    # -- views ----------------------------------------------------------------------------------

    @property
    def log(self) -> Sequence[Message]:
        """Every message ever appended, in order: the caller's own objects."""
        return Prefix(self._store.messages, self._length)

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
    def kind(self) -> Kind:
        """``chat`` or ``agent``, read off the structure (`progsum.judge._conversation`).

        Read once per message: the reading is kept on the log the chain shares.
        """
        return self._store.structure_at(self._length).kind

    @property
    def called(self) -> bool:
        """Whether a message calls a tool or answers a call (`progsum.judge._conversation`)."""
        return self._store.structure_at(self._length).tools

    @property
    def view(self) -> View:
        """`effective` as the model sees it (`progsum.state._shown`).

        Cleared tool data shows its placeholders and repeated answers to one call are left out.
        Built once per change of the state and cached on the log the chain shares: a state
        rendered again costs nothing, one more message costs that message.
        """
        store = self._store
        cached = store.view
        view = shown(
            store.messages,
            store.infos,
            (self._cutoff, self._head_end, self._pinned),
            self._in_view,
            self._length,
            cached=cached,
            quotes=self.quotes,
        )
        if cached is None or view.key != cached.key or view.upto >= cached.upto:
            store.view = view
        return view

    @property
    def fresh_view(self) -> Fresh:
        """`view` without the thinking produced under a prefix progsum has since changed.

        What a request to a model with preserved thinking may send back: the blocks of messages
        logged before the last fold, or between a reduction's message and the reduction, are
        left out (`progsum.state._edits`). Cached on the log like `view`.
        """
        store = self._store
        cached = store.fresh
        made = fresh(self.view, store.infos, self._edits, cached=cached)
        if made is not cached and (cached is None or made.upto >= cached.upto):
            store.fresh = made
        return made

    @property
    def recall(self) -> Recall | None:
        """The newest of `recalls`: for the newest message a person wrote, once it has one."""
        return self._recalls[-1] if self._recalls else None

    @property
    def recalls(self) -> tuple[Recall, ...]:
        """The recalls chosen since the last fold, by message (`progsum.recall`).

        Each stays with the message it answers until a fold: once a message has been sent with
        its block, every later request sends it the same way (append-only rendering).
        """
        return self._recalls

    @property
    def recall_block(self) -> str:
        """The newest recall's rendered block; empty when it has no excerpts."""
        recall = self.recall
        if recall is None:
            return ""
        quotes = self.quotes  # in log order: the newest recall's block, if any, is the last
        return quotes[-1][1] if quotes and quotes[-1][0] == recall.at else ""

    @property
    def quotes(self) -> tuple[tuple[int, str], ...]:
        """``(log index, block)`` of every recall block in view, in log order."""
        quotes = self._quotes
        if quotes is None:
            log, day, authors = self._store.messages, self._day_of, self.authors
            quotes = self._quotes = tuple(
                (r.at, text)
                for r in self._recalls
                if (text := block_text(r, log, day, authors=authors))
            )
        return quotes

    def _day_of(self, index: int) -> date | None:
        """The day of log message ``index``: its own, else the one carried to it."""
        return self._store.day_before(index + 1)

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

        See `progsum.engine._reduce`; the log keeps every cleared block whole.
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
    def folded_in_archive(self) -> bool:
        """Whether every folded message is in the archive, so the header may say where.

        True when the state has folded something and each ``compacted`` event's segment was
        written (``in_archive``, or named by a later ``archived`` event); False without an
        archive, or while a segment waits for one.
        """
        written = {n for e in self._events if e.outcome == "archived" for n in e.archives}
        compacted = [e for e in self._events if e.outcome == "compacted"]
        return bool(compacted) and all(e.in_archive or e.number in written for e in compacted)

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
        return Prefix(self._store.infos, self._length)

    @property
    def ledger(self) -> tuple[Entry, ...]:
        """The exact values the user stated in folded messages, with their sentences.

        The engine keeps each one carried, token-exactly, by a live item or a kept message
        (`progsum.contract._ledger`).
        """
        return self._ledger

    @property
    def authors(self) -> Sequence[Author]:
        """Who wrote each logged message: ``user``, ``assistant`` or ``tool``.

        See `progsum.judge._provenance`; only ``user`` messages can create or lift binding items.
        """
        return Authors(self._store, self._length)

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
        totals = self._agent_usage
        return AgentUsage(*totals) if isinstance(totals, tuple) else totals

    @property
    def summarization_share(self) -> float | None:
        """Summarizer tokens over all reported tokens (agent and summarizer); None if none."""
        return share(total(self.summarizer_usage), self.agent_usage.tokens)

    def __len__(self) -> int:
        """Number of logged messages."""
        return self._length

    def __repr__(self) -> str:
        return (
            f"<ConversationState v{self._version}: {self._length} messages, cutoff "
            f"{self._cutoff}, {len(self._events)} compaction events>"
        )

    # -- token accounting ----------------------------------------------------------------------

    def day_before(self, index: int) -> date | None:
        """The day in force before log message ``index`` (`progsum.judge._dates`), or None."""
        return self._store.day_before(min(index, self._length))

    def days_in(self, start: int, stop: int) -> tuple[date | None, ...]:
        """Each day of ``log[start:stop]`` (`progsum.judge._dates.carried_days`), each read once.

        Equal to ``carried_days(log[start:stop], before=day_before(start))``: the log's days are
        carried from its first message, each message's own day read the first time it is asked.
        """
        stop = min(stop, self._length)
        self._store.day_before(stop)
        return tuple(self._store.days[start:stop])

    def running_totals(self, counter: TokenCounter) -> Sequence[int]:
        """Running totals of per-message estimates: ``totals[j] - totals[i]`` is ``log[i:j]``."""
        return Prefix(self._store.counted(counter, self._length), self._length + 1)

    @property
    def effective_length(self) -> int:
        """Number of messages in `effective`."""
        if self._cutoff == 0:
            return self._length
        pinned = self._pinned[1] - self._pinned[0] if self._pinned else 0
        return self._head_end + pinned + self._length - self._cutoff


def summed_usage(totals: AgentUsage | Totals, counts: Counts) -> Totals:
    """``totals`` with one more report of ``counts``, as plain ints (`StateViews.agent_usage`).

    A turn that reports usage adds to the totals without building an `AgentUsage` (a frozen
    record costs a quiet turn a tenth of its time); the view builds one when it is read.
    """
    given, written, created, read, reports = (
        totals if isinstance(totals, tuple) else _totals(totals)
    )
    return (
        given + counts[0],
        written + counts[1],
        created + counts[2],
        read + counts[3],
        reports + 1,
    )


def _totals(usage: AgentUsage) -> Totals:
    return (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_creation_input_tokens,
        usage.cache_read_input_tokens,
        usage.reports,
    )
