"""Cache breakpoints: ``render_anthropic(cache=True)`` never sends more than Anthropic's limit.

The oracle is `tests.anthropic_rules.breakpoints`, written from Anthropic's prompt-caching page
and counting every ``cache_control`` of the whole request body (tools, system, messages), not
progsum's own `progsum.render._breakpoints.count`. The caller's breakpoints on its tool
definitions and system blocks, and those its kept messages carry, count first.
"""

from __future__ import annotations

import copy
import json
from typing import Any, cast

import pytest
from anthropic.types import MessageParam, TextBlockParam, ToolParam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progsum import Compactor, ConversationState, Policy, render_anthropic
from progsum.errors import ConfigError
from progsum.messages._formats import to_record
from progsum.summary._update import SummaryUpdate
from progsum.testing import FunctionSummarizer, scripted_state
from tests.anthropic_rules import MAX_BREAKPOINTS, RuleAPI, breakpoints
from tests.strategies import Conversation, anthropic_conversations

EPHEMERAL = {"type": "ephemeral"}
MODEL = "claude-sonnet-4-5"
"""A model whose only rule a rendered request can break here is the breakpoint limit."""


def tool(name: str, *, cached: bool = False) -> dict[str, Any]:
    """A tool definition as the caller sends it; ``cached`` puts its breakpoint on it."""
    definition: dict[str, Any] = {
        "name": name,
        "description": f"The {name} tool.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    if cached:
        definition["cache_control"] = dict(EPHEMERAL)
    return definition


def system_block(text: str, *, cached: bool = False) -> dict[str, Any]:
    """A system text block of the caller's, optionally with its own breakpoint."""
    block: dict[str, Any] = {"type": "text", "text": text}
    if cached:
        block["cache_control"] = dict(EPHEMERAL)
    return block


def body(tools: list[dict[str, Any]], system: list[Any], messages: list[Any]) -> dict[str, Any]:
    """The request body the caller sends: its tools, the rendered system and messages."""
    request = {
        "model": MODEL,
        "max_tokens": 1024,
        "tools": tools,
        "system": system,
        "messages": [to_record(m) for m in messages],
    }
    sent: dict[str, Any] = json.loads(json.dumps(request))
    return sent


def refusals(tools: list[dict[str, Any]], system: list[Any], messages: list[Any]) -> list[Any]:
    """What the fake API that plays the breakpoint rule refused of one request sent through it."""
    api = RuleAPI(answer=lambda _: None)
    api.client().messages.create(
        model=MODEL,
        max_tokens=1024,
        tools=cast("list[ToolParam]", tools),
        system=cast("list[TextBlockParam]", system),
        messages=cast("list[MessageParam]", messages),
    )
    return api.refusals


def compacted(first_cached: bool) -> ConversationState[Any]:
    """A compacted chat whose first task message (kept verbatim) may carry a caller breakpoint."""
    first: dict[str, Any] = {
        "role": "user",
        "content": [{"type": "text", "text": "Refactor billing. Never touch migrations/."}],
    }
    if first_cached:
        first["content"][0]["cache_control"] = dict(EPHEMERAL)
    script: list[Any] = [first]
    for n in range(6):
        script += [
            {"role": "assistant", "content": f"Step {n} done."},
            {"role": "user", "content": f"Go on with step {n + 1}."},
        ]
        if n == 3:
            script.append(SummaryUpdate(add={"established_facts": ["Steps 0-3 are done."]}))
    return scripted_state(script, keep=2)


def strip(value: Any) -> Any:
    """``value`` without any ``cache_control`` key, to compare requests but for breakpoints.

    A message's string content is read as the one text block it stands for (a breakpoint can
    only sit on a block, so marking such a message writes it as a block).
    """
    if isinstance(value, dict):
        if value.get("role") and isinstance(value.get("content"), str) and value["content"]:
            value = {**value, "content": [{"type": "text", "text": value["content"]}]}
        return {k: strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


FOLDER = Compactor(
    policy=Policy(context_window=200_000, keep=("messages", 2)),
    summarizer=FunctionSummarizer(
        lambda _: SummaryUpdate(add={"established_facts": ["The repository is tidy."]})
    ),
)
"""Folds all but the newest messages when forced, so that states have a header."""


def test_the_callers_tool_breakpoint_counts_against_the_limit() -> None:
    """Tools, system and a kept message marked by the caller: progsum adds only what fits (4)."""
    state = compacted(first_cached=True)
    tools = [tool("read_file"), tool("edit_file", cached=True)]
    caller_system = [system_block("You are a careful engineer.", cached=True)]
    system, messages = render_anthropic(state, system=caller_system, cache=True, tools=tools)
    sent = body(tools, system, messages)
    assert breakpoints(sent) == MAX_BREAKPOINTS
    assert "cache_control" in sent["messages"][-1]["content"][-1]  # the tail's comes first
    assert breakpoints(sent["tools"]) == 1
    assert "cache_control" in sent["system"][0]
    assert refusals(tools, system, messages) == [[]]


def test_without_tools_the_request_is_unchanged() -> None:
    """Passing no tools renders what it rendered before: header and tail marked, 2 breakpoints."""
    state = compacted(first_cached=False)
    system, messages = render_anthropic(state, system="S", cache=True)
    assert render_anthropic(state, system="S", cache=True, tools=[tool("read_file")]) == (
        system,
        messages,
    )
    assert breakpoints(body([], system, messages)) == 2


def test_a_marked_tool_not_passed_still_leaves_the_request_within_the_limit() -> None:
    """Tools marked by the caller but not passed: a slot is held for them, so the total is 4.

    The README's loop once sent no ``tools=``; a caller who marks the last tool definition (as
    Anthropic's caching page shows) and two system blocks got 5 breakpoints and a 400.
    """
    state = compacted(first_cached=False)
    tools = [tool("read_file"), tool("edit_file", cached=True)]
    caller_system = [system_block(f"rule {n}", cached=True) for n in range(2)]
    system, messages = render_anthropic(state, system=caller_system, cache=True)
    sent = body(tools, system, messages)
    assert breakpoints(sent) == MAX_BREAKPOINTS
    assert "cache_control" in sent["messages"][-1]["content"][-1]  # the tail's comes first
    assert refusals(tools, system, messages) == [[]]


def test_the_callers_own_breakpoints_over_the_limit_are_a_config_error() -> None:
    """Five caller breakpoints before progsum adds any: a ConfigError naming the counts."""
    state = compacted(first_cached=True)
    tools = [tool(f"t{n}", cached=True) for n in range(2)]
    caller_system = [system_block(f"rule {n}", cached=True) for n in range(2)]
    with pytest.raises(ConfigError) as raised:
        render_anthropic(state, system=caller_system, cache=True, tools=tools)
    message = str(raised.value)
    assert "5 cache_control breakpoints" in message
    assert "tools 2, system 2, messages 1" in message
    assert "at most 4" in message


CALLER_MARKS = st.lists(st.booleans(), min_size=0, max_size=4)
"""Which of a few caller blocks carry a breakpoint."""


def _marked_copy(messages: tuple[dict[str, Any], ...], marks: list[int]) -> list[dict[str, Any]]:
    """The messages (deep copies), with a caller breakpoint on a block of those listed.

    ``marks`` count from the newest message back, so that small values land in the kept tail.
    """
    out = copy.deepcopy(list(messages))
    for back in marks:
        content = out[-1 - back % len(out)]["content"]
        if isinstance(content, list):
            for block in content:
                if block.get("type") in ("text", "tool_result", "tool_use"):
                    block["cache_control"] = dict(EPHEMERAL)
                    break
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversation=anthropic_conversations(max_turns=4),
    message_marks=st.lists(st.integers(0, 8), max_size=3),
    tool_marks=CALLER_MARKS,
    system_marks=st.none() | CALLER_MARKS,
    fold=st.booleans(),
)
def test_no_rendered_request_exceeds_the_limit(
    conversation: Conversation,
    message_marks: list[int],
    tool_marks: list[bool],
    system_marks: list[bool] | None,
    fold: bool,
) -> None:
    """Over generated states and caller breakpoints: at most 4 in all, the caller's all kept.

    When the caller's own breakpoints (tools, system, kept messages) already exceed the limit,
    rendering refuses with a ConfigError instead; otherwise the request differs from the
    uncached one only by breakpoints, and progsum uses the room left for the newest message.
    """
    state = ConversationState(_marked_copy(conversation.messages, message_marks))
    if fold:
        state = FOLDER.compact(state, force=True)
    before = state.to_json()
    tools = [tool(f"t{n}", cached=marked) for n, marked in enumerate(tool_marks)]
    system: str | list[dict[str, Any]] = "You are an agent."
    if system_marks is not None:
        system = [system_block(f"rule {n}", cached=m) for n, m in enumerate(system_marks)]
    plain = body(tools, *render_anthropic(state, system=system))
    own = breakpoints(plain)
    if own > MAX_BREAKPOINTS:
        with pytest.raises(ConfigError):
            render_anthropic(state, system=system, cache=True, tools=tools)
        return
    sent = body(tools, *render_anthropic(state, system=system, cache=True, tools=tools))
    assert breakpoints(sent) <= MAX_BREAKPOINTS
    assert strip(sent) == strip(plain)
    assert breakpoints(sent) >= own
    last = sent["messages"][-1]["content"] if sent["messages"] else None
    markable = isinstance(last, str) and last != ""
    if isinstance(last, list):
        markable = any(b.get("type") not in ("thinking", "redacted_thinking") for b in last)
    if own < MAX_BREAKPOINTS and markable:
        assert breakpoints(sent["messages"][-1]) >= 1
    if state.header and own <= MAX_BREAKPOINTS - 2:
        assert sent["system"][-1] == {
            "type": "text",
            "text": state.header,
            "cache_control": EPHEMERAL,
        }
    assert state.to_json() == before
