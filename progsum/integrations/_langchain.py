"""The implementation of `progsum.integrations.langchain` (see its docstring)."""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired

from progsum.integrations._shared import Shown, missing, shown, usage_report

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.agents.middleware.types import (
        ExtendedModelResponse,
        ModelRequest,
        ModelResponse,
        OmitFromInput,
    )
    from langchain.tools import ToolRuntime
    from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.config import get_config
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing("LangChain >= 1.5 and LangGraph", "langchain")) from exc

from progsum.engine._compactor import Compactor
from progsum.judge._provenance import Author
from progsum.messages._formats import THINKING_BLOCKS
from progsum.render._view import Thinking, strips
from progsum.state._cleared import CLEARED_KEY, OPENAI_CONTENT
from progsum.state._conversation import ConversationState
from progsum.summary._schema import BaseSummary, Summary
from progsum.tools._conversation import (
    COMPACT_TOOL,
    RECALL_TOOL,
    ConversationTools,
    compact_spec,
    recall_spec,
)

__all__ = ["STATE_KEY", "ProgsumMiddleware", "ProgsumState", "author_of", "to_openai"]

STATE_KEY = "progsum"
"""The graph-state key holding progsum's snapshot."""
_CACHED = 256
"""Conversations whose latest state the middleware keeps in memory (per instance)."""


class ProgsumState(AgentState[Any]):
    """The agent state with progsum's snapshot (checkpointed with the messages)."""

    progsum: NotRequired[Annotated[dict[str, Any] | None, OmitFromInput]]


def to_openai(message: BaseMessage) -> dict[str, Any]:
    """One LangChain message as the Chat Completions message progsum reads (text, calls, results).

    For reading only: what the model is sent is always the LangChain message itself.
    """
    text = message.text
    kind = message.type
    if kind == "ai":
        out: dict[str, Any] = {"role": "assistant", "content": text}
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            out["tool_calls"] = [
                {
                    "id": str(call.get("id") or ""),
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": json.dumps(call.get("args", {}), ensure_ascii=False),
                    },
                }
                for call in calls
            ]
        return out
    if kind == "tool":
        return {
            "role": "tool",
            "tool_call_id": str(getattr(message, "tool_call_id", "")),
            "content": text,
        }
    if kind == "system":
        return {"role": "system", "content": text}
    return {"role": "user", "content": text}


class ProgsumMiddleware(AgentMiddleware[ProgsumState, Any, Any]):
    """Compact each model request with progsum, keeping its state in the LangGraph state.

    Example:
        ``agent = create_agent(model, tools, middleware=[ProgsumMiddleware(compactor)],
        checkpointer=InMemorySaver())``

    Args:
        compactor: The progsum compactor (policy, summarizer, schema, archive).
        tools: Register ``compact_conversation`` and ``recall`` as agent tools.
        thinking: What a request does with thinking produced under a prefix progsum has since
            changed (`progsum.render.Thinking`): by default (``"auto"``) it is left out when
            the model the agent calls (else the compactor's ``Policy.model``) binds thinking to
            its prefix, and kept on older models; ``"drop_block"`` sends it for the API to drop
            (configure the model with `progsum.render.drop_block_thinking` and the
            `progsum.render.DROP_BLOCK_BETA` header).

    Raises:
        ConfigError: ``thinking`` is not a mode.
    """

    state_schema = ProgsumState

    def __init__(
        self, compactor: Compactor[Any], *, tools: bool = True, thinking: Thinking = "auto"
    ) -> None:
        super().__init__()
        if not isinstance(compactor, Compactor):
            raise TypeError(f"compactor={compactor!r} is not a progsum.Compactor; pass one")
        strips(thinking, None)  # a bad mode fails here, not at the first model call
        self.compactor = compactor
        self.thinking: Thinking = thinking
        self.conversation_tools: ConversationTools[Any] = ConversationTools(compactor)
        self.tools: Sequence[BaseTool] = self._tools() if tools else []
        self._cache: OrderedDict[str, tuple[ConversationState[Any], str | None]] = OrderedDict()
        self._lock = threading.Lock()

    # -- the model call -----------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        """Compact, send the compacted request, and persist progsum's snapshot when it changed."""
        key, before, log = self.sync(dict(request.state))
        state = self.compactor.maybe_compact(before)
        response = handler(self._request(request, state, log))
        return self._respond(key, dict(request.state), state, log, response)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """Async `wrap_model_call`: the compactor's async path."""
        key, before, log = self.sync(dict(request.state))
        state = await self.compactor.amaybe_compact(before)
        response = await handler(self._request(request, state, log))
        return self._respond(key, dict(request.state), state, log, response)

    def _request(
        self, request: ModelRequest[Any], state: ConversationState[Any], log: list[BaseMessage]
    ) -> ModelRequest[Any]:
        if not state.cutoff and not state.cleared:  # nothing folded or cleared: send as is
            return request.override(
                system_message=with_header(request.system_message, state.header)
            )
        model = model_name(request.model) or self.compactor.policy.model
        kept: list[Any] = kept_messages(state, log, strip=strips(self.thinking, model))
        return request.override(
            messages=kept,
            system_message=with_header(request.system_message, state.header),
        )

    def _respond(
        self,
        key: str,
        graph: dict[str, Any],
        state: ConversationState[Any],
        log: list[BaseMessage],
        response: ModelResponse[Any],
    ) -> ExtendedModelResponse[Any]:
        self._remember(key, state, log)
        stored = graph.get(STATE_KEY) or {}
        changed = (
            stored.get("events") != len(state.events)
            or stored.get("key") != key
            or (stored.get("state") or {}).get("recalls") != [r.to_data() for r in state.recalls]
        )  # a recall chosen for a new question is stored, so a restart quotes it the same way
        command: Command[Any] | None = None
        if changed:
            command = Command(update={STATE_KEY: snapshot(key, state, log)})
        return ExtendedModelResponse(model_response=response, command=command)

    # -- progsum's state from the graph state ---------------------------------------------------

    def sync(self, graph: dict[str, Any]) -> tuple[str, ConversationState[Any], list[BaseMessage]]:
        """``(key, state, log)``: progsum's state for the graph state's messages, caught up.

        Appends only the messages added since the state was last seen; rebuilds from the
        snapshot (one pass over the log) after a restart or when the messages were rewritten.
        """
        log: list[BaseMessage] = graph.get("messages") or []
        stored: dict[str, Any] | None = graph.get(STATE_KEY)
        key = str(stored["key"]) if stored else uuid.uuid4().hex
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            state, last_id = cached
            length = len(state.log)
            if length <= len(log) and (length == 0 or log[length - 1].id == last_id):
                return key, caught_up(state, log[length:]), log
        return key, restore(stored, log, self.compactor.schema, thread_id=self._thread(key)), log

    def _thread(self, key: str) -> str | None:
        """The archive's name for the conversation: LangGraph's ``thread_id``, else the key."""
        if self.compactor.archive is None:
            return None
        try:
            configurable = get_config().get("configurable") or {}
        except RuntimeError:  # called outside a graph run
            configurable = {}
        thread = configurable.get("thread_id")
        return key if thread is None else str(thread)

    def _remember(self, key: str, state: ConversationState[Any], log: list[BaseMessage]) -> None:
        length = len(state.log)
        last_id = log[length - 1].id if length else None
        with self._lock:
            self._cache[key] = (state, last_id)
            self._cache.move_to_end(key)
            while len(self._cache) > _CACHED:
                self._cache.popitem(last=False)

    # -- tools --------------------------------------------------------------------------------

    def _tools(self) -> list[BaseTool]:
        middleware = self

        def compact_conversation(runtime: ToolRuntime) -> Command[Any]:
            return middleware._call_tool(runtime, COMPACT_TOOL, {})

        def recall(
            *,
            runtime: ToolRuntime,
            item: str | None = None,
            first: int | None = None,
            last: int | None = None,
            query: str | None = None,
            max_chars: int | None = None,
        ) -> Command[Any]:
            arguments = {"item": item, "first": first, "last": last, "query": query}
            arguments["max_chars"] = max_chars
            return middleware._call_tool(runtime, RECALL_TOOL, arguments)

        return [
            StructuredTool.from_function(
                compact_conversation, name=COMPACT_TOOL, description=compact_spec().description
            ),
            StructuredTool.from_function(
                recall, name=RECALL_TOOL, description=recall_spec().description
            ),
        ]

    def _call_tool(
        self, runtime: ToolRuntime, name: str, arguments: dict[str, Any]
    ) -> Command[Any]:
        key, state, log = self.sync(dict(runtime.state))
        result = self.conversation_tools.handle(state, name, arguments)
        self._remember(key, result.state, log)
        reply = ToolMessage(
            result.content,
            tool_call_id=runtime.tool_call_id or "",
            name=name,
            status="error" if result.is_error else "success",
        )
        return Command(update={STATE_KEY: snapshot(key, result.state, log), "messages": [reply]})


# -- pure helpers -----------------------------------------------------------------------------


def snapshot(key: str, state: ConversationState[Any], log: Sequence[BaseMessage]) -> dict[str, Any]:
    """What the graph state keeps: progsum's state without the log (the graph has the messages)."""
    length = len(state.log)
    return {
        "key": key,
        "length": length,
        "last_id": log[length - 1].id if length else None,
        "events": len(state.events),
        "state": state.to_dict(log=False),
    }


def restore(
    stored: dict[str, Any] | None,
    log: Sequence[BaseMessage],
    schema: type[BaseSummary] = Summary,
    *,
    thread_id: str | None = None,
) -> ConversationState[Any]:
    """Progsum's state rebuilt from a snapshot and the graph's messages (one pass over them).

    ``thread_id`` names a new state, or a snapshot written without one (a snapshot keeps its own).
    """
    if not stored:
        return caught_up(ConversationState(thread_id=thread_id), log)
    length = int(stored["length"])
    if length > len(log) or (length and log[length - 1].id != stored.get("last_id")):
        return caught_up(ConversationState(thread_id=thread_id), log)  # the messages were rewritten
    data = dict(stored["state"])
    data["log"] = [to_openai(m) for m in log[:length]]
    data["thread_id"] = data.get("thread_id") or thread_id  # an archive added since
    state: ConversationState[Any] = ConversationState.from_dict(data, schema=schema)
    return caught_up(state, log[length:])


def author_of(message: BaseMessage) -> Author | None:
    """Who wrote ``message``, as far as LangChain records it; None: progsum's rules decide.

    A message LangChain's own middleware wrote carries ``additional_kwargs["lc_source"]`` (the
    summary SummarizationMiddleware puts into the history as a human message): harness text,
    ``tool``, never the person's words. Roles decide the rest (`progsum.judge._provenance`).
    """
    kwargs = getattr(message, "additional_kwargs", None) or {}
    return "tool" if kwargs.get("lc_source") else None


def caught_up(state: ConversationState[Any], new: Sequence[BaseMessage]) -> ConversationState[Any]:
    """``state`` with the new messages appended, each with its author (`author_of`).

    A reply's reported usage anchors the count.
    """
    for message in new:
        usage = getattr(message, "usage_metadata", None) or {}
        details = usage.get("input_token_details") or {}
        report = usage_report(
            int(usage.get("input_tokens") or 0),
            int(usage.get("output_tokens") or 0),
            cache_read=int(details.get("cache_read") or 0),
            cache_write=int(details.get("cache_creation") or 0),
        )
        state = state.append(to_openai(message), usage=report, author=author_of(message))
    return state


def kept_messages(
    state: ConversationState[Any], log: Sequence[BaseMessage], *, strip: bool = False
) -> list[BaseMessage]:
    """The graph's messages progsum keeps (first task message and tail), as the model sees them.

    In copies: cleared data replaced by placeholders, each recall block quoted at the start of
    the message it answers (every block in view: it stays with its message until the next fold),
    and with ``strip``, the thinking of messages produced under a prefix progsum has since
    changed left out (`progsum.integrations._shared.shown`).
    """
    kept: list[BaseMessage] = []
    for item in shown(state, strip=strip):
        message = _shown(log[item.at], item)
        if message is not None:
            kept.append(message)
    return kept


def _shown(message: BaseMessage, item: Shown) -> BaseMessage | None:
    """``message`` as a request shows it; None when nothing of it is left."""
    if item.cleared:
        message = _cleared(message, [(m.block, m.placeholder) for m in item.cleared])
    if item.stale:
        stripped = _without_thinking(message)
        if stripped is None:
            return None
        message = stripped
    return _quoted(message, item.block) if item.block else message


def _without_thinking(message: BaseMessage) -> BaseMessage | None:
    """``message`` without its Anthropic thinking blocks; None when nothing else is left.

    ChatAnthropic keeps each reply's ``thinking`` and ``redacted_thinking`` blocks in the
    ``AIMessage``'s content and sends them back as they are (``_format_messages``); with
    ``output_version="v1"`` they are ``reasoning`` blocks, turned back into thinking for
    Anthropic only. Other providers' reasoning is left alone (docs/integrations.md).
    """
    content = message.content
    if not isinstance(message, AIMessage) or isinstance(content, str):
        return message
    anthropic = message.response_metadata.get("model_provider") == "anthropic"
    kept = [block for block in content if not _is_thinking(block, anthropic=anthropic)]
    if len(kept) == len(content):
        return message
    if not kept and not message.tool_calls:
        return None
    return message.model_copy(update={"content": kept})


def _is_thinking(block: object, *, anthropic: bool) -> bool:
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    return kind in THINKING_BLOCKS or (anthropic and kind == "reasoning")


def model_name(model: object) -> str | None:
    """The model name a LangChain chat model calls (``model``, ``model_name``), if it has one."""
    for attribute in ("model", "model_name", "model_id"):
        name = getattr(model, attribute, None)
        if isinstance(name, str) and name:
            return name
    return None


def _quoted(message: BaseMessage, block: str) -> BaseMessage:
    """A copy of ``message`` whose content opens with the recall ``block``."""
    content = message.content
    if isinstance(content, str):
        return message.model_copy(update={"content": f"{block}\n\n{content}"})
    return message.model_copy(update={"content": [{"type": "text", "text": block}, *content]})


def _cleared(message: BaseMessage, marks: list[tuple[int, str]]) -> BaseMessage:
    for block, placeholder in marks:
        if block == OPENAI_CONTENT:
            message = message.model_copy(update={"content": placeholder})
        elif isinstance(message, AIMessage):
            calls = [dict(call) for call in message.tool_calls]
            calls[block]["args"] = {CLEARED_KEY: placeholder}
            message = message.model_copy(update={"tool_calls": calls})
    return message


def with_header(system: SystemMessage | None, header: str) -> SystemMessage | None:
    """The agent's system message with the header as a text block after its own content."""
    if not header:
        return system
    if system is None:
        return SystemMessage(content=header)
    content = system.content
    blocks: list[str | dict[str, Any]] = (
        [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    )
    return SystemMessage(content=[*blocks, {"type": "text", "text": header}])
