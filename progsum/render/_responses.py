"""The OpenAI Responses API view of a conversation: an ``input`` item list."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from progsum.errors import ConfigError
from progsum.render._view import visible
from progsum.state._conversation import ConversationState, require_state


def render_responses(
    state: ConversationState[Any], *, system: str | None = None
) -> list[Mapping[str, Any]]:
    """The Responses API view: the ``input`` item list (pass ``instructions=`` as usual).

    The caller's system prompt as a developer message (when given), then any leading system or
    developer items of the log, then the summary header as a developer message, then the kept
    first task message and the verbatim tail: the caller's own items (old tool output the cheap
    reduction cleared shows as a placeholder, in a copy; a recall block opens the message it
    answers), reasoning items byte for byte.

    Reasoning items are never left out, even after a compaction changed their prefix: a
    ``function_call`` sent with its id needs the reasoning item it was produced with (400
    "provided without its required 'reasoning' item"), and models with preserved reasoning
    (GPT-6.2 and later) drop an item whose prefix changed themselves, without an error ("Keep
    the prefix unchanged"; docs/thinking-rules.md, O1-O3).

    Raises:
        ConfigError: the conversation is in Anthropic or Chat Completions format.
    """
    require_state(state)
    if state.format not in (None, "responses"):
        raise ConfigError(
            f"this conversation is in {state.format} format ({state.format_evidence}); "
            "render_responses() renders OpenAI Responses items, use render_anthropic() or "
            "render_openai() for it"
        )
    items: list[Mapping[str, Any]] = []
    if system:
        items.append({"type": "message", "role": "developer", "content": system})
    effective = visible(state)
    infos = state.infos
    leading = 0
    while leading < len(effective) and leading < len(infos) and infos[leading].role == "system":
        leading += 1
    items.extend(effective[:leading])
    if state.header:
        items.append({"type": "message", "role": "developer", "content": state.header})
    items.extend(effective[leading:])
    return items
