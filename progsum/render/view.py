"""The model view of kept messages: cleared blocks replaced by their placeholders, recall quoted.

The engine's reduction stage decides what to clear (`progsum.engine.reduce`), the state records
each decision as a `Cleared` mark, and this module applies the marks when messages are shown.
The recall block (`progsum.recall`) is quoted at the start of the message it answers, in a copy.
"""

from __future__ import annotations

import json
from typing import Any

from progsum.messages.formats import to_record
from progsum.messages.responses import is_item, with_placeholders
from progsum.state.cleared import CLEARED_KEY, OPENAI_CONTENT, Cleared
from progsum.state.conversation import ConversationState

__all__ = ["visible"]


def visible(state: ConversationState[Any]) -> list[Any]:
    """The effective messages with the state's cleared blocks replaced by their placeholders.

    A tool result repeated for one call (the same id answered twice in one round) is shown once:
    the first answer stays, later copies are left out of the view (the log keeps them). The
    message the recall answers opens with the recall block (`quoted`).
    """
    messages = state.effective
    indices = state.kept
    recall = state.recall
    block = state.recall_block if recall is not None else ""
    asked = recall.at if block and recall is not None else -1
    by_index: dict[int, list[Cleared]] = {}
    for mark in state.cleared_in_view:
        by_index.setdefault(mark.at, []).append(mark)
    shown: list[Any] = []
    answered: set[str] = set()
    for position, index in enumerate(indices):
        message = messages[position]
        group = by_index.get(index)
        if group:
            message = _apply(message, group)
        info = state.infos[index]
        if not info.is_result:
            answered = set()
        elif info.role == "tool":
            call_id = info.results[0]
            if call_id in answered:
                continue  # a second answer to the same call
            answered.add(call_id)
        elif len(set(info.results)) < len(info.results):
            message = _first_answers(message)
        if index == asked:
            message = quoted(message, block)
        shown.append(message)
    return shown


def quoted(message: Any, block: str) -> dict[str, Any]:  # noqa: ANN401 - messages are untyped JSON
    """A copy of a user message that opens with ``block``: a text part before its own content.

    A string content becomes ``block``, a blank line, then the string; a list of parts gets a
    text part first (``input_text`` for an OpenAI Responses item).
    """
    copy: dict[str, Any] = to_record(message)
    content = copy.get("content")
    if isinstance(content, str) or content is None:
        copy["content"] = f"{block}\n\n{content}" if content else block
        return copy
    kind = "input_text" if is_item(message) else "text"
    copy["content"] = [{"type": kind, "text": block}, *content]
    return copy


def _first_answers(message: Any) -> dict[str, Any]:  # noqa: ANN401 - messages are untyped JSON
    """A copy of an Anthropic tool-result message keeping only the first result per call id."""
    copy: dict[str, Any] = to_record(message)
    seen: set[str] = set()
    content: list[Any] = []
    for block in copy["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            call_id = str(block.get("tool_use_id", ""))
            if call_id in seen:
                continue
            seen.add(call_id)
        content.append(block)
    copy["content"] = content
    return copy


def _apply(message: Any, marks: list[Cleared]) -> dict[str, Any]:  # noqa: ANN401 - messages are untyped JSON
    if is_item(message):
        return with_placeholders(
            message, [(m.block, m.placeholder) for m in marks], cleared_key=CLEARED_KEY
        )
    copy: dict[str, Any] = to_record(message)
    for mark in marks:
        if mark.block == OPENAI_CONTENT:
            copy["content"] = mark.placeholder
            continue
        calls = copy.get("tool_calls")
        if calls:
            function = dict(calls[mark.block]["function"])
            function["arguments"] = json.dumps({CLEARED_KEY: mark.placeholder})
            calls = list(calls)
            calls[mark.block] = {**calls[mark.block], "function": function}
            copy["tool_calls"] = calls
            continue
        content = list(copy["content"])
        block = dict(content[mark.block])
        if block.get("type") == "tool_result":
            block["content"] = mark.placeholder
        elif block.get("type") == "text":
            block["text"] = mark.placeholder
        else:
            block["input"] = {CLEARED_KEY: mark.placeholder}
        content[mark.block] = block
        copy["content"] = content
    return copy
