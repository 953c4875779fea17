"""The window guarantee's report: whether a state fits the input window, and if not, why.

The line names the parts that hold the context (header, kept first message, newest tool round,
the largest other kept messages) and what would help.
"""

from __future__ import annotations

from typing import Any

from progsum.engine.config import Config
from progsum.engine.cut import head_end
from progsum.engine.measure import count, counted
from progsum.state.conversation import ConversationState

__all__ = ["overflow", "sizes"]


def sizes(config: Config[Any], state: ConversationState[Any]) -> list[tuple[int, int]]:
    """``(log index, counted tokens)`` of each message in view, cleared blocks subtracted."""
    totals = state.running_totals(config.counter)
    saved: dict[int, int] = {}
    for mark in state.cleared_in_view:
        saved[mark.at] = saved.get(mark.at, 0) + mark.saved
    return [
        (i, counted(config, state, totals[i + 1] - totals[i] - saved.get(i, 0))) for i in state.kept
    ]


def overflow(config: Config[Any], state: ConversationState[Any]) -> str | None:
    """None when ``state``'s context fits the model's input window; else one line why."""
    window = config.policy.input_window
    if window is None:
        return None
    tokens, _ = count(config, state)
    if tokens <= window:
        return None
    shown = sizes(config, state)
    first = (
        state.head_end
        if state.cutoff
        else head_end(state.infos, keep_first=config.policy.keep_first)
    )
    head = sum(size for index, size in shown if index < first)
    newest = newest_round(state)
    round_tokens = sum(size for index, size in shown if index >= newest)
    header = counted(config, state, state.header_tokens(config.counter))
    largest = sorted(
        ((size, index) for index, size in shown if first <= index < newest),
        reverse=True,
    )[:3]
    named = ", ".join(f"message {index + 1} ({size:,})" for size, index in largest)
    what = (
        f"the context is {tokens:,} tokens, over the {window:,}-token input window: the "
        f"header {header:,}, the kept first message {head:,}, the newest tool round "
        f"(messages {newest + 1}-{len(state)}) {round_tokens:,}"
    )
    if named:
        what += f", the largest other kept messages {named}"
    if head + round_tokens + header > window:
        return (
            f"{what}; the kept first message and the newest tool round alone exceed the "
            "window (thinking blocks are never cut), so nothing progsum may fold or clip "
            "makes it fit: use a model with a larger window or start a new conversation"
        )
    return (
        f"{what}; lower keep, lower Reduction.clip_share or min_chars, or raise the "
        "trigger's distance to the window"
    )


def newest_round(state: ConversationState[Any]) -> int:
    """Log index where the newest tool round starts (its call message), or the last message."""
    infos = state.infos
    k = len(state) - 1
    while k > 0 and infos[k].is_result:
        k -= 1
    return max(k, 0)
