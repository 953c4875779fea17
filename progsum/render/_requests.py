"""Rendering: the summary as a binding header, and the model view for Anthropic and OpenAI.

One strict, sandboxed Jinja environment renders every template in ``prompts/``. The same state
renders to the same bytes, so provider prompt caches hit and snapshot tests stay stable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from progsum._templates import environment
from progsum.errors import ConfigError
from progsum.messages._formats import FORMAT_NAMES, Message, field
from progsum.render._breakpoints import mark
from progsum.render._view import Thinking, strips, visible
from progsum.state._conversation import require_state

if TYPE_CHECKING:
    from progsum.state._conversation import ConversationState

__all__ = ["render_anthropic", "render_openai"]


def render_anthropic(
    state: ConversationState[Any],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    cache: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    model: str | None = None,
    thinking: Thinking = "auto",
) -> tuple[list[Mapping[str, Any]], list[Message]]:
    """The Anthropic Messages API view: ``(system_blocks, messages)``.

    The caller's system prompt comes first, unchanged (so its cached prefix survives), then the
    summary header as its own text block. Messages are the kept first task message and the verbatim
    tail, the caller's own objects (old tool data the cheap reduction cleared shows as a
    placeholder, in a copy; a recall block opens the message it answers, in a copy); a user turn
    opens the list. Between two compactions each request is the previous one with messages
    appended, byte for byte apart from cache breakpoints (docs/architecture.md).

    Thinking is bound to its prefix on the current models (docs/thinking-rules.md, T7): after
    a compaction, the thinking blocks of messages logged before it were produced under another
    ``system`` and other messages, and the API refuses them. ``model`` (the model the request
    goes to) and ``thinking`` decide what is sent: by default (``"auto"``) such blocks are left
    out for a model with preserved thinking, a model the table does not know, or no model, and
    kept whole for an older model; ``"drop_block"`` sends them all for the API to drop (pass
    `progsum.render.drop_block_thinking()` and the `progsum.render.DROP_BLOCK_BETA` header).

    With ``cache=True`` the last system block (the header) and the last kept message carry
    ``cache_control`` breakpoints, on copies (`progsum.render._breakpoints.mark`): the log is
    unchanged, and between compactions the request before the newest message renders the same
    bytes, so the provider reads it from the cache. Anthropic accepts at most 4 breakpoints per
    request in all; those the caller placed count first: on ``system`` blocks, on kept messages,
    and on ``tools``, the tool definitions the request is sent with (pass them so their
    breakpoints are counted; they are only read, with ``cache=True``, and not returned; without
    them one slot is held, so one marked tool definition still fits; ``tools=[]``: none). The
    tail's breakpoint comes first when only one fits.

    Raises:
        ConfigError: the conversation is in OpenAI format, ``thinking`` is not a mode, or
            (``cache=True``) the caller's own breakpoints already exceed 4.
    """
    require_state(state)
    _require_format(state, "anthropic", "render_openai")
    strip = strips(thinking, model)
    blocks: list[Mapping[str, Any]] = []
    if isinstance(system, str):
        if system:
            blocks.append({"type": "text", "text": system})
    elif system is not None:
        blocks.extend(_system_blocks(system))
    if state.header:
        blocks.append({"type": "text", "text": state.header})
    messages = visible(state, strip=strip)
    if messages and field(messages[0], "role") != "user":
        bridge = environment().get_template("bridge.user.j2").render().strip()
        messages.insert(0, {"role": "user", "content": bridge})
    return mark(blocks, messages, tools=tools) if cache else (blocks, messages)


def render_openai(state: ConversationState[Any], *, system: str | None = None) -> list[Message]:
    """The OpenAI Chat Completions view: one message list.

    The caller's system prompt (argument, then any leading system/developer messages of the log),
    then the summary header as a system message, then the kept first task message and the tail.

    Raises:
        ConfigError: the conversation is in Anthropic format.
    """
    require_state(state)
    _require_format(state, "openai", "render_anthropic")
    if system is not None and not isinstance(system, str):
        raise ConfigError(
            f"system={system!r} is a {type(system).__name__}; pass the system prompt as a string"
        )
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    effective = visible(state)
    leading = 0
    while leading < len(effective) and field(effective[leading], "role") in ("system", "developer"):
        leading += 1
    messages.extend(effective[:leading])
    if state.header:
        messages.append({"role": "system", "content": state.header})
    messages.extend(effective[leading:])
    return messages


def _system_blocks(system: object) -> list[Mapping[str, Any]]:
    """The caller's system blocks, each a mapping with a ``type``.

    Raises:
        ConfigError: ``system`` is neither a string nor a list of content blocks.
    """
    if isinstance(system, Sequence) and all(
        isinstance(block, Mapping) and "type" in block for block in system
    ):
        return list(system)
    raise ConfigError(
        f"system={system!r} is neither a string nor a list of content blocks; pass the system "
        "prompt as a string or a list of content blocks such as [{'type': 'text', 'text': '...'}]"
    )


def _require_format(state: ConversationState[Any], wanted: str, other: str) -> None:
    fmt = state.format
    if fmt == "responses":
        other = "progsum.render.render_responses"
    if fmt is not None and fmt != wanted:
        raise ConfigError(
            f"this conversation is in {FORMAT_NAMES[fmt]} format ({state.format_evidence}); "
            f"use {other}() for it"
        )
