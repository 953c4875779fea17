"""Prompt-cache breakpoints on the rendered agent request, as copies: the log is never touched.

Anthropic caches a request's prefix up to each block marked ``cache_control``, and a request may
carry at most 4 of them in all: tool definitions, system blocks and message blocks together
(prompt caching page, https://platform.claude.com/docs/en/build-with-claude/prompt-caching).
`mark` puts one on the last system block (the summary header, stable between compactions) and
one on the last kept message (the growing tail), each on a copy, and never more than the request
has room for: breakpoints the caller already placed, on its tool definitions (which progsum does
not render, so the caller passes them), its system blocks and its kept messages, count first.
When the caller does not pass its tool definitions, one slot is held for them (the caching page's
pattern marks the last tool definition), so a request whose tools carry one breakpoint stays
within the limit either way; pass ``tools`` to use the slot, or when more than one is marked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from progsum.errors import ConfigError
from progsum.messages._formats import field, to_record

__all__ = ["MAX_BREAKPOINTS", "count", "mark"]

MAX_BREAKPOINTS = 4
"""Anthropic's limit of blocks with ``cache_control`` in one request (tools, system, messages)."""
UNSEEN_TOOLS = 1
"""Breakpoints held for tool definitions the caller did not pass."""
EPHEMERAL: Mapping[str, str] = {"type": "ephemeral"}
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})
"""Blocks that cannot carry ``cache_control`` themselves (they are cached with their turn)."""


def count(value: object) -> int:
    """How many blocks of a request part carry ``cache_control``."""
    if isinstance(value, Mapping):
        here = 1 if value.get("cache_control") is not None else 0
        return here + sum(count(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list | tuple):
        return sum(count(v) for v in value)
    if hasattr(value, "model_dump"):
        return count(to_record(value))
    return 0


def mark(
    blocks: Sequence[Mapping[str, Any]],
    messages: Sequence[Any],
    *,
    tools: Sequence[Any] | None = None,
) -> tuple[list[Mapping[str, Any]], list[Any]]:
    """``(blocks, messages)`` with breakpoints on the last system block and the last message.

    ``tools`` are the tool definitions the request is sent with: only their breakpoints are read;
    None (not passed) holds `UNSEEN_TOOLS` slots for them.
    The tail's breakpoint comes first when only one fits; an already marked block keeps its
    own. Only the two marked items are copies (SDK objects become their JSON records); every other
    item is the caller's object, unchanged.

    Raises:
        ConfigError: the caller's own breakpoints already exceed `MAX_BREAKPOINTS`.
    """
    blocks, messages = list(blocks), list(messages)
    held = UNSEEN_TOOLS if tools is None else 0
    room = MAX_BREAKPOINTS - _callers(tools or (), blocks, messages) - held
    if room > 0 and messages:
        marked = _marked_message(messages[-1])
        if marked is not None:
            messages[-1], room = marked, room - 1
    if room > 0 and blocks and blocks[-1].get("cache_control") is None:
        blocks[-1] = {**blocks[-1], "cache_control": dict(EPHEMERAL)}
    return blocks, messages


def _callers(tools: Sequence[Any], blocks: Sequence[Any], messages: Sequence[Any]) -> int:
    """How many breakpoints the request carries before progsum adds any.

    Raises:
        ConfigError: more than `MAX_BREAKPOINTS`; the API would refuse the request.
    """
    parts = {"tools": count(list(tools)), "system": count(blocks), "messages": count(messages)}
    total = sum(parts.values())
    if total > MAX_BREAKPOINTS:
        each = ", ".join(f"{name} {n}" for name, n in parts.items())
        raise ConfigError(
            f"the request already carries {total} cache_control breakpoints ({each}) before "
            f"progsum adds any, and Anthropic accepts at most {MAX_BREAKPOINTS} per request; "
            "remove cache_control from some of them (kept messages should carry none: "
            "cache=True marks the newest one on each render)"
        )
    return total


def _marked_message(message: Any) -> dict[str, Any] | None:  # noqa: ANN401 - a caller's message
    """A copy of ``message`` whose last markable content block carries ``cache_control``."""
    record = to_record(message)
    content = field(record, "content")
    if isinstance(content, str):
        if not content:
            return None
        return {
            **record,
            "content": [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}],
        }
    if not isinstance(content, list):
        return None
    for position in range(len(content) - 1, -1, -1):
        block = content[position]
        if isinstance(block, Mapping) and block.get("type") not in _UNMARKABLE:
            if block.get("cache_control") is not None:
                return None
            copied = list(content)
            copied[position] = {**block, "cache_control": dict(EPHEMERAL)}
            return {**record, "content": copied}
    return None
