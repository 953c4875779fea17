"""OpenAI Responses API input items: a third message format beside Anthropic and Chat Completions.

A Responses conversation is a list of items, not of messages: a ``message`` (user, assistant,
system or developer), a ``function_call`` and, later, the ``function_call_output`` with the same
``call_id``, ``reasoning`` items (with their ``id`` and ``encrypted_content``), and server-side tool
items (``web_search_call``, ``mcp_call``, ...). progsum logs each item as one message, unchanged,
and reads it through `read_item` (for `progsum.messages._formats.inspect`) and `as_chat`, a
read-only
Chat-Completions view the token counter, the transcript and the extractor understand.

Pairing follows the same invariants as the other formats (DESIGN.md 1 and 9), with the rules the
Responses API adds: one assistant turn spreads its parallel calls over several ``function_call``
items, so a cut may not fall between them; and a ``reasoning`` item stays with the items that
follow it in its turn, so a cut may not fall right after one
(`progsum.messages._formats.is_safe_cut`).

`render_responses` is the model view: ``input`` for ``client.responses.create`` or an Agents SDK
session, with the summary header as a developer message after the caller's own system items.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from progsum.errors import MessageFormatError

__all__ = [
    "CALL_OUTPUTS",
    "Facts",
    "as_chat",
    "is_item",
    "read_item",
    "with_placeholders",
]

CALL_OUTPUTS: Mapping[str, str] = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}
"""Client-side tool calls and the item type that answers each (by ``call_id``)."""
_OUTPUTS = frozenset(CALL_OUTPUTS.values())
_SERVER_ITEMS = frozenset(
    {
        "reasoning",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "tool_search_call",
        "tool_search_output",
        "compaction",
        "item_reference",
    }
)
"""Items the provider runs or keeps itself: assistant-side, answered by no later item."""
_PARTS = frozenset(
    {"input_text", "output_text", "input_image", "input_file", "input_audio", "refusal"}
)
"""Content part types of a Responses ``message`` item (Anthropic has ``text``, ``tool_use``...)."""
_TEXT_PARTS = frozenset({"input_text", "output_text", "summary_text", "reasoning_text"})
_MESSAGE_ROLES = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
_CLEARED_OUTPUT = -1
"""`progsum.engine._reduce.Cleared.block` of a call output (as for an OpenAI ``tool`` message)."""

Role = Literal["system", "user", "assistant", "tool"]


class Facts(NamedTuple):
    """What `progsum.messages._formats.inspect` needs from one Responses item."""

    role: Role
    kind: str
    calls: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    thinking: bool = False


def _get(obj: object, key: str, default: Any = None) -> Any:  # noqa: ANN401 - items are untyped JSON
    if type(obj) is dict:  # the common case, without the ABC check below
        return obj.get(key, default)
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def is_item(message: object) -> bool:
    """Whether ``message`` is a Responses input item (an SDK object or a dict with a ``type``).

    A ``message`` item counts only when its content is a string or Responses parts
    (``input_text``, ``output_text``, ...): an Anthropic SDK ``Message`` also has
    ``type="message"``, with ``text`` and ``tool_use`` blocks.
    """
    kind = _get(message, "type")
    if not isinstance(kind, str):
        return False
    if kind != "message":
        return kind in CALL_OUTPUTS or kind in _OUTPUTS or kind in _SERVER_ITEMS
    content = _get(message, "content")
    if isinstance(content, str):
        return True
    if isinstance(content, Sequence):
        return all(_get(part, "type") in _PARTS for part in content)
    return False


def read_item(message: object, index: int) -> Facts | None:
    """The facts of a Responses item, or None when ``message`` is not one.

    Raises:
        MessageFormatError: the item is malformed (no ``call_id``, an unknown role, ...).
    """
    if not is_item(message):
        return None
    kind = str(_get(message, "type"))
    if kind == "message":
        role = _get(message, "role")
        if role not in _MESSAGE_ROLES:
            raise MessageFormatError(
                index,
                f"is a Responses 'message' item with role {role!r}; use 'user', 'assistant', "
                "'system' or 'developer'",
            )
        return Facts(_MESSAGE_ROLES[role], kind)  # type: ignore[arg-type]  # the map's values are roles
    if kind in CALL_OUTPUTS or kind in _OUTPUTS:
        call_id = _call_id(message, kind)
        if not isinstance(call_id, str) or not call_id:
            raise MessageFormatError(
                index,
                f"is a Responses {kind!r} item without a string 'call_id'; every call and its "
                "output carry the same call_id",
            )
        if kind in CALL_OUTPUTS:
            return Facts("assistant", kind, calls=(call_id,))
        return Facts("tool", kind, results=(call_id,))
    return Facts("assistant", kind, thinking=kind == "reasoning")


def _call_id(item: object, kind: str) -> object:
    call_id = _get(item, "call_id")
    if call_id is None and kind == "local_shell_call_output":
        return _get(item, "id")  # this output names its call by `id`
    return call_id


def as_chat(message: object) -> Any:  # noqa: ANN401 - messages are untyped JSON
    """A read-only Chat Completions view of a Responses item; any other message unchanged.

    For reading only (token estimates, the summarizer's transcript, the rule-based extractor):
    what the model is sent is always the item itself.
    """
    if not is_item(message):
        return message
    kind = str(_get(message, "type"))
    if kind == "message":
        role = str(_get(message, "role"))
        return {"role": role, "content": _content(_get(message, "content"))}
    if kind in CALL_OUTPUTS:
        name = _get(message, "name") or kind
        arguments = _get(message, "arguments")
        if arguments is None:
            arguments = _get(message, "input", _get(message, "action", ""))
        call = {
            "id": _call_id(message, kind),
            "type": "function",
            "function": {"name": str(name), "arguments": _text(arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if kind in _OUTPUTS:
        output = _get(message, "output", "")
        content = _content(output) if isinstance(output, Sequence) else output
        return {"role": "tool", "tool_call_id": _call_id(message, kind), "content": content}
    if kind == "reasoning":
        summary = [str(_get(p, "text") or "") for p in _get(message, "summary") or ()]
        summary += [str(_get(p, "text") or "") for p in _get(message, "content") or ()]
        blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": "\n".join(summary)}]
        encrypted = _get(message, "encrypted_content")
        if encrypted:
            blocks.append({"type": "redacted_thinking", "data": str(encrypted)})
        return {"role": "assistant", "content": blocks}
    return {"role": "assistant", "content": [_plain(message)]}


def _content(content: object) -> object:
    if isinstance(content, str) or not isinstance(content, Sequence):
        return _text(content) if content is not None else ""
    shown: list[object] = []
    for part in content:
        kind = _get(part, "type")
        if kind in _TEXT_PARTS:
            shown.append({"type": "text", "text": str(_get(part, "text") or "")})
        elif kind == "refusal":
            shown.append({"type": "refusal", "refusal": str(_get(part, "refusal") or "")})
        else:
            shown.append(_plain(part))
    return shown


def _plain(value: object) -> Any:  # noqa: ANN401 - untyped JSON
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(exclude_none=True)
    return value


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(_plain(value), ensure_ascii=False, sort_keys=True, default=repr)


def with_placeholders(
    message: object, marks: Sequence[tuple[int, str]], *, cleared_key: str
) -> dict[str, Any]:
    """A copy of a Responses call or output item with cleared tool data shown as placeholders.

    Args:
        message: The logged item.
        marks: ``(block, placeholder)`` pairs: block -1 is an output's ``output``, 0 a call's input.
        cleared_key: The key a cleared JSON ``arguments`` object carries its placeholder under.
    """
    copy: dict[str, Any] = dict(_plain(message))
    for block, placeholder in marks:
        if block == _CLEARED_OUTPUT:
            copy["output"] = placeholder
        elif "arguments" in copy:
            copy["arguments"] = json.dumps({cleared_key: placeholder})
        elif "input" in copy:
            copy["input"] = placeholder
    return copy
