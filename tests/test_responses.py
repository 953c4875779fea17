"""OpenAI Responses API items as a third message format: reading, safe cuts, rendering.

`valid_responses_input` is written from the rules the Responses API enforces (its 400 errors
"Item 'rs_…' of type 'reasoning' was provided without its required following item" and "Item
'fc_…' was provided without its required 'reasoning' item", as reported in openai/openai-node#1567
and 0xPlaygrounds/rig#751), not from progsum's own pairing helpers: every
``function_call_output`` answers a ``function_call`` sent before it, every sent call has its output
(a trailing call still awaiting its output excepted), a ``function_call`` produced with a
reasoning item is sent with that item, and a reasoning item is sent with the item that followed
it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progsum import (
    Compactor,
    ConfigError,
    ConversationState,
    MessageFormatError,
    Policy,
    render_anthropic,
)
from progsum.policy._reduction import Reduction
from progsum.render._responses import render_responses
from progsum.summarizers import ExtractiveSummarizer

RULE = "Never book a flight before 9am."


def tool_turn(n: int, *, parallel: int = 2, output_chars: int = 300) -> list[dict[str, Any]]:
    """One assistant turn as the Responses API returns it: reasoning, parallel calls, outputs."""
    items: list[dict[str, Any]] = [
        {
            "type": "reasoning",
            "id": f"rs_{n}",
            "summary": [{"type": "summary_text", "text": f"Search step {n}."}],
            "encrypted_content": f"gAAAA{n}" + "x" * 200,
        }
    ]
    items += [
        {
            "type": "function_call",
            "id": f"fc_{n}_{k}",
            "call_id": f"call_{n}_{k}",
            "name": "search_flights",
            "arguments": json.dumps({"day": n, "leg": k}),
        }
        for k in range(parallel)
    ]
    items += [
        {
            "type": "function_call_output",
            "call_id": f"call_{n}_{k}",
            "output": "fare " * output_chars,
        }
        for k in range(parallel)
    ]
    items.append(
        {
            "type": "message",
            "id": f"msg_{n}",
            "role": "assistant",
            "content": [{"type": "output_text", "text": f"Day {n}: found fares."}],
        }
    )
    rule = f" {RULE}" if n == 0 else ""
    items.append({"role": "user", "content": f"Now day {n + 1}.{rule}"})
    return items


def session(turns: int, **kwargs: Any) -> list[dict[str, Any]]:
    """A user task, then ``turns`` tool turns."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "Plan my flights."}]
    for n in range(turns):
        items += tool_turn(n, **kwargs)
    return items


def valid_responses_input(
    log: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]
) -> None:
    """Assert ``sent`` follows the Responses API's pairing rules, given the full ``log``."""
    ids = [id(item) for item in sent]
    calls_sent: dict[str, int] = {}
    for position, item in enumerate(sent):
        kind = item.get("type")
        if kind == "function_call":
            calls_sent[item["call_id"]] = position
        elif kind == "function_call_output":
            assert item["call_id"] in calls_sent, f"output {item['call_id']} sent without its call"
    answered = {i["call_id"] for i in sent if i.get("type") == "function_call_output"}
    trailing = len(sent)
    while trailing and sent[trailing - 1].get("type") == "function_call":
        trailing -= 1
    for call_id, position in calls_sent.items():
        assert call_id in answered or position >= trailing, f"call {call_id} sent without output"
    for index, item in enumerate(log):
        if item.get("type") != "reasoning" or id(item) not in ids:
            continue
        follower = log[index + 1] if index + 1 < len(log) else None
        if follower is not None:
            assert id(follower) in ids, f"reasoning {item['id']} sent without the item after it"
    for index, item in enumerate(log):
        produced = item.get("type") == "function_call" or item.get("role") == "assistant"
        if not produced or id(item) not in ids:
            continue
        back = index - 1
        while back >= 0 and log[back].get("type") == "function_call":
            back -= 1
        if back >= 0 and log[back].get("type") == "reasoning":
            assert id(log[back]) in ids, f"item {index} sent without its reasoning"


def test_items_are_read_as_one_conversation() -> None:
    """Responses items (typed and easy messages) make a state whose format is 'responses'."""
    state = ConversationState(session(2))
    assert state.format == "responses"
    assert state.infos[2].calls == ("call_0_0",)
    assert state.infos[4].results == ("call_0_0",)


def test_sdk_style_item_without_role_no_longer_rejected() -> None:
    """A function_call item has no 'role'; it used to fail with "message 1: has no 'role'"."""
    log = [
        {"role": "user", "content": "What is 2+2?"},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"},
    ]
    assert len(ConversationState(log)) == 2


def test_malformed_call_names_the_fix() -> None:
    """A function_call without call_id is rejected with the message index and the remedy."""
    with pytest.raises(MessageFormatError, match=r"message 1: .*without a string 'call_id'"):
        ConversationState(
            [{"role": "user", "content": "hi"}, {"type": "function_call", "name": "f"}]
        )


def test_output_without_its_call_is_rejected() -> None:
    """An output whose call is not right before it breaks pairing and is refused."""
    log = [{"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "x"}]
    with pytest.raises(MessageFormatError, match="must directly follow"):
        ConversationState(log)


def test_mixing_with_chat_completions_is_rejected() -> None:
    """A chat 'tool' message in a Responses conversation names both formats."""
    log = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ]
    with pytest.raises(MessageFormatError, match="OpenAI Responses format"):
        ConversationState(log)


@pytest.mark.parametrize("keep", range(1, 16))
def test_every_cut_keeps_pairs_and_reasoning(keep: int) -> None:
    """Whatever the kept tail, the rendered input satisfies the Responses pairing rules."""
    log = session(6)
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=200_000, keep=("messages", keep)),
        summarizer=ExtractiveSummarizer(),
        reduction=None,
    )
    state = compactor.compact(ConversationState(log), force=True)
    assert state.cutoff > state.head_end
    sent = render_responses(state, system="You plan trips.")
    valid_responses_input(log, sent[2:])  # after the caller's prompt and the header
    assert sent[2] is log[0]
    if state.cutoff > len(tool_turn(0)):
        assert RULE in sent[1]["content"]
    kept = [item for item in sent if item.get("type") == "reasoning"]
    assert all(any(item is original for original in log) for item in kept)


def test_two_compactions_keep_the_rule_and_the_reasoning_bytes() -> None:
    """Chained compactions keep the user's rule in the header and reasoning items unchanged."""
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=6_000, keep=("messages", 8)),
        summarizer=ExtractiveSummarizer(),
    )
    log = session(1)
    state = ConversationState(log[:1])
    for item in log[1:] + [i for n in range(1, 12) for i in tool_turn(n)]:
        state = compactor.maybe_compact(state.append(item))
    compactions = [e for e in state.events if e.outcome == "compacted"]
    assert len(compactions) >= 2
    sent = render_responses(state)
    assert sent[0]["role"] == "developer"
    assert RULE in sent[0]["content"]
    valid_responses_input(list(state.log), sent[1:])
    reasoning = [i for i in sent if i.get("type") == "reasoning"]
    assert reasoning
    assert all(i["encrypted_content"].startswith("gAAAA") for i in reasoning)


def test_reduction_clears_old_outputs_in_a_copy() -> None:
    """Large old function_call_output items show a placeholder; the logged item is unchanged."""
    log = session(4, output_chars=600)
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=14_000, keep=("messages", 6)),
        summarizer=ExtractiveSummarizer(),
        reduction=Reduction(min_chars=1_000, keep_results=1),
    )
    state = compactor.maybe_compact(ConversationState(log))
    assert state.cleared
    assert state.cutoff == 0  # clearing alone was enough: nothing folded
    mark = state.cleared[0]
    assert log[mark.at]["output"].startswith("fare ")
    shown = render_responses(state)[mark.at]
    assert shown["output"] == mark.placeholder
    assert shown["call_id"] == log[mark.at]["call_id"]
    valid_responses_input(log, render_responses(state))


def test_render_is_deterministic() -> None:
    """The same state renders to the same items, in the same bytes."""
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=200_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
    )
    state = compactor.compact(ConversationState(session(3)), force=True)
    first = json.dumps(render_responses(state, system="s"))
    assert first == json.dumps(render_responses(state, system="s"))


def test_other_renderers_point_to_render_responses() -> None:
    """render_anthropic on a Responses conversation names render_responses as the fix."""
    with pytest.raises(ConfigError, match="render_responses"):
        render_anthropic(ConversationState(session(1)))


@pytest.mark.parametrize("start", [2, 3, 4])
def test_validator_rejects_naive_truncation(start: int) -> None:
    """The oracle fails a tail that starts after a reasoning item, mid-round or on an output."""
    log = session(2)
    with pytest.raises(AssertionError):
        valid_responses_input(log, log[start:])


@st.composite
def responses_sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A user task, then agentic turns: optional reasoning, parallel calls, outputs, text."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "Plan my flights."}]
    pool = ["call_a", "call_b", "call_c"]  # reused across rounds, as real logs do
    for turn in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            items.append(
                {"type": "reasoning", "id": f"rs_{turn}", "summary": [], "encrypted_content": "e"}
            )
        calls = draw(st.lists(st.sampled_from(pool), min_size=0, max_size=3, unique=True))
        items += [
            {"type": "function_call", "call_id": c, "name": "f", "arguments": "{}"} for c in calls
        ]
        if calls and turn == 7 and draw(st.booleans()):
            break  # the last calls still await their outputs
        items += [
            {"type": "function_call_output", "call_id": c, "output": "ok " * 50} for c in calls
        ]
        if not calls or draw(st.booleans()):
            part = {"type": "output_text", "text": f"Turn {turn} done."}
            items.append({"type": "message", "role": "assistant", "content": [part]})
        if draw(st.booleans()):
            items.append({"role": "user", "content": f"Go on ({turn})."})
    return items


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=responses_sessions(), keep=st.integers(1, 12))
def test_any_session_any_keep_renders_valid_input(log: list[dict[str, Any]], keep: int) -> None:
    """For generated Responses sessions and tails, every rendered input follows the API rules."""
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=200_000, keep=("messages", keep)),
        summarizer=ExtractiveSummarizer(),
        reduction=None,
    )
    state = compactor.compact(ConversationState(log), force=True)
    sent = render_responses(state)
    start = 1 if state.header else 0
    valid_responses_input(log, sent[start:])
    assert sent[start] is log[0]
    tail = sent[start + state.head_end :]
    pinned = log[state.pinned[0] : state.pinned[1]] if state.pinned else []  # a turn's opening
    kept = [*pinned, *log[state.cutoff or state.head_end :]]
    assert all(a is b for a, b in zip(tail, kept, strict=True))
