"""The kept messages as the model sees them: placeholders, recall blocks, repeats left out.

Cleared tool data shows as placeholders, each recall block is quoted before the message it
answers, and a repeated answer to one call is left out.

The engine's reduction stage decides what to clear (`progsum.engine._reduce`) and the state
records each decision as a `Cleared` mark; the recall stage chooses excerpts for a person's new
message and the state keeps each block with its message until the next fold (`Quote`). This
module applies both. The view is built once per change of the state, not per render: it is
cached on the log that the states of one chain share, keyed by what decides it (the cutoff, the
kept head, the pinned round, the marks and quotes in view). A longer state of the chain extends
the cached view by its new messages, a new mark or quote re-renders only its own message, and a
state rendered again costs a copy of the list.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from progsum.messages._formats import THINKING_BLOCKS, MessageInfo, to_record
from progsum.messages._responses import is_item, with_placeholders
from progsum.state._cleared import CLEARED_KEY, OPENAI_CONTENT, Cleared
from progsum.state._edits import Edits

__all__ = ["Fresh", "Quote", "View", "fresh", "quoted", "shown"]

Key = tuple[int, int, tuple[int, int] | None]
"""What decides which messages are kept: the cutoff, the kept head's end, the pinned round."""
Quote = tuple[int, str]
"""A recall block quoted at the start of log message ``[0]``: ``(index, block text)``."""


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
    quotes: tuple[Quote, ...] = ()
    """The recall blocks applied, by message (the state's `quotes`)."""


def shown(
    log: Sequence[Any],
    infos: Sequence[MessageInfo],
    key: Key,
    marks: tuple[Cleared, ...],
    length: int,
    *,
    cached: View | None,
    quotes: tuple[Quote, ...] = (),
) -> View:
    """The view of ``log[:length]`` kept under ``key`` with ``marks`` and ``quotes`` applied.

    ``cached`` is reused when only messages, marks or quotes were added since. A tool result
    repeated for one call (the same id answered twice in one round) is shown once: the first
    answer stays, later copies are left out (the log keeps them).
    """
    if cached is None or cached.key != key:
        return _extended(_empty(key, marks, quotes), log, infos, length)
    same_marks = cached.marks is marks or cached.marks == marks
    same_quotes = cached.quotes is quotes or cached.quotes == quotes
    if not (same_marks and same_quotes):
        if not (_grown(cached.marks, marks) and _grown(cached.quotes, quotes)):
            return _extended(_empty(key, marks, quotes), log, infos, length)
        cached = _marked(cached, log, infos, marks, quotes)
    if length < cached.upto:
        end = bisect.bisect_left(cached.at, length)
        return View(
            key, marks, length, cached.messages[:end], cached.at[:end], frozenset(), (), quotes
        )
    return _extended(cached, log, infos, length)


def _grown(old: tuple[object, ...], new: tuple[object, ...]) -> bool:
    """Whether ``new`` is ``old`` with items added at its end."""
    return len(new) >= len(old) and new[: len(old)] == old


def _empty(key: Key, marks: tuple[Cleared, ...], quotes: tuple[Quote, ...]) -> View:
    return View(key, marks, 0, (), (), frozenset(), marks, quotes)


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
    blocks = {index: text for index, text in view.quotes if index >= view.upto}
    messages: list[Any] = []
    at: list[int] = []
    answered = set(view.answered)
    for index in _kept(view.key, view.upto, length):
        message = _one(log[index], by_index.get(index), blocks.get(index))
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
        view.quotes,
    )


def _marked(
    view: View,
    log: Sequence[Any],
    infos: Sequence[MessageInfo],
    marks: tuple[Cleared, ...],
    quotes: tuple[Quote, ...],
) -> View:
    """``view`` with ``marks`` and ``quotes`` applied, of which the view's own are prefixes."""
    new = marks[len(view.marks) :]
    seen = {m.at for m in new if m.at < view.upto}
    seen |= {index for index, _ in quotes[len(view.quotes) :] if index < view.upto}
    blocks = dict(quotes)
    messages = list(view.messages)
    for index in seen:
        position = bisect.bisect_left(view.at, index)
        if position == len(view.at) or view.at[position] != index:
            continue  # a repeated answer the view leaves out
        message = _one(log[index], [m for m in marks if m.at == index], blocks.get(index))
        info = infos[index]
        if info.is_result and len(set(info.results)) < len(info.results):
            message = _first_answers(message)
        messages[position] = message
    pending = (*view.pending, *(m for m in new if m.at >= view.upto))
    return View(
        view.key, marks, view.upto, tuple(messages), view.at, view.answered, pending, quotes
    )


def _one(message: Any, marks: list[Cleared] | None, block: str | None) -> Any:  # noqa: ANN401 - untyped JSON
    shown = message if not marks else _apply(message, marks)
    return shown if not block else quoted(shown, block)


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


# -- thinking bound to a changed prefix -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fresh:
    """A `View` without the thinking produced under a prefix progsum has changed since.

    Thinking blocks (``thinking``, ``redacted_thinking``) of a stale Anthropic message are left
    out of it, and a message left with no content goes (`progsum.state._edits`). Responses
    reasoning items are never left out (`progsum.render.render_responses` says why).
    """

    source: tuple[Key, tuple[Cleared, ...], tuple[Quote, ...]]
    """The key, marks and quotes of the view it was made from."""
    edits: Edits
    upto: int
    """Messages of the log read (the view's `View.upto`)."""
    messages: tuple[Any, ...]
    at: tuple[int, ...]
    dropped: int
    """Thinking blocks and reasoning items left out."""


def fresh(view: View, infos: Sequence[MessageInfo], edits: Edits, *, cached: Fresh | None) -> Fresh:
    """``view`` without stale reasoning, reusing ``cached`` when the view only grew since.

    Messages logged after the last edit are never stale, so a longer view of the same key, marks
    and quotes extends ``cached`` by its new messages as they are.
    """
    source = (view.key, view.marks, view.quotes)
    if (
        cached is not None
        and cached.edits == edits
        and cached.upto <= view.upto
        and (cached.source is source or cached.source == source)
    ):
        if cached.upto == view.upto:
            return cached
        start = bisect.bisect_left(view.at, cached.upto)
        return Fresh(
            source,
            edits,
            view.upto,
            (*cached.messages, *view.messages[start:]),
            (*cached.at, *view.at[start:]),
            cached.dropped,
        )
    messages: list[Any] = []
    at: list[int] = []
    dropped = 0
    for message, index in zip(view.messages, view.at, strict=True):
        shown = message
        if infos[index].has_thinking and edits.stale(index):
            kept, left_out = _without_thinking(message)
            dropped += left_out
            if kept is None:
                continue
            shown = kept
        messages.append(shown)
        at.append(index)
    return Fresh(source, edits, view.upto, tuple(messages), tuple(at), dropped)


def _without_thinking(message: Any) -> tuple[dict[str, Any] | None, int]:  # noqa: ANN401 - untyped JSON
    """``message`` without its thinking blocks (a copy), and how many went; None if none is left."""
    copy: dict[str, Any] = to_record(message)
    content = copy.get("content")
    if not isinstance(content, list):
        return copy, 0
    kept = [b for b in content if not (isinstance(b, dict) and b.get("type") in THINKING_BLOCKS)]
    if not kept:
        return None, len(content)
    copy["content"] = kept
    return copy, len(content) - len(kept)
