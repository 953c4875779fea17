"""The kept messages as the model sees them: cleared tool data as placeholders, repeats left out.

The engine's reduction stage decides what to clear (`progsum.engine.reduce`) and the state
records each decision as a `Cleared` mark; this module applies the marks. The view is built once
per change of the state, not per render: it is cached on the log that the states of one chain
share, keyed by what decides it (the cutoff, the kept head, the pinned round and the marks in
view). A longer state of the chain extends the cached view by its new messages, a new mark
re-renders only its own message, and a state rendered again costs a copy of the list.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from progsum.messages.formats import MessageInfo, to_record
from progsum.messages.responses import is_item, with_placeholders
from progsum.state.cleared import CLEARED_KEY, OPENAI_CONTENT, Cleared

__all__ = ["View", "shown"]

Key = tuple[int, int, tuple[int, int] | None]
"""What decides which messages are kept: the cutoff, the kept head's end, the pinned round."""


@dataclass(frozen=True, slots=True)
class View:
    """The model view of a log's first `upto` messages under one `Key` and its marks."""

    key: Key
    marks: tuple[Cleared, ...]
    """The marks applied (the state's `cleared_in_view`)."""
    upto: int
    """Messages of the log read."""
    messages: tuple[Any, ...]
    """What the model sees, in order."""
    at: tuple[int, ...]
    """The log index of each of `messages` (ascending)."""
    answered: frozenset[str]
    """Call ids answered in the run of tool results that ends at `upto` (repeats are left out)."""
    pending: tuple[Cleared, ...]
    """The marks of messages at or after `upto`, applied when the view reaches them."""


def shown(
    log: Sequence[Any],
    infos: Sequence[MessageInfo],
    key: Key,
    marks: tuple[Cleared, ...],
    length: int,
    *,
    cached: View | None,
) -> View:
    """The view of ``log[:length]`` kept under ``key`` with ``marks`` applied, reusing ``cached``.

    A tool result repeated for one call (the same id answered twice in one round) is shown once:
    the first answer stays, later copies are left out (the log keeps them).
    """
    if cached is None or cached.key != key:
        return _extended(_empty(key, marks), log, infos, length)
    if cached.marks is not marks and cached.marks != marks:
        old = len(cached.marks)
        if len(marks) < old or marks[:old] != cached.marks:
            return _extended(_empty(key, marks), log, infos, length)
        cached = _marked(cached, log, infos, marks)
    if length < cached.upto:
        end = bisect.bisect_left(cached.at, length)
        return View(key, marks, length, cached.messages[:end], cached.at[:end], frozenset(), ())
    return _extended(cached, log, infos, length)


def _empty(key: Key, marks: tuple[Cleared, ...]) -> View:
    return View(key, marks, 0, (), (), frozenset(), marks)


def _kept(key: Key, start: int, length: int) -> list[int]:
    """The kept log indices in ``[start, length)``."""
    cutoff, head_end, pinned = key
    if cutoff == 0:
        return list(range(start, length))
    spans = [(0, head_end), *([pinned] if pinned else []), (cutoff, length)]
    return [i for low, high in spans for i in range(max(low, start), min(high, length))]


def _extended(view: View, log: Sequence[Any], infos: Sequence[MessageInfo], length: int) -> View:
    """``view`` with the kept messages in ``[view.upto, length)`` added."""
    if length <= view.upto:
        return view
    by_index: dict[int, list[Cleared]] = {}
    for mark in view.pending:
        by_index.setdefault(mark.at, []).append(mark)
    messages: list[Any] = []
    at: list[int] = []
    answered = set(view.answered)
    for index in _kept(view.key, view.upto, length):
        message = _one(log[index], by_index.get(index))
        info = infos[index]
        if not info.is_result:
            answered = set()
        elif info.role == "tool":
            call_id = info.results[0]
            if call_id in answered:
                continue  # a second answer to the same call
            answered.add(call_id)
        elif len(set(info.results)) < len(info.results):
            message = _first_answers(message)
        messages.append(message)
        at.append(index)
    return View(
        view.key,
        view.marks,
        length,
        (*view.messages, *messages),
        (*view.at, *at),
        frozenset(answered),
        tuple(m for m in view.pending if m.at >= length),
    )


def _marked(
    view: View, log: Sequence[Any], infos: Sequence[MessageInfo], marks: tuple[Cleared, ...]
) -> View:
    """``view`` with ``marks`` applied, of which ``view.marks`` is a prefix."""
    new = marks[len(view.marks) :]
    seen = {m.at for m in new if m.at < view.upto}
    messages = list(view.messages)
    for index in seen:
        position = bisect.bisect_left(view.at, index)
        if position == len(view.at) or view.at[position] != index:
            continue  # a repeated answer the view leaves out
        message = _apply(log[index], [m for m in marks if m.at == index])
        info = infos[index]
        if info.is_result and len(set(info.results)) < len(info.results):
            message = _first_answers(message)
        messages[position] = message
    pending = (*view.pending, *(m for m in new if m.at >= view.upto))
    return View(view.key, marks, view.upto, tuple(messages), view.at, view.answered, pending)


def _one(message: Any, marks: list[Cleared] | None) -> Any:  # noqa: ANN401 - untyped JSON
    return message if not marks else _apply(message, marks)


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
