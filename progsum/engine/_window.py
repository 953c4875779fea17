"""The window guarantee's report: whether a state fits the input window, and if not, why.

The line gives the parts that hold the context (header, kept first message, newest tool round,
the largest other kept messages), names the one that is over, and what would help.
"""

from __future__ import annotations

from typing import Any

from progsum.engine._config import Config, conversation_kind
from progsum.engine._cut import head_end
from progsum.engine._measure import count, counted
from progsum.policy._policy import default_header_limit
from progsum.state._conversation import ConversationState

__all__ = ["header_room", "newest_round", "overflow", "sizes"]


def sizes(config: Config[Any], state: ConversationState[Any]) -> list[tuple[int, int]]:
    """``(log index, counted tokens)`` of each message in view, cleared blocks subtracted."""
    return [(i, counted(config, state, size)) for i, size in _estimates(config, state)]


def _estimates(config: Config[Any], state: ConversationState[Any]) -> list[tuple[int, int]]:
    """``(log index, estimated tokens)`` of each message in view, cleared blocks subtracted."""
    totals = state.running_totals(config.counter)
    saved: dict[int, int] = {}
    for mark in state.cleared_in_view:
        saved[mark.at] = saved.get(mark.at, 0) + mark.saved
    return [(i, totals[i + 1] - totals[i] - saved.get(i, 0)) for i in state.kept]


def overflow(config: Config[Any], state: ConversationState[Any]) -> str | None:
    """None when ``state``'s context fits the model's input window; else one line why.

    The line gives each part's size and names the part that is over: the kept first message
    and the newest tool round (never folded), the header (over the room they leave it), or the
    other kept messages.
    """
    window = config.policy.input_window
    if window is None:
        return None
    tokens, _ = count(config, state)
    if tokens <= window:
        return None
    raw = _estimates(config, state)
    shown = [(index, counted(config, state, size)) for index, size in raw]
    first = _first(config, state)
    newest = newest_round(state)
    # each part counted as one sum (one rounding), as the context's own count is
    head = counted(config, state, sum(size for index, size in raw if index < first))
    round_tokens = counted(config, state, sum(size for index, size in raw if index >= newest))
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
    if head + round_tokens > window:
        return (
            f"{what}; the kept first message and the newest tool round alone exceed the "
            "window (a round's calls stay with their results, thinking blocks are never cut), "
            "so nothing progsum may fold or clip "
            "makes it fit: use a model with a larger window or start a new conversation"
        )
    if head + round_tokens + header > window:
        room = window - head - round_tokens
        return f"{what}; {_header_over(config, state, header, room)}"
    return (
        f"{what}; lower keep, lower Reduction.clip_share or min_chars, or raise the "
        "trigger's distance to the window"
    )


def header_room(config: Config[Any], state: ConversationState[Any]) -> int | None:
    """Counted tokens the input window leaves the header besides what no fold removes.

    That is the kept first message and the newest tool round (clipped as they are in view);
    None without a window. At most zero when they alone exceed it (the documented exception).
    """
    window = config.policy.input_window
    if window is None:
        return None
    first = _first(config, state)
    newest = newest_round(state)
    raw = _estimates(config, state)
    return window - counted(
        config, state, sum(size for index, size in raw if index < first or index >= newest)
    )


def _first(config: Config[Any], state: ConversationState[Any]) -> int:
    """Where the kept head ends: the first message and the system messages before it."""
    if state.cutoff:
        return state.head_end
    return head_end(state.infos, keep_first=config.policy.keep_first)


def _header_over(config: Config[Any], state: ConversationState[Any], header: int, room: int) -> str:
    """Why a ``header``-token header is over the ``room`` the window leaves it, and the remedy."""
    policy = config.policy.in_conversation(conversation_kind(config, state))
    limit = policy.header_limit
    suggest = max(1, min(default_header_limit(policy.input_window, policy.trigger), room // 2))
    where = (
        f"the header is what is over: the window leaves it {room:,} tokens besides the kept "
        "first message and the newest tool round"
    )
    if limit is None:
        return (
            f"{where}, and the policy gives it no budget (header_budget=None); give it one, "
            f"e.g. header_budget=('tokens', {suggest}) (--header-budget {suggest})"
        )
    if header > limit:
        return (
            f"{where}, and it is over its budget of {limit:,} because what consolidation keeps "
            "(binding items, within binding_budget when it has one; values the user stated, "
            "until the context reaches the trigger) alone exceeds it: give binding_budget a "
            "bound, use a model with a larger window or start a new conversation"
        )
    return (
        f"{where}, less than its budget of {limit:,}; lower header_budget to "
        f"('tokens', {suggest}) (--header-budget {suggest}) or use a model with a larger window"
    )


def newest_round(state: ConversationState[Any]) -> int:
    """Log index where the newest tool round starts (its call message), or the last message."""
    infos = state.infos
    k = len(state) - 1
    while k > 0 and infos[k].is_result:
        k -= 1
    return max(k, 0)
