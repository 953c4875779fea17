"""The implementation of `progsum.integrations.pydantic_ai` (see its docstring)."""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from progsum.integrations._shared import Shown, missing, shown, usage_report

try:
    from pydantic_ai import messages as pai
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import RunContext, Tool
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing("pydantic-ai >= 2", "pydantic-ai")) from exc

from progsum.engine._compactor import Compactor
from progsum.render._view import Thinking, strips
from progsum.state._cleared import CLEARED_KEY
from progsum.state._conversation import ConversationState
from progsum.summary._schema import Summary
from progsum.tools._conversation import RECALL_TOOL, ConversationTools, recall_spec

__all__ = ["METADATA_KEY", "ProgsumCapability", "keep_newest_snapshot", "restore", "to_anthropic"]

METADATA_KEY = "progsum"
"""The ``ModelRequest.metadata`` key holding progsum's snapshot."""
_CACHED = 256
_HAS_PREPARE = hasattr(AbstractCapability, "prepare_model_request")
"""pydantic-ai 2.68+ runs `prepare_model_request` before each attempt (2.62 has only
`before_model_request`)."""


def to_anthropic(message: pai.ModelMessage) -> dict[str, Any]:
    """One pydantic-ai message as the Anthropic-shaped message progsum reads, one block per part.

    For reading only: what the model is sent is always the pydantic-ai message itself.
    """
    if isinstance(message, pai.ModelResponse):
        return {"role": "assistant", "content": [_response_block(p) for p in message.parts]}
    return {"role": "user", "content": [_request_block(p) for p in message.parts]}


def _request_block(part: object) -> dict[str, Any]:
    if isinstance(part, pai.BaseToolReturnPart) and not isinstance(part, pai.NativeToolReturnPart):
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": part.tool_call_id,
            "content": part.model_response_str(),
        }
        if getattr(part, "outcome", None) in ("failed", "retried"):
            block["is_error"] = True
        return block
    if isinstance(part, pai.UserPromptPart):
        content = part.content
        if isinstance(content, str):
            return {"type": "text", "text": content}
        texts = [c if isinstance(c, str) else f"[{type(c).__name__}]" for c in content]
        return {"type": "text", "text": "\n".join(texts)}
    if isinstance(part, pai.SystemPromptPart):  # the developer's text, not the user's
        return {"type": "system_prompt", "text": part.content}
    return {
        "type": str(getattr(part, "part_kind", "part")),
        "text": str(getattr(part, "content", "")),
    }


def _response_block(part: object) -> dict[str, Any]:
    if isinstance(part, pai.TextPart):
        return {"type": "text", "text": part.content}
    if isinstance(part, pai.ThinkingPart):
        return {"type": "thinking", "thinking": part.content, "signature": part.signature or ""}
    if isinstance(part, pai.BaseToolCallPart) and not isinstance(part, pai.NativeToolCallPart):
        return {
            "type": "tool_use",
            "id": part.tool_call_id,
            "name": part.tool_name,
            "input": part.args_as_dict(),
        }
    return {
        "type": str(getattr(part, "part_kind", "part")),
        "text": str(getattr(part, "content", "")),
    }


class ProgsumCapability(AbstractCapability[Any]):
    """Compact each model request with progsum; the stored message history is never rewritten.

    Example:
        ``agent = Agent(model, capabilities=[ProgsumCapability(compactor)])``, then
        ``agent.run_sync(prompt, message_history=previous.all_messages())`` resumes the summary.

    Args:
        compactor: The progsum compactor (policy, summarizer, schema, archive; with an archive,
            the agent also gets the ``recall`` tool).
        thinking: What a request does with Anthropic thinking produced under a prefix progsum
            has since changed (`progsum.render.Thinking`): by default (``"auto"``) it is left
            out when the model serving the request binds thinking to its prefix, and kept on
            older models; ``"drop_block"`` sends it for the API to drop (set
            ``anthropic_thinking`` to `progsum.render.drop_block_thinking()` in the model
            settings). Other providers' reasoning is always kept.

    Raises:
        ConfigError: ``thinking`` is not a mode.
    """

    def __init__(self, compactor: Compactor[Any], *, thinking: Thinking = "auto") -> None:
        if not isinstance(compactor, Compactor):
            raise TypeError(f"compactor={compactor!r} is not a progsum.Compactor; pass one")
        strips(thinking, None)  # a bad mode fails here, not at the first model request
        self.compactor = compactor
        self.thinking: Thinking = thinking
        self.conversation_tools: ConversationTools[Any] = ConversationTools(compactor)
        self._cache: OrderedDict[int, tuple[object, ConversationState[Any], object]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not spec-serializable: it holds a compactor."""
        return None

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Compact what this attempt sends; persist progsum's state when a compaction happened."""
        return await self._compact_request(ctx, request_context)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """On pydantic-ai releases without `prepare_model_request`, compact here instead.

        Both hooks change the request only; `prepare_model_request` is the one pydantic-ai's
        capability guide names for compaction, so it is used wherever it exists.
        """
        if _HAS_PREPARE:
            return request_context
        return await self._compact_request(ctx, request_context)

    def get_toolset(self) -> FunctionToolset[Any] | None:
        """``recall`` for the agent's model when the compactor has an archive, else no tool."""
        if self.conversation_tools.archive is None:
            return None
        spec = recall_spec(self.conversation_tools.max_chars)
        recall = Tool.from_schema(
            self._recall,
            name=RECALL_TOOL,
            description=spec.description,
            json_schema=spec.input_schema(),
            takes_ctx=True,
        )
        return FunctionToolset([recall])

    async def _recall(self, ctx: RunContext[Any], **arguments: object) -> str:
        """Answer the model's ``recall`` call from the archive (and the history)."""
        state = self.sync(ctx.messages, self._thread(ctx))
        result = await self.conversation_tools.ahandle(state, RECALL_TOOL, arguments)
        return result.content

    def _thread(self, ctx: RunContext[Any]) -> str | None:
        """The archive's name for this conversation: pydantic-ai's ``conversation_id``."""
        return ctx.conversation_id if self.compactor.archive is not None else None

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """The run succeeded: its history keeps the newest progsum snapshot and no other.

        Of a conversation loaded from a store, only the messages it does not hold yet change.
        """
        del ctx  # the result holds the run's history
        # a conversation store's index of what it holds (pydantic-ai 2.78+); before, none is held
        stored = getattr(result.conversation, "new_message_index", None) or 0
        keep_newest_snapshot(result.all_messages(), start=stored)
        return result

    async def _compact_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        log = request_context.messages
        if not log:
            return request_context
        before = self.sync(log, self._thread(ctx))
        state = await self.compactor.amaybe_compact(before)
        self._remember(log, state)
        if len(state.events) != len(before.events) or state.recalls != before.recalls:
            # a recall chosen for a new question is stored too, so that a later run, or a new
            # process given this history, quotes it the same way
            _store_snapshot(ctx.messages, log, state)
        if state.cutoff or state.cleared:
            model = request_context.model.model_name or self.compactor.policy.model
            strip = strips(self.thinking, model)
            request_context.messages = kept_messages(state, log, strip=strip)
        if state.header:
            params = request_context.model_request_parameters
            parts = [
                *(params.instruction_parts or []),
                pai.InstructionPart(state.header, dynamic=True),
            ]
            request_context.model_request_parameters = dataclasses.replace(
                params, instruction_parts=pai.InstructionPart.sorted(parts)
            )
        return request_context

    def sync(
        self, log: Sequence[pai.ModelMessage], thread_id: str | None = None
    ) -> ConversationState[Any]:
        """Progsum's state for ``log``: the cached one caught up, else rebuilt from its snapshot.

        ``thread_id`` names a conversation that has no snapshot yet in the archive.
        """
        with self._lock:
            cached = self._cache.get(id(log[0]))
        if cached is not None:
            first, state, last = cached
            length = len(state.log)
            if first is log[0] and length <= len(log) and log[length - 1] is last:
                return caught_up(state, log[length:])
        return restore(log, self.compactor.schema, thread_id=thread_id)

    def _remember(self, log: Sequence[pai.ModelMessage], state: ConversationState[Any]) -> None:
        with self._lock:
            self._cache[id(log[0])] = (log[0], state, log[len(state.log) - 1])
            self._cache.move_to_end(id(log[0]))
            while len(self._cache) > _CACHED:
                self._cache.popitem(last=False)


# -- persistence ------------------------------------------------------------------------------


def _store_snapshot(
    history: list[pai.ModelMessage], log: Sequence[pai.ModelMessage], state: ConversationState[Any]
) -> None:
    """Write the snapshot into the metadata of the newest request of the persistent history."""
    length = len(state.log)
    target = log[length - 1]
    for message in reversed(history):
        if message is target and isinstance(message, pai.ModelRequest):
            message.metadata = {**(message.metadata or {}), METADATA_KEY: state.to_dict(log=False)}
            return


def keep_newest_snapshot(history: Sequence[pai.ModelMessage], *, start: int = 0) -> int:
    """Remove every progsum snapshot but the newest from ``history[start:]``; return how many.

    In place, so each message keeps its identity (what a conversation store and the capability's
    cache recognise it by); the rest of each request's ``metadata`` is left as it was. Messages
    before ``start`` (those a conversation store already holds) are left alone: the store would
    not see the change, or would take the history for a rewritten one and branch it.
    """
    removed, newest = 0, True
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        metadata = message.metadata if isinstance(message, pai.ModelRequest) else None
        if not metadata or METADATA_KEY not in metadata:
            continue
        if newest:
            newest = False
        elif index >= start:
            rest = {key: value for key, value in metadata.items() if key != METADATA_KEY}
            message.metadata = rest or None
            removed += 1
    return removed


def restore(
    log: Sequence[pai.ModelMessage],
    schema: type[Any] | None = None,
    *,
    thread_id: str | None = None,
) -> ConversationState[Any]:
    """The state for a stored history: its newest progsum snapshot, plus the messages after it.

    ``thread_id`` names a new state, or a snapshot written without one (a snapshot keeps its own).
    """
    for index in range(len(log) - 1, -1, -1):
        metadata = getattr(log[index], "metadata", None) or {}
        if METADATA_KEY in metadata:
            data = dict(metadata[METADATA_KEY])
            data["log"] = [to_anthropic(m) for m in log[: index + 1]]
            data["thread_id"] = data.get("thread_id") or thread_id  # an archive added since
            state: ConversationState[Any] = ConversationState.from_dict(
                data, schema=schema or Summary
            )
            return caught_up(state, log[index + 1 :])
    return caught_up(ConversationState(thread_id=thread_id), log)


def caught_up(
    state: ConversationState[Any], new: Sequence[pai.ModelMessage]
) -> ConversationState[Any]:
    """``state`` with the new messages appended; a response's reported usage anchors the count."""
    for message in new:
        report = None
        if isinstance(message, pai.ModelResponse):
            usage = message.usage
            report = usage_report(
                usage.input_tokens,
                usage.output_tokens,
                cache_read=usage.cache_read_tokens,
                cache_write=usage.cache_write_tokens,
            )
        state = state.append(to_anthropic(message), usage=report)
    return state


def kept_messages(
    state: ConversationState[Any], log: Sequence[pai.ModelMessage], *, strip: bool = False
) -> list[pai.ModelMessage]:
    """The messages progsum keeps (first request and tail), as the model is sent them.

    In copies: cleared tool data replaced, each recall block a user prompt part of its own
    before the request's own prompt (every block in view: it stays with its request until the
    next fold), and with ``strip``, the Anthropic thinking of responses produced under a prefix
    progsum has since changed left out (`progsum.integrations._shared.shown`).
    """
    kept: list[pai.ModelMessage] = []
    for item in shown(state, strip=strip):
        message = _shown(log[item.at], item)
        if message is not None:
            kept.append(message)
    return kept


def _shown(message: pai.ModelMessage, item: Shown) -> pai.ModelMessage | None:
    """``message`` as a request shows it; None when nothing of it is left."""
    if item.cleared:
        message = _cleared(message, [(m.block, m.placeholder) for m in item.cleared])
    if item.stale and isinstance(message, pai.ModelResponse):
        kept = [p for p in message.parts if not _bound_thinking(p)]
        if not kept:
            return None
        if len(kept) != len(message.parts):
            message = dataclasses.replace(message, parts=kept)
    if item.block and isinstance(message, pai.ModelRequest):
        parts = list(message.parts)
        at = next((n for n, p in enumerate(parts) if isinstance(p, pai.UserPromptPart)), 0)
        parts.insert(at, pai.UserPromptPart(content=item.block))
        message = dataclasses.replace(message, parts=parts)
    return message


def _bound_thinking(part: object) -> bool:
    """Whether ``part`` goes back to Anthropic as a thinking block, bound to its prefix.

    pydantic-ai's ``AnthropicModel`` sends a ``ThinkingPart`` it produced, with its signature,
    as a ``thinking`` (or ``redacted_thinking``) block (``_map_thinking_part``); other
    providers' reasoning is theirs to keep (OpenAI's: docs/integrations.md).
    """
    return isinstance(part, pai.ThinkingPart) and part.provider_name == "anthropic"


def _cleared(message: pai.ModelMessage, marks: list[tuple[int, str]]) -> pai.ModelMessage:
    parts: list[Any] = list(message.parts)
    for block, placeholder in marks:
        part = parts[block]
        if isinstance(part, pai.ToolReturnPart):
            parts[block] = dataclasses.replace(part, content=placeholder)
        elif isinstance(part, pai.ToolCallPart):
            parts[block] = dataclasses.replace(part, args={CLEARED_KEY: placeholder})
    if isinstance(message, pai.ModelRequest):  # narrowed for the type checker: each has `parts`
        return dataclasses.replace(message, parts=parts)
    return dataclasses.replace(message, parts=parts)
