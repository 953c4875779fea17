"""The steps of a folded segment: each tool call paired with the result that answered it.

Pure. A step is a call's tool name and arguments with the text of its result, read from
OpenAI and Anthropic function calls (paired by position, since real logs reuse call ids) and from
SWE-agent text actions: the command in the last fenced or ``<command>`` block of an assistant
message, its observation in the next tool-authored user message. `progsum.contract._artifacts`
folds the steps into the artifact trail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from progsum.messages._formats import field as read
from progsum.messages._transcript import plain_content, tool_parts
from progsum.summary._request import Segment

__all__ = ["Step", "steps"]


@dataclass(frozen=True, slots=True)
class Step:
    """One tool call and its result."""

    at: int
    """Log index of the result (of the call when there is none)."""
    tool: str
    args: Mapping[str, object]
    output: str
    error: bool


_FENCE = re.compile(r"```[^\n`]*\n(.*?)```|<command>\s*(.*?)\s*</command>", re.DOTALL)


def steps(segment: Segment) -> Iterator[Step]:
    """Each tool call of the segment with the result that answered it, in order."""
    pending: list[tuple[str, str, Mapping[str, object]]] = []
    action: tuple[str, Mapping[str, object]] | None = None
    for index, message in segment:
        text = plain_content(message)  # a plain message: one text part, no call or result
        if text is None:
            parts = list(tool_parts(message))
            calls = [p for p in parts if p.kind == "tool_use"]
            results = [p for p in parts if p.kind == "tool_result"]
            if calls:
                pending = [(p.id, p.name, _arguments(p.text)) for p in calls]
                action = None
                continue
            if results:
                for part in results:
                    match = next(
                        (c for c in pending if c[0] == part.id), pending[0] if pending else None
                    )
                    if match is None:
                        continue
                    pending.remove(match)
                    yield Step(index, match[1], match[2], part.text, part.error)
                continue
            text = "\n".join(p.text for p in parts if p.kind == "text")
        role = read(message, "role")
        if role == "assistant":
            action = _text_action(text)
        elif role == "user" and action is not None and segment.author(index) == "tool":
            yield Step(index, action[0], action[1], text, error=False)
            action = None
        else:
            action = None


def _arguments(text: str) -> Mapping[str, object]:
    try:
        value = json.loads(text)
    except ValueError:
        return {"input": text}
    return value if isinstance(value, Mapping) else {"input": value}


def _text_action(text: str) -> tuple[str, Mapping[str, object]] | None:
    """A SWE-agent text action: the command in the message's last fenced or <command> block."""
    if "```" not in text and "<command>" not in text:
        return None  # no block: most messages, passed over without the regex
    blocks = [a or b for a, b in _FENCE.findall(text)]
    if not blocks or not blocks[-1].strip():
        return None
    command = blocks[-1].strip()
    first, _, rest = command.partition("\n")
    words = first.split()
    verb, args = words[0], words[1:]
    if verb in ("open", "create") and args:
        return verb, {"path": args[0]}
    if verb in ("edit", "insert"):
        return "edit", {"body": rest}
    if verb == "str_replace_editor" and len(args) >= 2:  # noqa: PLR2004 - sub-command and path
        return "str_replace_editor", {"command": args[0], "path": args[1]}
    if verb == "submit":
        return "submit", {}
    if verb in ("goto", "scroll_up", "scroll_down"):
        return None  # moves the window over the open file
    return "bash", {"command": command}
