"""An independent checker of the provider rules in docs/thinking-rules.md.

It reads a rendered request and the conversation's full log and lists every broken rule. It uses
nothing of progsum's (no `MessageInfo`, no `is_safe_cut`): the rules are re-derived here from the
documentation so that the engine's own helpers are not their own oracle. `bench/windows.py`
imports it too, to count violations over the real data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["anthropic_violations", "openai_violations"]

_THINKING = ("thinking", "redacted_thinking")


def _get(obj: object, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _blocks(message: object) -> list[Any]:
    content = _get(message, "content")
    if isinstance(content, list | tuple):
        return list(content)
    return []


def _of_type(message: object, *kinds: str) -> list[Any]:
    return [b for b in _blocks(message) if _get(b, "type") in kinds]


def _dump(block: object) -> str:
    if hasattr(block, "model_dump"):
        block = block.model_dump()
    return json.dumps(block, sort_keys=True, default=repr)


def _is_human(message: object) -> bool:
    """A user message that carries no tool result: it opens a new assistant turn."""
    return _get(message, "role") == "user" and not _of_type(message, "tool_result")


def anthropic_violations(view: Sequence[Any], log: Sequence[Any]) -> list[str]:
    """Every documented Anthropic rule ``view`` (the rendered ``messages``) breaks.

    ``log`` is the conversation as the provider produced it, used for the thinking rules (T1, T3):
    thinking blocks must be byte-equal to the log's, and a visible turn that showed thinking must
    open with the turn's real opener or a thinking block.
    """
    found: list[str] = []
    if not view:
        return ["the request has no messages"]
    if _get(view[0], "role") != "user":
        found.append("the first message is not a user message")
    for n, message in enumerate(view):
        role = _get(message, "role")
        if role not in ("user", "assistant"):
            found.append(f"message {n} has role {role!r}")
        results = [str(_get(b, "tool_use_id")) for b in _of_type(message, "tool_result")]
        if len(results) != len(set(results)):
            found.append(f"message {n} answers one tool_use twice")
        calls = [str(_get(b, "id")) for b in _of_type(view[n - 1], "tool_use")] if n > 0 else []
        found.extend(
            f"message {n} has a tool_result for {call_id!r} with no call before"
            for call_id in results
            if call_id not in calls
        )
        if role == "assistant":
            made = [str(_get(b, "id")) for b in _of_type(message, "tool_use")]
            if made and n + 1 < len(view):
                answered = {
                    str(_get(b, "tool_use_id")) for b in _of_type(view[n + 1], "tool_result")
                }
                missing = [c for c in made if c not in answered]
                if missing:
                    found.append(
                        f"message {n} has tool_use {missing} unanswered in message {n + 1}"
                    )
    found += _thinking_violations(view, log)
    return found


def _thinking_violations(view: Sequence[Any], log: Sequence[Any]) -> list[str]:
    """T1 (thinking unmodified, in order) and T3 (a visible thinking turn opens with thinking)."""
    found: list[str] = []
    logged: dict[str, int] = {}  # a thinking block's bytes -> its log index
    for index, message in enumerate(log):
        for block in _of_type(message, *_THINKING):
            logged.setdefault(_dump(block), index)
    origin: list[int | None] = []
    for n, message in enumerate(view):
        blocks = _of_type(message, *_THINKING)
        where = {logged.get(_dump(b)) for b in blocks}
        if None in where:
            found.append(f"message {n} holds a thinking block that is not in the log unchanged")
        origin.append(next(iter(where)) if len(where) == 1 else None)
        if blocks:
            log_message = log[origin[-1]] if origin[-1] is not None else None
            if log_message is not None and [_dump(b) for b in blocks] != [
                _dump(b) for b in _of_type(log_message, *_THINKING)
            ]:
                found.append(f"message {n} has its thinking blocks reordered or partly dropped")
    # T3, on the last turn of the view
    start = max((n for n, m in enumerate(view) if _is_human(m)), default=-1) + 1
    first = next((n for n in range(start, len(view)) if _get(view[n], "role") == "assistant"), None)
    if first is None:
        return found
    opened = view[first]
    position = _log_position(opened, log)
    if position is None:
        return found  # a copy with cleared payloads: located below through its thinking or ids
    turn_start = position
    while turn_start > 0 and not _is_human(log[turn_start - 1]):
        turn_start -= 1
    showed = any(_of_type(log[k], *_THINKING) for k in range(turn_start, position + 1))
    starts_with_thinking = bool(_blocks(opened)) and _get(_blocks(opened)[0], "type") in _THINKING
    if showed and position != turn_start and not starts_with_thinking:
        found.append(
            f"message {first} resumes a turn with thinking (log message {position}) but is "
            "neither the turn's opener nor starts with thinking"
        )
    return found


def _log_position(message: object, log: Sequence[Any]) -> int | None:
    """Where ``message`` (or the copy of it with cleared payloads) is in the log."""
    for index, logged in enumerate(log):
        if logged is message:
            return index
    ids = [str(_get(b, "id")) for b in _of_type(message, "tool_use")]
    if ids:
        for index, logged in enumerate(log):
            if [str(_get(b, "id")) for b in _of_type(logged, "tool_use")] == ids:
                return index
    return None


def openai_violations(view: Sequence[Any]) -> list[str]:
    """Every documented OpenAI Chat Completions rule ``view`` breaks.

    System messages only in front, and each assistant ``tool_calls`` id answered once by the
    ``tool`` messages right after it (no orphan, no duplicate).
    """
    found: list[str] = []
    seen_other = False
    open_calls: list[str] = []
    answered: set[str] = set()
    for n, message in enumerate(view):
        role = _get(message, "role")
        if role in ("system", "developer"):
            if seen_other:
                found.append(f"message {n} is a system message after the conversation began")
            continue
        seen_other = True
        if role == "tool":
            call_id = str(_get(message, "tool_call_id"))
            if call_id not in open_calls:
                found.append(f"message {n} answers {call_id!r}, not a call right before it")
            elif call_id in answered:
                found.append(f"message {n} answers {call_id!r} twice")
            answered.add(call_id)
            continue
        missing = [c for c in open_calls if c not in answered]
        if missing:
            found.append(f"message {n} follows calls {missing} that have no result")
        open_calls = [str(_get(c, "id")) for c in (_get(message, "tool_calls") or ())]
        answered = set()
    return found
