"""The model view of kept messages, with the recall block quoted before the message it answers.

The state builds the view of its kept messages once per change (`progsum.state.shown`: cleared
tool data as placeholders); the recall block (`progsum.recall`) is quoted at the start of the
message it answers, in a copy.
"""

from __future__ import annotations

import bisect
from typing import Any

from progsum.messages.formats import to_record
from progsum.messages.responses import is_item
from progsum.state.conversation import ConversationState

__all__ = ["visible"]


def visible(state: ConversationState[Any]) -> list[Any]:
    """The effective messages as the model sees them (`ConversationState.view`), recall quoted.

    Cleared blocks show their placeholders and a tool result repeated for one call is shown
    once; the message the recall answers opens with the recall block (`quoted`).
    """
    view = state.view
    messages = list(view.messages)
    recall = state.recall
    block = state.recall_block if recall is not None else ""
    if block and recall is not None:
        position = bisect.bisect_left(view.at, recall.at)
        if position < len(view.at) and view.at[position] == recall.at:
            messages[position] = quoted(messages[position], block)
    return messages


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
