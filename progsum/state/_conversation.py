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
import reprlib
from collections.abc import Iterable
from typing import Any, Literal, cast

from progsum.errors import ConfigError
from progsum.judge._provenance import Author
from progsum.judge._values import StatedValue as Entry
from progsum.messages._formats import Message, to_record
from progsum.policy._tokens import (
    HeuristicCounter,
    TokenCounter,
    anchor_usage,
)
from progsum.policy._usage import AgentUsage, report_counts
from progsum.recall._excerpt import Recall, block_text
from progsum.state._cleared import Cleared, still_in_view
from progsum.state._edits import NO_EDITS, Edits
from progsum.state._events import CompactionEvent
from progsum.state._log import Log, check_thread_id
from progsum.state._persist import STATE_FORMAT, anchor_dict, entry_data, parse_fields, parse_log
from progsum.state._views import StateViews, summed_usage
from progsum.summary._schema import Summary
from progsum.summary._schema import SummaryT as S

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
        "_edits",
        "_events",
        "_head_end",
        "_header",
        "_header_archived",
        "_header_tokens",
        "_in_view",
        "_in_view_saved",
        "_ledger",
        "_length",
        "_pinned",
        "_recall_tokens",
        "_recalls",
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
        self._header = self._header_tokens = self._header_archived = None
        self._in_view, self._in_view_saved = (), 0
        self._ledger = ()
        self._agent_usage = _NO_USAGE
        self._recalls, self._quotes, self._recall_tokens = (), None, None
        self._edits = NO_EDITS

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
        if self._recalls:
            tokens += self.recall_tokens(counter)
        cached = self._header_tokens  # read here: an estimate a turn, most of them unchanged
        if cached is not None and cached[0] is counter:
            return tokens + cached[1]
        return tokens + self.header_tokens(counter)

    @property
    def header(self) -> str:
        """The rendered summary header; empty before the first compaction.

        It changes only when the summary does (a fold, a consolidation, a repair): an archive
        write that succeeds later names the archive from the next compaction on, so the
        ``system`` of the requests between two compactions stays the same bytes.
        """
        if self._header is None:
            if self._summary is None:
                self._header = ""
            else:
                self._header = self._store.header(
                    self._summary,
                    (self._head_end, self._cutoff),
                    self._compactions,
                    self._thread_id if self._names_archive() else None,
                )
        return self._header

    def _names_archive(self) -> bool:
        """Whether the header names the archive: `folded_in_archive` when it was last rendered."""
        if self._header_archived is None:
            self._header_archived = self.folded_in_archive
        return self._header_archived

    def header_tokens(self, counter: TokenCounter) -> int:
        """Estimated tokens of the rendered header (cached per counter)."""
        cached = self._header_tokens
        if cached is None or (cached[0] is not counter and cached[0] != counter):
            header = self.header  # a fold's states share its text: counted once (`Log.count`)
            tokens = self._store.count(counter, header) + 4 if header else 0
            cached = self._header_tokens = (counter, tokens)
        return cached[1]

    def recall_tokens(self, counter: TokenCounter) -> int:
        """Estimated tokens of the recall blocks in view (cached per counter)."""
        cached = self._recall_tokens
        if cached is None or (cached[0] is not counter and cached[0] != counter):
            cached = (counter, sum(_estimated(counter, text)[1] for _, text in self.quotes))
            self._recall_tokens = cached
        return cached[1]

    def recalled(self, recall: Recall) -> ConversationState[S]:
        """A new state with ``recall`` added for its message (engine use).

        A recall for the message of the newest one replaces it; otherwise it must answer a later
        message than every recall before it (recalls only grow between folds).

        Raises:
            ConfigError: the message it answers or an excerpt's message is not in this state's
                log or view, an excerpt quotes the message it answers, or it answers an earlier
                message than the newest recall.
        """
        Recall.from_data(recall.to_data(), self._length)
        if not self.is_kept(recall.at):
            raise ConfigError(
                f"a recall for message {recall.at} cannot be added: that message is not in view "
                f"(cutoff {self._cutoff}); recall only answers kept messages"
            )
        recalls, quotes = self._recalls, self._quotes
        if recalls and recalls[-1].at == recall.at:
            recalls = recalls[:-1]
            quotes = None
        elif recalls and recalls[-1].at > recall.at:
            raise ConfigError(
                f"a recall for message {recall.at} comes after one for message "
                f"{recalls[-1].at}; recalls only grow between folds"
            )
        tokens = None
        if quotes is not None:  # the blocks already rendered stay: render only the new one
            text = block_text(recall, self._store.messages, self._day_of, authors=self.authors)
            cached = self._recall_tokens
            if text:
                quotes = (*quotes, (recall.at, text))
                if cached is not None:
                    tokens = (cached[0], cached[1] + _estimated(cached[0], text)[1])
            else:
                tokens = cached
        return self._replace(_recalls=(*recalls, recall), _quotes=quotes, _recall_tokens=tokens)

    @property
    def edits(self) -> Edits:
        """Where progsum changed what earlier requests sent (`progsum.state._edits`)."""
        return self._edits

    def append(
        self, message: Message, *, usage: object = None, author: Author | None = None
    ) -> ConversationState[S]:
        """A new state with ``message`` appended, and the provider's usage if given.

        Pass ``usage=response.usage`` when appending a model's reply: the reported tokens anchor
        the count (see `record_usage`). Pass ``author="tool"`` for machine text the agent sends
        in the user role (command output, observations), so it can never bind; by default
        `progsum.judge._provenance.classify` decides.

        Raises:
            MessageFormatError: the message is malformed; this state is unchanged.
            ConfigError: ``author`` is not an author class, or ``usage`` no usage report.
        """
        counts = None if usage is None else report_counts(usage)  # raises before the append
        store = self._store
        if len(store.messages) != self._length:
            store = store.fork(self._length)
        store.add(message, author)
        state = self._replace()
        state._store, state._length = store, self._length + 1  # noqa: SLF001 - the state just made
        if counts is not None:  # as record_usage, without a second copy: nobody holds it yet
            estimate = state.estimate(store.counter or _DEFAULT_COUNTER)
            state._anchor = anchor_usage(self._anchor, sum(counts), estimate)  # noqa: SLF001 - likewise
            state._agent_usage = summed_usage(self._agent_usage, counts)  # noqa: SLF001 - likewise
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
        counts = report_counts(usage)
        estimate = self.estimate(counter or self._store.counter or _DEFAULT_COUNTER)
        anchor = anchor_usage(self._anchor, sum(counts), estimate)
        if not billed:
            return self._replace(_anchor=anchor)
        return self._replace(_anchor=anchor, _agent_usage=summed_usage(self._agent_usage, counts))

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
            # a fold drops the recall blocks: the newest message's is chosen anew
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
        if summary is not None and summary is not self._summary and summary != self._summary:
            changes.update(_summary=summary, _header=None, _header_tokens=None)
        repinned = "_pinned" in changes and changes["_pinned"] != self._pinned
        if "_header" in changes or repinned:  # system or messages rewritten
            changes.update(_edits=self._edits.folded(self._length), _header_archived=None)
        elif cleared:  # sent messages changed between folds
            changes["_edits"] = self._edits.changed(min(c.at for c in cleared), self._length)
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
        new._edits = self._edits
        new._events = self._events
        new._head_end = self._head_end
        new._header = self._header
        new._header_archived = self._header_archived
        new._header_tokens = self._header_tokens
        new._in_view = self._in_view
        new._in_view_saved = self._in_view_saved
        new._ledger = self._ledger
        new._length = self._length
        new._pinned = self._pinned
        new._quotes = self._quotes
        new._recall_tokens = self._recall_tokens
        new._recalls = self._recalls
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
            "agent_usage": self.agent_usage.to_dict(),
            "recalls": [r.to_data() for r in self._recalls],
            "edits": self._edits.to_data(),
            "header_archived": self._names_archive() if self._summary is not None else None,
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
        state._recalls = _recalls_of(data, len(state))
        state._edits = _edits_of(data, len(state), fields.events)
        archived = data.get("header_archived")
        state._header_archived = archived if isinstance(archived, bool) else None
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


def _recalls_of(data: dict[str, Any], length: int) -> tuple[Recall, ...]:
    """The recalls of a stored state (a state written before recalls stayed has one at most).

    Raises:
        ConfigError: they are damaged, or do not grow message by message.
    """
    if "recalls" not in data:
        old = Recall.from_data(data.get("recall"), length)
        return () if old is None else (old,)
    stored = data["recalls"]
    if not isinstance(stored, list):
        raise ConfigError(f"the state's recalls must be a list, not {type(stored).__name__}")
    recalls = tuple(r for r in (Recall.from_data(item, length) for item in stored) if r)
    if any(a.at >= b.at for a, b in itertools.pairwise(recalls)):
        raise ConfigError(
            f"the state's recalls answer messages {[r.at for r in recalls]}; each must answer a "
            "later message than the one before it"
        )
    return recalls


def _edits_of(data: dict[str, Any], length: int, events: tuple[CompactionEvent, ...]) -> Edits:
    """The prefix edits of a stored state.

    A state written before they were recorded counts every message as stale once anything was
    folded or cleared: its thinking is left out from its first request after loading on.

    Raises:
        ConfigError: they are damaged.
    """
    if "edits" in data:
        return Edits.from_data(data["edits"], length)
    changed = any(e.outcome in ("compacted", "reduced") for e in events)
    return NO_EDITS.folded(length) if changed else NO_EDITS


_DEFAULT_COUNTER = HeuristicCounter()
_NO_RECALL: dict[str, Any] = {"_recalls": (), "_quotes": (), "_recall_tokens": None}
"""The recall slots of a state without recalls (`ConversationState.record` after a fold)."""
_NO_USAGE = AgentUsage()
