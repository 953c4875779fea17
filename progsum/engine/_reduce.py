"""Cheap reduction: clear old, large tool results and tool inputs before any model call.

Tool output is most of an agent's context and the least of what it must remember: a 40 kB file
read twenty turns ago. Before the engine asks a summarizer for anything, it replaces large tool
results (and large tool-call inputs) that lie outside the verbatim tail with a one-line placeholder
saying what was removed and where the original is (the log, and the archive when there is one).
If that brings the context under the policy's target, no model call is made.

A message too large for the window (a 5 MB tool result, a pasted log, a huge first task message)
is *clipped* instead, wherever it is (the kept first message and the verbatim tail included): its
head and tail stay, with a placeholder between them naming the original in the log and the
archive and how to recall it. `clip` picks those blocks; `Reduction.clip_share` sets the limit.

Everything here is pure. `plan` and `clip` pick the blocks; the state records them as `Cleared`
marks (with the placeholder text decided once, so rendering stays byte-identical); `visible`
applies them to the effective messages for the model view. Clearing never removes a block, so a
tool call and its result stay paired, and it never touches a thinking block
(docs/thinking-rules.md, rules T1, T2, T5).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from progsum.engine._config import Config
from progsum.engine._measure import Decision, count
from progsum.engine._window import overflow
from progsum.messages._formats import MessageInfo, to_record
from progsum.messages._formats import field as get
from progsum.messages._responses import as_chat
from progsum.messages._transcript import plain_content
from progsum.policy._reduction import Reduction
from progsum.policy._tokens import TokenCounter
from progsum.state._cleared import OPENAI_CONTENT, Cleared
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.summary._schema import SummaryT as S

__all__ = ["Reduction", "clip", "clip_limit", "open_round", "plan", "reduce", "rounds"]


def plan(
    messages: Sequence[Any],
    infos: Sequence[MessageInfo],
    *,
    start: int,
    end: int,
    config: Reduction,
    counter: TokenCounter,
    done: frozenset[tuple[int, int]] = frozenset(),
    thread_id: str | None = None,
) -> tuple[Cleared, ...]:
    """The blocks to clear in ``messages[start:end]`` (log indices), oldest first.

    Args:
        messages: The whole log.
        infos: Its message infos.
        start: First log index that may be cleared (after the kept head and the summary).
        end: First index of the verbatim tail.
        config: The reduction settings.
        counter: Estimates the tokens saved.
        done: ``(index, block)`` pairs cleared already.
        thread_id: The conversation's thread, named in placeholders.
    """
    blocks = {i: _tool_blocks(messages[i], infos[i]) for i in range(start, len(messages))}
    results = [  # the most recent ones stay whole, those in the verbatim tail included
        (i, b) for i, parts in blocks.items() for b, kind, _, _ in parts if kind == "result"
    ]
    protected = set(results[len(results) - config.keep_results :]) if config.keep_results else set()
    names: dict[str, str] = {}  # tool name by call id, as of message i (real logs reuse ids)
    found: list[Cleared] = []
    for i in range(start, end):  # a safe cut keeps each result's call inside the segment
        if infos[i].calls:  # names by call id: only a message making calls has any
            names.update(zip(infos[i].calls, _names(as_chat(messages[i])), strict=False))
        for block, kind, call_id, text in blocks[i]:
            if kind == "text":
                continue
            if (i, block) in done or (i, block) in protected or len(text) < config.min_chars:
                continue
            if kind == "input" and not config.inputs:
                continue
            name = names.get(call_id, "") if kind == "result" else call_id
            if config.tools is not None and name not in config.tools:
                continue
            note = _placeholder(kind, name, len(text), i, thread_id)
            saved = max(0, counter.count_text(text) - counter.count_text(note))
            found.append(Cleared(i, block, note, len(text), saved))
    return tuple(found)


def clip(
    messages: Sequence[Any],
    infos: Sequence[MessageInfo],
    indices: Sequence[int],
    *,
    limit: int,
    counter: TokenCounter,
    done: frozenset[tuple[int, int]] = frozenset(),
    thread_id: str | None = None,
    totals: Sequence[int] | None = None,
    again: Mapping[tuple[int, int], Cleared] | None = None,
) -> tuple[Cleared, ...]:
    """Clip the messages of ``indices`` that hold more than ``limit`` tokens.

    Texts, tool results and tool inputs count together (thinking is never clipped). The result
    messages of one tool round count as one message (`rounds`): twenty parallel results are as
    large in OpenAI's shape, a ``tool`` message each, as in Anthropic's, one user message.

    Each of a message's blocks above its share of ``limit`` keeps its head and tail around a
    placeholder naming the original. When the share is smaller than that placeholder (hundreds
    of parallel results), a tool result becomes a one-line note instead (`_short_note`): the
    tool, the size and where to recall it, the least that keeps it paired with its call and says
    what it was. Thinking blocks are never clipped (their signature covers them). ``totals``
    (running per-message estimates) lets small messages be skipped unread.

    A block clipped before keeps its mark (and its bytes) and still counts toward its round,
    unless ``again`` holds its newest mark: a block of the newest round, which no request has
    sent yet (`open_round`), is clipped again from its original as its share shrinks. Its new
    mark's ``saved`` is what it saves beyond the mark it replaces, so the marks of a block still
    add up to what the block saves.
    """
    again = again or {}
    found: list[Cleared] = []
    for unit in rounds(infos, indices):
        if totals is not None and sum(totals[i + 1] - totals[i] for i in unit) <= limit:
            continue  # the whole message or round is within the limit (its estimate is cached)
        parts = [(i, part) for i in unit for part in _blocks(messages[i], infos[i], texts=True)]
        sizes = [counter.count_text(part[3]) for _, part in parts]
        if sum(sizes) <= limit:
            continue
        share = max(1, limit // len(parts))
        names: dict[str, str] | None = None  # the round's tool names, read when a note needs them
        for (i, (block, kind, call_id, text)), tokens in zip(parts, sizes, strict=True):
            if tokens <= share or ((i, block) in done and (i, block) not in again):
                continue
            name = call_id if kind == "input" else ""
            keep = max(1, int(len(text) * share / tokens * 0.45))  # ~45% head, ~45% tail
            note = _clip_note(kind, name, len(text), len(text) - 2 * keep, i, thread_id)
            if kind != "result" or counter.count_text(note) < share:
                shown, cut = f"{text[:keep]}\n{note}\n{text[-keep:]}", len(text) - 2 * keep
            else:  # the note alone is over the share: say what was there, nothing more
                if names is None:
                    names = _round_names(messages, infos, unit[0])
                shown, cut = _short_note(names.get(call_id, ""), len(text), i), len(text)
            before = again.get((i, block))
            was = tokens if before is None else counter.count_text(before.placeholder)
            saved = was - counter.count_text(shown)
            if saved > 0 and (before is None or before.placeholder != shown):
                found.append(Cleared(i, block, shown, cut, saved))
    return tuple(found)


def open_round(infos: Sequence[MessageInfo]) -> int:
    """Log index where the newest round's results begin, or the log's length if it has none.

    The results at the end of the log are a round no request has sent yet: an agent calls the
    model once every result of a round is in, and the model's reply ends the round.
    """
    start = len(infos)
    while start and infos[start - 1].is_result:
        start -= 1
    return start


def _round_names(
    messages: Sequence[Any], infos: Sequence[MessageInfo], first: int
) -> dict[str, str]:
    """Tool names by call id of the calls answered from log index ``first`` on."""
    call = first - 1
    if call < 0 or not infos[call].calls:
        return {}
    return dict(zip(infos[call].calls, _names(as_chat(messages[call])), strict=False))


def rounds(infos: Sequence[MessageInfo], indices: Sequence[int]) -> Iterator[list[int]]:
    """``indices`` grouped as the clip limit counts them, in order.

    Each message alone, except consecutive result messages (OpenAI ``tool`` messages,
    Responses outputs: the results of one tool round), which go together.
    """
    unit: list[int] = []
    for i in indices:
        if unit and i == unit[-1] + 1 and infos[i].is_result and infos[unit[-1]].is_result:
            unit.append(i)
            continue
        if unit:
            yield unit
        unit = [i]
    if unit:
        yield unit


# -- blocks ---------------------------------------------------------------------------------------


def _tool_blocks(message: Any, info: MessageInfo) -> list[tuple[int, str, str, str]]:  # noqa: ANN401 - messages are untyped JSON
    """`_blocks` of the Chat view of ``message``: none for a plain chat message (most), unread."""
    if plain_content(message) is not None:
        return []
    return _blocks(as_chat(message), info)


def _blocks(
    message: Any,  # noqa: ANN401 - messages are untyped JSON
    info: MessageInfo,
    *,
    texts: bool = False,
) -> list[tuple[int, str, str, str]]:
    """``(block, kind, call id or tool name, text)`` of each tool result or input in a message.

    ``kind`` is ``result`` (the id is the call's id) or ``input`` (the id is the tool's name);
    with ``texts``, also ``text`` for string content and text blocks (never thinking).
    """
    found: list[tuple[int, str, str, str]] = []
    content = get(message, "content")
    if texts and info.role != "tool" and isinstance(content, str):
        found.append((OPENAI_CONTENT, "text", "", content))
    if info.role == "tool":
        content = get(message, "content", "")
        found.append(
            (OPENAI_CONTENT, "result", str(get(message, "tool_call_id", "")), _text(content))
        )
        return found
    for position, call in enumerate(get(message, "tool_calls") or ()):
        function = get(call, "function")
        arguments = get(function, "arguments", "")
        name = str(get(function, "name", "") or "")
        found.append((position, "input", name, _text(arguments)))
    content = get(message, "content")
    if isinstance(content, Sequence) and not isinstance(content, str):
        for position, block in enumerate(content):
            kind = get(block, "type")
            if kind == "tool_result":
                call_id = str(get(block, "tool_use_id", ""))
                found.append((position, "result", call_id, _text(get(block, "content", ""))))
            elif kind == "tool_use":
                name = str(get(block, "name", "") or "")
                found.append((position, "input", name, _text(get(block, "input", {}))))
            elif kind == "text" and texts and not get(message, "tool_calls"):
                found.append((position, "text", "", str(get(block, "text", "") or "")))
    return found


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(to_record(value), ensure_ascii=False, sort_keys=True)


def _names(message: Any) -> list[str]:  # noqa: ANN401 - messages are untyped JSON
    calls = get(message, "tool_calls") or ()
    if calls:
        return [str(get(get(call, "function"), "name", "") or "") for call in calls]
    content = get(message, "content")
    if isinstance(content, Sequence) and not isinstance(content, str):
        return [str(get(b, "name", "") or "") for b in content if get(b, "type") == "tool_use"]
    return []


def _placeholder(kind: str, name: str, chars: int, index: int, thread_id: str | None) -> str:
    what = f"output of {name}" if kind == "result" and name else "tool output"
    if kind == "input":
        what = f"input to {name}" if name else "tool input"
    where = f'thread "{thread_id}", ' if thread_id else ""
    return (
        f"[progsum cleared this {what}: {chars:,} characters, kept in full in the conversation "
        f"log ({where}message {index + 1}). Run the tool again or recall message {index + 1} if "
        "it is needed.]"
    )


def _short_note(name: str, chars: int, index: int) -> str:
    """The smallest note for a tool result left out whole: the tool, its size, how to recall it."""
    return f"[{name + ' ' if name else 'tool '}output, {chars:,} chars; recall message {index + 1}]"


def _clip_note(  # noqa: PLR0917 - a private formatter of one placeholder
    kind: str, name: str, chars: int, cut: int, index: int, thread: str | None
) -> str:
    what = {"result": "tool output", "input": f"input to {name}" if name else "tool input"}.get(
        kind, "message"
    )
    where = f'thread "{thread}", ' if thread else ""
    return (
        f"[progsum clipped {cut:,} of the {chars:,} characters of this {what} here: it is too "
        f"large for the context window. The original is kept whole in the conversation log and "
        f"the archive ({where}message {index + 1}); recall message {index + 1} to read it.]"
    )


# -- the stage ------------------------------------------------------------------------------------


def clip_limit(config: Config[Any]) -> int:
    """Tokens above which one text, tool result or tool input is clipped in the model view."""
    assert config.reduction is not None  # checked by the caller  # noqa: S101
    policy = config.policy
    window = policy.input_window
    base = window if window is not None else policy.target_limit
    return max(64, int(base * config.reduction.clip_share))


def reduce(
    config: Config[S],
    state: ConversationState[S],
    decision: Decision,
    low: int,
    end: int,
    *,
    clear: bool = True,
) -> ConversationState[S] | None:
    """Clip oversized messages in view and clear old tool data in ``log[low:end]``.

    The pinned round is cleared too. Returns the new state with a ``reduced`` event, or None if
    nothing qualifies or the placeholders would cost what they replace.
    """
    assert config.reduction is not None  # checked by the caller  # noqa: S101
    done = frozenset((c.at, c.block) for c in state.cleared_in_view)  # only these can recur
    start = open_round(state.infos)  # its blocks are clipped again as the round grows
    again = {(c.at, c.block): c for c in state.cleared_in_view if c.at >= start}
    limit = clip_limit(config)
    clipped = clip(
        state.log,
        state.infos,
        state.kept,
        limit=limit,
        counter=config.counter,
        done=done,
        thread_id=state.thread_id,
        totals=state.running_totals(config.counter),
        again=again,
    )
    done |= {(c.at, c.block) for c in clipped}
    marks: tuple[Cleared, ...] = ()
    if clear:
        spans = [(low, end)] if state.pinned is None else [state.pinned, (low, end)]
        for start, stop in spans:
            marks += plan(
                state.log,
                state.infos,
                start=start,
                end=stop,
                config=config.reduction,
                counter=config.counter,
                done=done,
                thread_id=state.thread_id,
            )
    if not marks and not clipped:
        return None
    every = (*clipped, *marks)
    reduced = state.record(None, cleared=every)
    tokens_after, _ = count(config, reduced)
    if tokens_after >= decision.tokens:
        return None
    event = CompactionEvent(
        number=len(state.events) + 1,
        outcome="reduced",
        at=config.clock(),
        reason=f"{decision.reason}; {_what(clipped, marks, limit)}, kept whole in the log",
        tokens_before=decision.tokens,
        tokens_after=tokens_after,
        method=decision.method,
        cleared=tuple(sorted({c.at for c in every})),
        over_window=overflow(config, reduced),
    )
    return state.record(event, cleared=every)


def _what(clipped: tuple[Cleared, ...], marks: tuple[Cleared, ...], limit: int) -> str:
    """What a reduction did, for its event's reason."""
    what = []
    if clipped:
        what.append(
            f"clipped {len(clipped)} oversized block(s) ({sum(c.chars for c in clipped):,} "
            f"characters) above {limit:,} tokens each"
        )
    if marks:
        what.append(
            f"cleared {len(marks)} old tool result(s) and input(s) "
            f"({sum(c.chars for c in marks):,} characters) outside the verbatim tail"
        )
    return " and ".join(what)
