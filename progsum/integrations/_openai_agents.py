"""The implementation of `progsum.integrations.openai_agents` (see its docstring)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from progsum.integrations._shared import missing, usage_report

try:
    from agents import FunctionTool, RunContextWrapper
    from agents.memory import Session, SessionABC, SQLiteSession
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool_context import ToolContext
    from agents.usage import RequestUsage
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing("the OpenAI Agents SDK (openai-agents)", "openai-agents")) from exc

from progsum.engine._compactor import Compactor
from progsum.engine._recall import recalled
from progsum.errors import ConfigError, ProgsumError
from progsum.messages._formats import field
from progsum.messages._responses import read_item
from progsum.policy._tokens import TokenCounter
from progsum.recall._excerpt import Recall
from progsum.render._responses import render_responses
from progsum.state._conversation import ConversationState
from progsum.tools._conversation import RECALL_TOOL, ConversationTools, recall_spec

__all__ = ["STATE_ITEM", "USAGE_ITEM", "ProgsumSession", "anchored"]

STATE_ITEM = "progsum_state"
"""The ``type`` of the item holding progsum's state in its state session (replaced at each
compaction)."""
USAGE_ITEM = "progsum_usage"
"""The ``type`` of the item beside it: the usage reports since, so a restart anchors as before."""


class ProgsumSession(SessionABC):
    """An Agents SDK session whose history progsum compacts; the stored items stay whole.

    Example:
        ``session = ProgsumSession.sqlite("user-42", "chats.db", compactor=compactor)``, then
        ``await Runner.run(agent, "Plan my trip", session=session)`` each turn.

    Args:
        session_id: The conversation's id (also progsum's ``thread_id``).
        underlying_session: Where the items are stored (every one of them).
        compactor: The progsum compactor.
        state_session: Where progsum's state is saved after each compaction (None: memory only,
            so a new process summarizes again).
    """

    def __init__(
        self,
        session_id: str,
        underlying_session: Session,
        *,
        compactor: Compactor[Any],
        state_session: Session | None = None,
    ) -> None:
        if not isinstance(compactor, Compactor):
            raise TypeError(f"compactor={compactor!r} is not a progsum.Compactor; pass one")
        self.session_id = session_id
        self.session_settings = getattr(underlying_session, "session_settings", None)
        self.underlying_session = underlying_session
        self.state_session = state_session
        self.compactor = compactor
        self.conversation_tools: ConversationTools[Any] = ConversationTools(compactor)
        self._state: ConversationState[Any] | None = None
        self._seen: tuple[object, list[RequestUsage]] = (None, [])
        self._reports: list[tuple[int, dict[str, int]]] = []
        """Usage reports since the last snapshot, with the log length each anchored at."""
        self._lock = asyncio.Lock()
        self._rendered: tuple[ConversationState[Any] | None, int] = (None, 0)
        """The state the last `get_items` rendered and how many items it returned (the rest of
        a model input is the run's own)."""
        self._pending: Recall | None = None
        """A recall `input_filter` chose for an item the session does not hold yet."""

    @classmethod
    def sqlite(cls, session_id: str, db_path: str, *, compactor: Compactor[Any]) -> ProgsumSession:
        """Items and progsum's state in one SQLite file (``SQLiteSession`` for both)."""
        return cls(
            session_id,
            SQLiteSession(session_id, db_path),
            compactor=compactor,
            state_session=SQLiteSession(f"{session_id}:progsum", db_path),
        )

    @property
    def state(self) -> ConversationState[Any] | None:
        """Progsum's state as of the last call (None before the first)."""
        return self._state

    @property
    def tools(self) -> list[FunctionTool]:
        """The tools to give the agent: ``recall`` when the compactor has an archive, else none.

        ``compact_conversation`` is not offered: the runner reads the session once per run, so a
        compaction asked for mid-run would change nothing the model is sent.
        """
        if self.conversation_tools.archive is None:
            return []
        spec = recall_spec(self.conversation_tools.max_chars)
        return [
            FunctionTool(
                name=RECALL_TOOL,
                description=spec.description,
                params_json_schema=spec.input_schema(),
                on_invoke_tool=self._recall,
                strict_json_schema=False,  # every argument is optional; the handler checks them
            )
        ]

    # -- the Session protocol (each method takes the runner's context, ``wrapper``) ------------

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[Any]:
        """The items to send: header, first task message and verbatim tail (latest ``limit``).

        Compacts first when the policy says so: the runner sends these items all run long.
        """
        del wrapper  # reading needs no usage
        async with self._lock:
            state = await self._compacted(await self._load())
            items = [dict(item) for item in render_responses(state)]
            self._rendered = (state, len(items))
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """``RunConfig(call_model_input_filter=session.input_filter)``: recall for this run's input.

        The runner reads the session before it stores a run's new input, so without the filter
        a recall block can only answer an item already stored, right after a fold. With it,
        before each model call, the items the run added since (`get_items` returned the rest)
        are read into a copy of progsum's state and the recall is chosen for the newest message
        a person wrote among them (`progsum.engine._recall`): the input is rendered again with
        each block before its message. The recall is kept in the session's state and saved with
        it, so the run's later model calls, the next runs and a new process send that message
        with the same block until the next fold (requests only grow between compactions). The
        stored items stay the user's own; an input progsum cannot read is passed through.
        """
        async with self._lock:
            state, shown = self._rendered
            sent = list(data.model_data.input)
            if state is None or len(sent) < shown:
                return data.model_data
            try:
                grown = state.extend(dict(item) for item in sent[shown:])
            except ProgsumError:
                return data.model_data
            grown = _with_recalls(grown, await self._recalls())
            config, archive = self.compactor.config, self.compactor.archive
            after = recalled(config, archive, grown)
            if after.recall is not None and after.recalls != grown.recalls:
                await self._keep(after.recall)
        items = [dict(item) for item in render_responses(after)]
        if len(items) != len(sent):
            return data.model_data
        return ModelInputData(input=items, instructions=data.model_data.instructions)  # type: ignore[arg-type]  # the SDK's TypedDict items

    async def add_items(
        self, items: list[Any], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Store the items; the usage the model reported for them anchors progsum's count.

        Raises:
            MessageFormatError: an item is malformed; nothing was stored.
        """
        async with self._lock:
            reports = self._new_reports(wrapper)
            state, at = anchored(await self._load(), items, reports, self.compactor.counter)
            await self.underlying_session.add_items(items)
            self._state = state
            if reports:
                self._reports.extend((at, report) for report in reports)
                await self._save_reports()
            pending = self._pending
            if pending is not None and pending.at < len(state):
                await self._keep(pending)

    async def pop_item(self, *, wrapper: RunContextWrapper[Any] | None = None) -> Any:  # noqa: ANN401 - a Responses input item
        """Remove the newest stored item; progsum's state is rebuilt on the next call."""
        del wrapper
        async with self._lock:
            item = await self.underlying_session.pop_item()
            self._state, self._pending = None, None
        return item

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Remove every item and progsum's state."""
        del wrapper
        async with self._lock:
            await self.underlying_session.clear_session()
            if self.state_session is not None:
                await self.state_session.clear_session()
            self._state, self._reports, self._pending = None, [], None

    # -- reported usage -------------------------------------------------------------------------

    def _new_reports(self, wrapper: RunContextWrapper[Any] | None) -> list[dict[str, int]]:
        """The usage of the model responses ``wrapper`` reports since the last call, oldest first.

        A run's usage lists one entry per model response; the entries seen before are skipped,
        also when a resumed run carries them over in a copy of the usage.
        """
        usage = getattr(wrapper, "usage", None)
        entries: list[RequestUsage] = list(getattr(usage, "request_usage_entries", None) or [])
        owner, seen = self._seen
        self._seen = (usage, entries)
        carried = owner is usage or (bool(seen) and entries[: len(seen)] == seen)
        reports = []
        for entry in entries[len(seen) :] if carried else entries:
            details = entry.input_tokens_details
            report = usage_report(
                entry.input_tokens,
                entry.output_tokens,
                cache_read=getattr(details, "cached_tokens", 0) or 0,
                cache_write=getattr(details, "cache_write_tokens", 0) or 0,
            )
            if report is not None:
                reports.append(report)
        return reports

    # -- progsum's state ----------------------------------------------------------------------

    async def _load(self) -> ConversationState[Any]:
        if self._state is not None:
            return self._state
        items = await self.underlying_session.get_items()
        snapshot, self._reports = await self._stored(len(items))
        state: ConversationState[Any]
        if snapshot is not None:
            length = int(snapshot["length"])
            data = {**snapshot["state"], "log": items[:length]}
            state = ConversationState.from_dict(data, schema=self.compactor.schema)
        else:
            state = ConversationState(thread_id=self.session_id)
        for at, report in self._reports:  # as they were recorded when the items came
            state = state.extend(items[len(state) : at])
            state = state.record_usage(report, counter=self.compactor.counter)
        self._state = state.extend(items[len(state) :])
        return self._state

    async def _compacted(self, state: ConversationState[Any]) -> ConversationState[Any]:
        compacted = await self.compactor.amaybe_compact(state)
        self._state = compacted
        if len(compacted.events) != len(state.events) or compacted.recalls != state.recalls:
            await self._save(compacted)
        return compacted

    async def _save(self, state: ConversationState[Any]) -> None:
        """Save ``state`` as progsum's one snapshot in the state session (when there is one)."""
        if self.state_session is None:
            return
        snapshot = {"type": STATE_ITEM, "length": len(state.log), "state": state.to_dict(log=False)}
        await self.state_session.clear_session()
        await self.state_session.add_items([snapshot])  # type: ignore[list-item]  # progsum's own record
        self._reports = []  # the snapshot holds them

    async def _recalls(self) -> tuple[Recall, ...]:
        """The recalls the session keeps: its state's, and one waiting for its item."""
        held = (await self._load()).recalls
        return held if self._pending is None else (*held, self._pending)

    async def _keep(self, recall: Recall) -> None:
        """Keep ``recall`` in the session's state and save it, or wait for its item to be stored.

        A recall chosen at an older cutoff (a fold happened since) is dropped: the fold's
        request rewrote the prefix, and the next recall is chosen anew.
        """
        state = await self._load()
        self._pending = None
        if recall.cutoff != state.cutoff or any(r.at >= recall.at for r in state.recalls):
            return
        if recall.at >= len(state):
            self._pending = recall
            return
        try:
            self._state = state.recalled(recall)
        except ConfigError:  # the stored items are not those the run sent: nothing to keep
            return
        await self._save(self._state)

    async def _save_reports(self) -> None:
        """Keep the reports since the snapshot beside it, replacing the previous record."""
        if self.state_session is None:
            return
        newest: Any = await self.state_session.get_items(limit=1)
        if newest and newest[0].get("type") == USAGE_ITEM:
            await self.state_session.pop_item()
        record = {"type": USAGE_ITEM, "reports": [[at, report] for at, report in self._reports]}
        await self.state_session.add_items([record])  # type: ignore[list-item]  # progsum's own record

    async def _stored(
        self, length: int
    ) -> tuple[dict[str, Any] | None, list[tuple[int, dict[str, int]]]]:
        """The stored snapshot (if it fits ``length`` items) and the reports recorded after it."""
        if self.state_session is None:
            return None, []
        records: list[Any] = list(await self.state_session.get_items())  # progsum's own records
        snapshot = next((r for r in records if r.get("type") == STATE_ITEM), None)
        if snapshot is not None and not 0 < int(snapshot["length"]) <= length:
            snapshot = None  # the items were removed since
        after = int(snapshot["length"]) if snapshot is not None else 0
        usage: dict[str, Any] = next((r for r in records if r.get("type") == USAGE_ITEM), {})

        reports = [(int(at), dict(report)) for at, report in usage.get("reports", [])]
        return snapshot, [(at, report) for at, report in reports if after < at <= length]

    async def _recall(self, context: ToolContext[Any], arguments: str) -> str:
        """Answer the model's ``recall`` call from the archive (and the stored items)."""
        del context
        async with self._lock:
            state = await self._load()
        result = await self.conversation_tools.ahandle(state, RECALL_TOOL, arguments or "{}")
        return result.content


def _with_recalls(
    state: ConversationState[Any], recalls: Sequence[Recall]
) -> ConversationState[Any]:
    """``state`` with the ``recalls`` of its cutoff that it lacks (chosen since it was rendered)."""
    for recall in recalls:
        newest = state.recall
        if (
            recall.cutoff == state.cutoff
            and recall.at < len(state)
            and state.is_kept(recall.at)
            and (newest is None or recall.at > newest.at)
        ):
            state = state.recalled(recall)
    return state


def anchored(
    state: ConversationState[Any],
    items: Sequence[Any],
    reports: Sequence[dict[str, int]],
    counter: TokenCounter,
) -> tuple[ConversationState[Any], int]:
    """``state`` with ``items`` appended, anchored on ``reports``; and the log length it did so at.

    A turn's items are the model's output (assistant messages, calls, reasoning) and then the
    outputs of the tools it called; a report counts the request and the reply, so it anchors
    after the last model item of the batch (before the batch when it has none).

    Raises:
        MessageFormatError: an item is malformed; nothing was appended.
    """
    if not reports:
        return state.extend(items), len(state) + len(items)
    start = len(state)
    split = max((n + 1 for n, item in enumerate(items) if _from_model(item, start + n)), default=0)
    head = state.extend(items[:split])
    for report in reports:
        head = head.record_usage(report, counter=counter)
    return head.extend(items[split:]), start + split


def _from_model(item: object, index: int) -> bool:
    """Whether ``item`` is model output (a reply, call or reasoning), not a user or tool item.

    Raises:
        MessageFormatError: the item is malformed.
    """
    facts = read_item(item, index)
    if facts is not None:
        return facts.role == "assistant"
    return bool(field(item, "role") == "assistant")
