"""The safe split: never between a call and its results, never inside a thinking tool turn."""

from __future__ import annotations

from typing import Any

from progsum import ConversationState
from progsum.engine._cut import find_cut, head_end, is_safe_cut
from progsum.policy._tokens import HeuristicCounter
from tests.conversations import airline_support, coding_session, trip_planning

COUNTER = HeuristicCounter()


def cut(messages: list[dict[str, Any]], keep: int, low: int = 1) -> int | None:
    """The cut for a tail of at least ``keep`` messages."""
    state = ConversationState(messages)
    return find_cut(state.infos, state.running_totals(COUNTER), low=low, keep=("messages", keep))


def test_plain_conversation_cuts_at_natural_point() -> None:
    """With no tools, the tail is exactly the last ``keep`` messages."""
    messages = trip_planning(5)
    assert cut(messages, 4) == len(messages) - 4


def test_cut_moves_back_from_a_tool_result() -> None:
    """A natural cut on a tool result moves earlier, before the call: keep more, not less."""
    messages = coding_session(2)
    infos = ConversationState(messages).infos
    natural = len(messages) - 3  # lands on a tool result
    assert infos[natural].is_result
    j = cut(messages, 3)
    assert j is not None
    assert j < natural
    assert not infos[j].is_result


def test_parallel_openai_results_stay_with_their_call() -> None:
    """Between two parallel OpenAI tool results there is no cut; the tail starts at the call."""
    messages = airline_support(2)
    state = ConversationState(messages)
    for j in range(1, len(messages)):
        if state.infos[j].role == "tool":
            assert not is_safe_cut(state.infos, j)
    start = cut(messages, 5)
    assert start is not None
    assert state.infos[start].role in ("assistant", "user")
    tail = messages[start:]
    for position, message in enumerate(tail):
        if message.get("tool_calls"):
            ids = [c["id"] for c in message["tool_calls"]]
            following = [m["tool_call_id"] for m in tail[position + 1 : position + 1 + len(ids)]]
            assert following == ids


def test_long_tool_only_stretch_still_cuts_between_rounds() -> None:
    """Hundreds of tool rounds without a human turn still cut, between complete rounds."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Refactor everything."}]
    for n in range(300):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {"n": n}}],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}],
            }
        )
    j = cut(messages, 8)
    assert j == len(messages) - 8  # lands on an assistant call: a round boundary
    assert messages[j]["role"] == "assistant"


def test_non_interleaved_thinking_turn_is_not_cut_inside() -> None:
    """An ongoing tool turn whose only thinking block is on its first message stays whole."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "next task"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "s"},
                {"type": "tool_use", "id": "a", "name": "f", "input": {}},
            ],
        },
    ]
    for n in range(6):
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "a" if n == 0 else f"b{n}",
                        "content": "r",
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"b{n + 1}", "name": "f", "input": {}}],
            }
        )
    assert cut(messages, 4) == 3  # the whole turn is kept, from its thinking message on
    assert cut(messages, 4, low=3) is None


def test_interleaved_thinking_turn_cuts_where_a_message_brings_its_own_thinking() -> None:
    """With thinking on every assistant message, the tail may start mid-turn at such a message."""
    messages = coding_session(3)
    state = ConversationState(messages)
    j = cut(messages, 6)
    assert j is not None
    assert state.infos[j].role == "assistant"
    assert state.infos[j].thinking_first


def test_no_safe_cut_returns_none() -> None:
    """When everything after the head is one call and its results, nothing can be folded."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]},
    ]
    assert cut(messages, 1) is None


def test_keep_tokens_keeps_at_least_that_many() -> None:
    """keep=('tokens', n) keeps the shortest tail holding at least n estimated tokens."""
    messages = trip_planning(10)
    state = ConversationState(messages)
    totals = state.running_totals(COUNTER)
    j = find_cut(state.infos, totals, low=1, keep=("tokens", 300))
    assert j is not None
    assert totals[-1] - totals[j] >= 300
    assert totals[-1] - totals[j + 1] < 300


def test_head_keeps_system_messages_and_first_task() -> None:
    """The head is the leading system messages plus, with keep_first, the first user message."""
    infos = ConversationState(airline_support(1)).infos
    assert head_end(infos, keep_first=True) == 2
    assert head_end(infos, keep_first=False) == 1
    assert head_end(ConversationState(trip_planning(1)).infos, keep_first=True) == 1
