"""Saved and loaded states send the same request bytes, for dicts and both SDKs' objects.

The oracle is the SDK itself: each request is built by a real ``anthropic.Anthropic`` (or
``openai.OpenAI``) client over ``httpx2.MockTransport``, and the bytes it sends before saving are
compared with the bytes after `ConversationState.to_json`/`from_json` and after `SQLiteStore`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import Message as AnthropicMessage
from anthropic.types import MessageParam, TextBlockParam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from progsum import ConversationState, render_anthropic, render_openai
from progsum.errors import MessageFormatError
from progsum.messages._formats import to_record
from progsum.render._breakpoints import MAX_BREAKPOINTS, count
from progsum.store._sqlite import SQLiteStore

TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=30)
MAYBE_NULL = st.sampled_from(["absent", "null"])


def _optional(block: dict[str, Any], key: str, how: str) -> dict[str, Any]:
    """``block`` with ``key`` left out, or sent as null, as the API may do."""
    return block if how == "absent" else {**block, key: None}


@st.composite
def anthropic_reply(draw: st.DrawFn) -> AnthropicMessage:
    """A Messages API reply parsed by the SDK: text, tool_use and thinking blocks."""
    blocks: list[dict[str, Any]] = []
    if draw(st.booleans()):
        blocks.append({"type": "thinking", "thinking": draw(TEXT), "signature": "sig"})
    blocks.append(_optional({"type": "text", "text": draw(TEXT)}, "citations", draw(MAYBE_NULL)))
    for n in range(draw(st.integers(0, 2))):
        tool = {
            "type": "tool_use",
            "id": f"toolu_{n}",
            "name": "search",
            "input": {"q": draw(TEXT)},
        }
        blocks.append(_optional(tool, "caller", draw(MAYBE_NULL)))
    return AnthropicMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-5-5",
            "content": blocks,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


@st.composite
def openai_reply(draw: st.DrawFn) -> Any:
    """A Chat Completions reply's message parsed by the SDK, nullable fields null or absent."""
    message: dict[str, Any] = {"role": "assistant", "content": draw(TEXT)}
    for key in ("refusal", "annotations", "audio", "function_call"):
        message = _optional(message, key, draw(MAYBE_NULL))
    if draw(st.booleans()):
        call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        message["tool_calls"] = [call]
    else:
        message = _optional(message, "tool_calls", draw(MAYBE_NULL))
    completion = ChatCompletion.model_validate(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-5-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    )
    return completion.choices[0].message


def anthropic_bytes(state: ConversationState[Any]) -> bytes:
    """The request body the Anthropic SDK sends for the rendered state."""
    sent: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        return httpx2.Response(400, json={"type": "error", "error": {"type": "x", "message": "x"}})

    client = anthropic.Anthropic(
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    system, messages = render_anthropic(state, system="You are a travel agent.")
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(
            model="claude-haiku-5-5",
            max_tokens=10,
            system=cast("list[TextBlockParam]", system),
            messages=cast("list[MessageParam]", messages),
        )
    return sent[0]


def openai_bytes(state: ConversationState[Any]) -> bytes:
    """The request body the OpenAI SDK sends for the rendered state."""
    sent: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        return httpx2.Response(400, json={"error": {"message": "x", "type": "x"}})

    client = openai.OpenAI(
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    messages = cast("list[ChatCompletionMessageParam]", render_openai(state))
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="gpt-5-mini", messages=messages)
    return sent[0]


def reloaded(state: ConversationState[Any], tmp: Path) -> list[ConversationState[Any]]:
    """The state read back from JSON text and from a SQLite store."""
    with SQLiteStore(tmp / "state.db") as store:
        store.save(state, expected_version=None)
        stored = store.load("t1").state
    return [ConversationState.from_json(state.to_json()), stored]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(replies=st.lists(anthropic_reply(), min_size=1, max_size=3))
def test_anthropic_sdk_objects_round_trip_to_the_same_request_bytes(
    replies: list[AnthropicMessage], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A log holding Anthropic SDK content blocks sends identical bytes after a reload."""
    messages: list[Any] = [{"role": "user", "content": "Plan a trip."}]
    for reply in replies:
        messages += [
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": "Go on."},
        ]
    state = ConversationState(messages, thread_id="t1")
    before = anthropic_bytes(state)
    for again in reloaded(state, tmp_path_factory.mktemp("db")):
        assert anthropic_bytes(again) == before


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(replies=st.lists(openai_reply(), min_size=1, max_size=3))
def test_openai_sdk_objects_round_trip_to_the_same_request_bytes(
    replies: list[Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A log holding OpenAI ChatCompletionMessage objects sends identical bytes after a reload."""
    messages: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    for reply in replies:
        messages.append(reply)
        if reply.tool_calls:
            messages.append({"role": "tool", "tool_call_id": "call_1", "content": "ok"})
        messages.append({"role": "user", "content": "Go on."})
    state = ConversationState(messages, thread_id="t1")
    before = openai_bytes(state)
    for again in reloaded(state, tmp_path_factory.mktemp("db")):
        assert openai_bytes(again) == before


def test_plain_dicts_round_trip_to_the_same_bytes(tmp_path: Path) -> None:
    """Dict messages, None values included, are saved exactly as given."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Hi", "name": None},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello", "citations": None}]},
        {"role": "user", "content": "Go on."},
    ]
    state = ConversationState(messages, thread_id="t1")
    for again in reloaded(state, tmp_path):
        assert list(again.log) == messages
        assert anthropic_bytes(again) == anthropic_bytes(state)


def test_an_object_that_cannot_be_serialised_is_refused_by_name() -> None:
    """An unknown object in a message is an error naming its type and path, not a repr."""

    class Opaque:
        pass

    state = ConversationState(
        [{"role": "user", "content": [{"type": "text", "text": "x", "meta": Opaque()}]}]
    )
    with pytest.raises(MessageFormatError, match=r"message 0: .*\['meta'\] holds a .*Opaque"):
        state.to_json()


# -- cache breakpoints on the agent's own request ------------------------------------------------


def chat(turns: int) -> ConversationState[Any]:
    """A chat with ``turns`` exchanges, the last assistant reply an SDK object."""
    reply = AnthropicMessage.model_validate(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-5-5",
            "content": [{"type": "text", "text": "Sure.", "citations": None}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    messages: list[Any] = [{"role": "user", "content": "Plan a trip."}]
    for n in range(turns):
        messages += [
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": f"And {n}?"},
        ]
    return ConversationState(messages)


def test_cache_breakpoints_go_on_copies_and_leave_the_log_alone() -> None:
    """cache=True marks the header block and the last message; the log's objects are unchanged."""
    state = chat(3)
    log_before = json.dumps(json.loads(state.to_json())["log"])
    system, messages = render_anthropic(state, system="You are a travel agent.", cache=True)
    assert system[-1]["cache_control"] == {"type": "ephemeral"}
    assert messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert count(system) + count(messages) == 2
    assert json.dumps(json.loads(state.to_json())["log"]) == log_before
    plain_system, plain = render_anthropic(state, system="You are a travel agent.")
    assert all("cache_control" not in block for block in plain_system)
    assert plain[-1] is state.log[-1]


def test_the_prefix_before_the_newest_message_renders_the_same_bytes() -> None:
    """Between compactions, everything before the marked tail is byte-identical turn to turn."""
    earlier, later = chat(2), chat(3)
    system_a, messages_a = render_anthropic(earlier, system="S", cache=True)
    system_b, messages_b = render_anthropic(later, system="S", cache=True)
    assert json.dumps(system_a) == json.dumps(system_b)
    unmarked = render_anthropic(earlier, system="S")[1]
    assert [json.dumps(to_record(m)) for m in messages_b[: len(unmarked)]] == [
        json.dumps(to_record(m)) for m in unmarked
    ]
    assert count(messages_a) == count(messages_b) == 1


def test_at_most_four_breakpoints_are_sent() -> None:
    """Breakpoints the caller placed count first; the request never carries more than 4.

    ``tools=[]`` says the request has no tool definitions, so no slot is held for them.
    """
    state = chat(2)
    caller = [
        {"type": "text", "text": f"rule {n}", "cache_control": {"type": "ephemeral"}}
        for n in range(3)
    ]
    system, messages = render_anthropic(state, system=caller, cache=True, tools=[])
    assert count(system) + count(messages) == MAX_BREAKPOINTS
    assert messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in system[-1] or system[-1]["text"] == "rule 2"
    full = [
        {"type": "text", "text": f"r{n}", "cache_control": {"type": "ephemeral"}} for n in range(4)
    ]
    system, messages = render_anthropic(state, system=full, cache=True)
    assert count(system) + count(messages) == MAX_BREAKPOINTS
