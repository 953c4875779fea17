"""The message adapter: format detection, validation errors, positional pairing, thinking."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import TextBlock, ToolUseBlock

from progsum import ConversationState, MessageFormatError
from progsum.messages._formats import parts
from tests.conversations import airline_support, coding_session, trip_planning


def test_plain_text_conversation_fits_either_format() -> None:
    """A conversation of plain strings is neither Anthropic nor OpenAI until a message shows it."""
    state = ConversationState(trip_planning(2))
    assert state.format is None
    assert state.format_evidence == "no message has shown a format yet"


def test_anthropic_blocks_decide_the_format() -> None:
    """tool_use/thinking blocks mark the conversation as Anthropic, with the evidence."""
    state = ConversationState(coding_session(1))
    assert state.format == "anthropic"
    assert state.format_evidence == "message 1: it has a 'thinking' block"


def test_openai_roles_decide_the_format() -> None:
    """A system role or tool_calls mark the conversation as OpenAI."""
    state = ConversationState(airline_support(1))
    assert state.format == "openai"
    assert "role 'system'" in state.format_evidence


def test_mixing_formats_names_both_messages() -> None:
    """Appending an OpenAI message to an Anthropic conversation says which messages and why."""
    state = ConversationState(coding_session(1))
    bad = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {}}]}
    with pytest.raises(MessageFormatError) as caught:
        state.append(bad)
    message = str(caught.value)
    assert caught.value.index == len(state)
    assert "OpenAI format (it has 'tool_calls')" in message
    assert "message 1 is Anthropic format" in message
    assert "convert" in message


def test_one_message_mixing_formats_is_rejected() -> None:
    """A single message with OpenAI tool_calls and an Anthropic tool_use block is an error."""
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
        "content": [{"type": "tool_use", "id": "b", "name": "f", "input": {}}],
    }
    with pytest.raises(MessageFormatError, match="mixes formats"):
        ConversationState([{"role": "user", "content": "hi"}, message])


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        pytest.param({"content": "hi"}, "has no 'role'", id="no-role"),
        pytest.param({"role": "robot", "content": "hi"}, "unknown role 'robot'", id="unknown-role"),
        pytest.param(
            {"role": "function", "content": "x"}, "legacy OpenAI 'function'", id="function-role"
        ),
        pytest.param({"role": "user", "content": 42}, "content is a int", id="int-content"),
        pytest.param(
            {"role": "user", "content": {"text": "x"}}, "content is a dict", id="dict-content"
        ),
        pytest.param({"role": "user"}, "has no 'content'", id="no-content"),
        pytest.param(
            {"role": "user", "content": [{"text": "x"}]},
            "block 0 has no 'type'",
            id="untyped-block",
        ),
        pytest.param("hello", "got str", id="not-a-dict"),
        pytest.param(
            {
                "role": "user",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
            },
            "tool_use in a 'user' message",
            id="tool-use-in-user",
        ),
        pytest.param(
            {"role": "tool", "content": "x"},
            "without a string 'tool_call_id'",
            id="tool-without-id",
        ),
        pytest.param(
            {"role": "user", "content": "x", "tool_calls": []},
            "only assistant messages make calls",
            id="user-tool-calls",
        ),
    ],
)
def test_malformed_messages_raise_with_index_and_fix(message: Any, fragment: str) -> None:
    """Each kind of malformed message raises MessageFormatError naming the index and the problem."""
    with pytest.raises(MessageFormatError) as caught:
        ConversationState([{"role": "user", "content": "task"}, message])
    assert caught.value.index == 1
    assert str(caught.value).startswith("message 1: ")
    assert fragment in str(caught.value)


def test_tool_result_without_call_is_rejected() -> None:
    """A tool result whose call is not in the message right before it is an error naming both."""
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "x", "content": "1"}],
    }
    with pytest.raises(MessageFormatError, match="message 0 before it made no tool calls"):
        ConversationState([{"role": "user", "content": "task"}, result])
    with pytest.raises(MessageFormatError, match="it is the first message"):
        ConversationState([result])


def test_tool_result_for_another_call_is_rejected() -> None:
    """A result answering an id the previous call message did not make is an error."""
    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}],
    }
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "b", "content": ""}],
    }
    with pytest.raises(MessageFormatError, match=r"answers tool call 'b'.*made \['a'\]"):
        ConversationState([{"role": "user", "content": "task"}, call, result])


def test_reused_ids_pair_by_position() -> None:
    """The same call id used in two rounds pairs with the results right after each call."""
    state = ConversationState(airline_support(3))
    tool_infos = [info for info in state.infos if info.role == "tool"]
    assert all(info.results for info in tool_infos)
    assert [info.results for info in state.infos].count(("call_same",)) == 3


def test_openai_tool_after_user_message_is_rejected() -> None:
    """An OpenAI tool message separated from its call by a user message is an error."""
    messages = airline_support(1)[:3]  # system, user, assistant(call_same)
    messages.append({"role": "user", "content": "hurry"})
    messages.append({"role": "tool", "tool_call_id": "call_same", "content": "{}"})
    with pytest.raises(MessageFormatError, match="message 3 before it made no tool calls"):
        ConversationState(messages)


def test_unknown_block_types_are_opaque_content() -> None:
    """An unknown block type is accepted and counted, not rejected."""
    state = ConversationState(
        [{"role": "user", "content": [{"type": "hologram", "payload": "x" * 400}]}]
    )
    assert state.format is None
    assert [kind for kind, _ in parts(state.log[0])] == ["data"]


def test_sdk_block_objects_are_read_like_dicts() -> None:
    """Anthropic SDK content blocks (response.content) work as message content."""
    reply = {
        "role": "assistant",
        "content": [
            TextBlock(type="text", text="Let me check."),
            ToolUseBlock(type="tool_use", id="toolu_9", name="bash", input={"command": "ls"}),
        ],
    }
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "a.py"}],
    }
    state = ConversationState([{"role": "user", "content": "list files"}, reply, result])
    assert state.infos[1].calls == ("toolu_9",)
    assert state.log[1] is reply
    assert ("data", '{"command": "ls"}') in list(parts(reply))


def test_thinking_turns_are_tracked() -> None:
    """Assistant turns that showed thinking are marked until the next human message."""
    state = ConversationState(coding_session(1))
    infos = state.infos
    assert infos[1].thinking_first
    assert infos[1].turn_thinking
    assert infos[2].turn_thinking  # the tool result continues the turn
    assert not infos[-1].turn_thinking  # the closing human message starts a new turn
