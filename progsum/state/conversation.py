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

import json
import reprlib
from collections.abc import Iterable
from datetime import date
from typing import Any, Literal, cast

from progsum.errors import ConfigError
from progsum.judge.provenance import Author
from progsum.judge.values import StatedValue as Entry
from progsum.messages.formats import Message, to_record
from progsum.policy.tokens import (
    Anchor,
    HeuristicCounter,
    TokenCounter,
    anchor_usage,
)
from progsum.policy.usage import AgentUsage
from progsum.recall.excerpt import Recall, block_text
from progsum.state.cleared import Cleared, still_in_view
from progsum.state.events import CompactionEvent
from progsum.state.log import Log, check_thread_id
from progsum.state.persist import STATE_FORMAT, anchor_dict, entry_data, parse_fields, parse_log
from progsum.state.views import StateViews
from progsum.summary.header import header_text
from progsum.summary.schema import Summary
from progsum.summary.schema import SummaryT as S

__all__ = ["ConversationState", "require_state"]


class ConversationState(StateViews[S]):
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
        "_recall",
        "_recall_text",
        "_recall_tokens",
        "_store",
        "_summary",
        "_thread_id",
        "_version",
    )

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        thread_id: str | None = None,
        authors: Iterable[Author | None] | None = None,
    ) -> None:
        if thread_id is not None:
            check_thread_id(thread_id)
        store = Log()
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
        self._recall = self._recall_text = self._recall_tokens = None

    # -- changes --------------------------------------------------------------------------------

    def estimate(self, counter: TokenCounter) -> int:
        """Estimated tokens of the effective context with its header. O(new messages) per call."""
        cum = self._store.counted(counter, self._length)
        tokens = cum[self._length]
        if self._cutoff:
            tokens -= cum[self._cutoff] - cum[self._head_end]
            if self._pinned:
                tokens += cum[self._pinned[1]] - cum[self._pinned[0]]
        tokens -= self._in_view_saved
        if self._recall is not None:
            tokens += self.recall_tokens(counter)
        return tokens + self.header_tokens(counter)

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
                    self._thread_id if self.folded_in_archive else None,
                )
        return self._header

    def header_tokens(self, counter: TokenCounter) -> int:
        """Estimated tokens of the rendered header (cached per counter)."""
        cached = self._header_tokens
        if cached is None or (cached[0] is not counter and cached[0] != counter):
            cached = self._header_tokens = _estimated(counter, self.header)
        return cached[1]

    @property
    def recall(self) -> Recall | None:
        """The excerpts recalled for the newest message a person wrote (`progsum.recall`)."""
        return self._recall

    @property
    def recall_block(self) -> str:
        """The rendered recall block; empty when there is none or its message left the view."""
        text = self._recall_text
        if text is None:
            recall = self._recall
            shown = recall is not None and self.is_kept(recall.at)
            text = self._recall_text = (
                block_text(recall, self._store.messages, self._day_of) if shown else ""
            )
        return text

    def _day_of(self, index: int) -> date | None:
        """The day of log message ``index``: its own, else the one carried to it."""
        return self._store.day_before(index + 1)

    def recall_tokens(self, counter: TokenCounter) -> int:
        """Estimated tokens of the recall block (cached per counter)."""
        cached = self._recall_tokens
        if cached is None or (cached[0] is not counter and cached[0] != counter):
            cached = self._recall_tokens = _estimated(counter, self.recall_block)
        return cached[1]

    def recalled(self, recall: Recall | None) -> ConversationState[S]:
        """A new state with ``recall`` as its recall (engine use; None: no recall).

        Raises:
            ConfigError: the message it answers or an excerpt's message is not in this state's
                log, or an excerpt quotes the message it answers.
        """
        if recall is not None:
            Recall.from_data(recall.to_data(), self._length)
        return self._replace(**{**_NO_RECALL, "_recall": recall})

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
            elif event.archives:  # segments reached the archive: the header may now say where
                changes.update(_header=None, _header_tokens=None)
        if cutoff is not None:
            head = self._head_end if head_end is None else head_end
            if not self._cutoff <= cutoff <= self._length or not 0 <= head <= cutoff:
                raise ConfigError(
                    f"cutoff={cutoff} (head_end={head}) must lie between the current cutoff "
                    f"{self._cutoff} and the log length {self._length}; cutoff only moves forward"
                )
            changes.update(_cutoff=cutoff, _head_end=head, _header=None, _header_tokens=None)
            # a fold drops the recall: it is chosen anew (progsum.engine.recall)
            changes.update(_NO_RECALL)
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
        if cleared or "_cutoff" in changes or "_pinned" in changes:
            probe = self._replace(**changes)
            if any(not probe.is_kept(c.at) for c in cleared):
                raise ConfigError(
                    f"cleared blocks {[c.at for c in cleared]} must lie in the messages still in "
                    f"view (the kept head, the pinned round, or after the cutoff {self._cutoff})"
                )
            if "_cutoff" in changes or "_pinned" in changes:
                span = changes.get("_pinned", self._pinned)  # a round folded before, pinned now
                in_view = still_in_view(
                    self._in_view, self._cleared, cleared, probe.is_kept, span, self._pinned
                )
            else:
                in_view = self._in_view + cleared
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
        if event.in_archive != self._events[index].in_archive:  # the header's archive line
            return self._replace(_events=events, _header=None, _header_tokens=None)
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
        new._recall = self._recall
        new._recall_text = self._recall_text
        new._recall_tokens = self._recall_tokens
        new._store = self._store
        new._summary = self._summary
        new._thread_id = self._thread_id
        for name, value in changes.items():
            setattr(new, name, value)
        new._version = self._version + 1
        return new

    # -- persistence ----------------------------------------------------------------------------

    def to_dict(
        self,
        *,
        log: bool = True,
        events: bool = True,
        cleared: bool = True,
        retired: bool = True,
        ledger: bool = True,
    ) -> dict[str, Any]:
        """A JSON-compatible dict of the whole state (log, summary, events, anchor).

        Args:
            log: Include the log; a store that keeps messages in rows of its own passes False
                and puts them back under ``"log"`` before `from_dict`.
            events: Include the events (False: left out, for a store that keeps them as rows).
            cleared: Include the cleared marks (False: left out, likewise).
            retired: Include the summary's tombstones (False: ``"retired"`` is left out of
                ``"summary"``, likewise).
            ledger: Include the exact-value ledger (False: left out, likewise).
        """
        summary = self._summary
        dumped = None
        if summary is not None:
            dumped = summary.model_dump(mode="json", exclude=None if retired else {"retired"})
        data = {
            "progsum_state": STATE_FORMAT,
            "schema": type(summary).__name__ if summary is not None else None,
            "version": self._version,
            "thread_id": self._thread_id,
            "log": [to_record(m, n) for n, m in enumerate(self.log)] if log else None,
            "cutoff": self._cutoff,
            "head_end": self._head_end,
            "summary": dumped,
            "events": [e.model_dump(mode="json") for e in self._events] if events else None,
            "anchor": anchor_dict(self._anchor),
            "attempted_at": self._attempted_at,
            "cleared": [list(c) for c in self._cleared] if cleared else None,
            "ledger": [entry_data(e) for e in self._ledger] if ledger else None,
            "authors": {
                str(at): author for at, author in self._store.marked.items() if at < self._length
            },
            "pinned": None if self._pinned is None else list(self._pinned),
            "agent_usage": self._agent_usage.to_dict(),
            "recall": None if self._recall is None else self._recall.to_data(),
        }
        parts = (("log", log), ("events", events), ("cleared", cleared), ("ledger", ledger))
        for name, wanted in parts:
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
        log, authors = parse_log(data, schema)
        state: ConversationState[S] = cls(log, thread_id=data.get("thread_id"), authors=authors)
        fields = parse_fields(data, schema, len(state))
        state._cutoff, state._head_end = fields.cutoff, fields.head_end
        state._summary = cast("S | None", fields.summary)
        state._events = fields.events
        state._compactions = sum(1 for e in fields.events if e.outcome == "compacted")
        state._anchor, state._attempted_at = fields.anchor, fields.attempted_at
        state._cleared, state._ledger, state._pinned = fields.cleared, fields.ledger, fields.pinned
        state._agent_usage = fields.agent_usage
        state._recall = Recall.from_data(data.get("recall"), len(state))
        state._in_view = tuple(c for c in state._cleared if state.is_kept(c.at))
        state._in_view_saved = sum(c.saved for c in state._in_view)
        state._version = fields.version
        return state

    @classmethod
    def from_json(cls, text: str, *, schema: type[S] = Summary) -> ConversationState[S]:  # type: ignore[assignment]  # see from_dict
        """Rebuild a state from `to_json` output.

        Raises:
            ConfigError: ``text`` is not JSON or not a progsum state, or was written with another
                schema.
            MessageFormatError: a logged message is malformed.
        """
        if not isinstance(text, str | bytes | bytearray):
            raise ConfigError(
                f"text={_brief(text)} is a {type(text).__name__}; pass the string "
                "ConversationState.to_json() returned"
            )
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(
                f"the text is not JSON ({exc}); pass what ConversationState.to_json() returned"
            ) from exc
        return cls.from_dict(data, schema=schema)


def _brief(value: object) -> str:
    """``value`` as a message names it: a 10,000-message list is shown as its first few."""
    short = reprlib.Repr()
    short.maxstring = short.maxother = 60
    short.maxlist = short.maxdict = 3
    short.maxlevel = 2
    return short.repr(value)


def require_state(value: object) -> None:
    """Refuse a ``state`` argument that is not a `ConversationState`, naming what it is.

    Raises:
        ConfigError: naming the value and how to build a state.
    """
    if isinstance(value, ConversationState):
        return
    hint = "build one with ConversationState(messages)"
    if isinstance(value, list | tuple):
        hint = "wrap the messages: ConversationState(messages)"
    elif isinstance(value, dict):
        hint = "wrap the message in a list: ConversationState(messages)"
    raise ConfigError(
        f"state={_brief(value)} is a {type(value).__name__}, not a ConversationState; {hint}, "
        "or pass the state a store loaded or a compaction returned"
    )


def _estimated(counter: TokenCounter, text: str) -> tuple[TokenCounter, int]:
    """A block of the request's estimated tokens, with the counter that made it (0 when empty)."""
    return counter, counter.count_text(text) + 4 if text else 0


_DEFAULT_COUNTER = HeuristicCounter()
_NO_RECALL: dict[str, Any] = {"_recall": None, "_recall_text": None, "_recall_tokens": None}
"""The recall slots of a state without one (`ConversationState.record` after a fold)."""
_NO_USAGE = AgentUsage()
