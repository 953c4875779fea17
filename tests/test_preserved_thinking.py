"""Requests that today's Claude models accept: thinking bound to its prefix, checked by a fake API.

`tests/prefix_rule.PrefixAPI` plays Anthropic's documented prefix check (it signs every thinking
block it returns with its prefix and checks every block sent back); nothing here asks progsum
whether a request is valid. Each test runs the README's agent loop, or replays a logged
conversation, through a real `anthropic.Anthropic` client or the fake's own check.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
import pytest
from anthropic.types import Message as SDKMessage
from anthropic.types.beta import BetaMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.render import DROP_BLOCK_BETA, Thinking, drop_block_thinking
from progsum.summarizers import ExtractiveSummarizer
from tests import prefix_rule
from tests.conversations import coding_session
from tests.prefix_rule import PrefixAPI
from tests.strategies import Conversation, conversations

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file of the project.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
SYSTEM = "You are a careful coding agent."
VIEW_CHANGES = ("compacted", "reduced", "consolidated", "repaired")
"""Events that may rewrite what earlier requests sent (a compaction in the issue's words)."""
WORDS = [
    "the",
    "parser",
    "keeps",
    "a",
    "cursor",
    "over",
    "the",
    "token",
    "stream",
    "and",
    "backs",
    "off",
    "on",
    "errors",
]


def _file(n: int) -> str:
    """A tool result of ~300 words that names its file (recall finds it by that name)."""
    return f"contents of module_{n}.py: " + " ".join(
        WORDS[(n + k) % len(WORDS)] for k in range(300)
    )


def _agent_reply(body: dict[str, Any], number: int) -> list[dict[str, Any]]:
    """The model's answer after its thinking: a tool call on most turns, else a short text."""
    del body
    if number % 4:
        return [
            {
                "type": "tool_use",
                "id": f"toolu_{number:04d}",
                "name": "read_file",
                "input": {"path": f"module_{number}.py"},
            }
        ]
    return [{"type": "text", "text": f"Step {number} done: the cursor logic is understood."}]


class Loop:
    """What one run of the agent loop left: the fake, each request's state, blocks left out."""

    def __init__(self, api: PrefixAPI) -> None:
        self.api = api
        self.states: list[ConversationState[Any]] = []
        self.left_out: list[int] = []

    @property
    def state(self) -> ConversationState[Any]:
        """The state the last request was rendered from."""
        return self.states[-1]


def run_loop(
    model: str,
    thinking: Thinking,
    *,
    requests: int = 120,
    window: int = 6_000,
) -> Loop:
    """The README's agent loop against the fake: render, call, append the reply and the result.

    Records the state each request was rendered from and the number of thinking blocks
    progsum left out of it (blocks in the kept messages minus blocks sent).
    """
    api = PrefixAPI(reply=_agent_reply)
    client = api.client()
    compactor = Compactor(
        policy=Policy(model=model, context_window=window), summarizer=ExtractiveSummarizer()
    )
    state: ConversationState[Any] = ConversationState(
        [{"role": "user", "content": "Refactor the parser. Never edit the generated lexer."}]
    )
    loop = Loop(api)
    for n in range(requests):
        state = compactor.maybe_compact(state)
        system, messages = render_anthropic(
            state, system=SYSTEM, cache=True, tools=TOOLS, model=model, thinking=thinking
        )
        loop.states.append(state)
        loop.left_out.append(_thinking_in(state.view.messages) - _thinking_in(messages))
        request: dict[str, Any] = {
            "model": model,
            "max_tokens": 512,
            "system": system,
            "messages": messages,
            "tools": TOOLS,
        }  # rendered JSON: the SDK's TypedDicts are not inferred from it
        reply: SDKMessage | BetaMessage
        if thinking == "drop_block":
            request["thinking"] = drop_block_thinking()
            reply = client.beta.messages.create(**request, betas=[DROP_BLOCK_BETA])
        else:
            reply = client.messages.create(**request)
        state = state.append({"role": "assistant", "content": reply.content}, usage=reply.usage)
        calls = [b for b in reply.content if b.type == "tool_use"]
        if calls:
            results = [
                {"type": "tool_result", "tool_use_id": c.id, "content": _file(n)} for c in calls
            ]
            state = state.append({"role": "user", "content": results})
        else:
            state = state.append({"role": "user", "content": f"What did module_{n - 9}.py do?"})
    return loop


def _thinking_in(messages: Sequence[Any]) -> int:
    count = 0
    for message in messages:
        content = message["content"] if isinstance(message, dict) else message.content
        if isinstance(content, list):
            count += sum(
                1
                for b in content
                if (b.get("type") if isinstance(b, dict) else b.type) in prefix_rule.THINKING
            )
    return count


def _compactions(state: ConversationState[Any]) -> int:
    return sum(e.outcome == "compacted" for e in state.events)


def test_the_fake_refuses_a_block_whose_prefix_changed_unless_asked_to_drop_it() -> None:
    """The fake plays the rule: a changed system fails the check; drop_block drops instead."""
    body = {
        "model": "claude-sonnet-5-5",
        "system": "A",
        "messages": [{"role": "user", "content": "hi"}],
    }
    reply = prefix_rule.produce(body, [{"type": "text", "text": "hello"}])
    later = {**body, "messages": [*body["messages"], reply, {"role": "user", "content": "go on"}]}
    assert prefix_rule.check(later).invalid == ()
    changed = {**later, "system": "B"}
    assert prefix_rule.check(changed).invalid == ((1, 0),)
    without = {
        **later,
        "messages": [later["messages"][0], {**reply, "content": reply["content"][1:]}],
    }
    assert prefix_rule.check(without).sent == 0  # leaving the block out is always accepted
    forged = {
        **later,
        "messages": [
            *later["messages"][:1],
            {
                **reply,
                "content": [{**reply["content"][0], "signature": "made-up"}, *reply["content"][1:]],
            },
            later["messages"][2],
        ],
    }
    assert prefix_rule.check(forged).forged == ((1, 0),)


def test_the_fake_fails_every_block_after_one_left_out_between_others() -> None:
    """Leaving out a thinking block between two sent ones fails the later one (prefix check)."""
    body: dict[str, Any] = {
        "model": "claude-sonnet-5-5",
        "messages": [{"role": "user", "content": "a"}],
    }
    first = prefix_rule.produce(body, [{"type": "text", "text": "one"}])
    body["messages"] += [first, {"role": "user", "content": "b"}]
    second = prefix_rule.produce(body, [{"type": "text", "text": "two"}])
    body["messages"] += [second, {"role": "user", "content": "c"}]
    assert prefix_rule.check(body).invalid == ()
    gap = json.loads(json.dumps(body))
    gap["messages"][1]["content"] = gap["messages"][1]["content"][1:]
    assert prefix_rule.check(gap).invalid == ((3, 0),)


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-haiku-5-5"])
def test_the_readme_agent_loop_sends_no_block_the_api_refuses(model: str) -> None:
    """Across compactions and recalls, every thinking block sent passes the prefix check."""
    loop = run_loop(model, "auto")
    api = loop.api
    assert _compactions(loop.state) >= 3
    assert sum(1 for s in loop.states if s.recall is not None and s.recall.excerpts) > 3
    assert api.refused == 0
    assert sum(c.sent for c in api.checks) > len(api.checks)  # blocks since the fold are sent
    assert all(not c.invalid and not c.forged for c in api.checks)
    assert sum(loop.left_out) > 0  # blocks from before each fold were left out


def test_with_drop_block_the_api_drops_what_progsum_sends_whole() -> None:
    """thinking='drop_block' sends every block with the beta header; none is refused."""
    loop = run_loop("claude-sonnet-5-5", "drop_block")
    assert _compactions(loop.state) >= 3
    assert loop.api.refused == 0
    assert loop.api.dropped > 0
    assert sum(loop.left_out) == 0


def test_keeping_stale_thinking_on_a_preserved_model_is_refused() -> None:
    """The failure this guards against: blocks sent whole after a fold are refused (400)."""
    with pytest.raises(anthropic.BadRequestError, match="bound to a different conversation"):
        run_loop("claude-sonnet-5-5", "keep", requests=60)


def test_an_older_model_gets_its_thinking_whole() -> None:
    """On a model without preserved thinking nothing is left out (rules T1-T6 apply)."""
    loop = run_loop("claude-sonnet-4-6", "auto", requests=60)
    assert _compactions(loop.state) >= 1
    assert sum(loop.left_out) == 0


def _replayed(
    messages: Sequence[dict[str, Any]],
    policy: Policy,
    render: Callable[[ConversationState[Any]], tuple[list[Any], list[Any]]],
) -> list[tuple[dict[str, Any], ConversationState[Any]]]:
    """Replay a logged conversation: each assistant message answers the request rendered before it.

    The fake re-signs its thinking for that request, as if the model had produced it then.
    Returns each request body with the state it was rendered from.
    """
    compactor = Compactor(policy=policy, summarizer=ExtractiveSummarizer())
    state: ConversationState[Any] = ConversationState()
    requests: list[tuple[dict[str, Any], ConversationState[Any]]] = []
    for logged in messages:
        message = logged
        if message["role"] == "assistant" and len(state):
            state = compactor.maybe_compact(state)
            system, rendered = render(state)
            body = json.loads(json.dumps({"system": system, "messages": rendered}))
            requests.append((body, state))
            message, _ = prefix_rule.resign(body, message)
        state = state.append(message)
    return requests


def test_a_logged_coding_session_replays_with_every_block_valid() -> None:
    """A coding session with interleaved thinking, compacted often: every request passes."""
    policy = Policy(model="claude-opus-5-5", context_window=3_000, recall_budget=None)
    requests = _replayed(
        coding_session(30), policy, lambda s: render_anthropic(s, model="claude-opus-5-5")
    )
    assert sum(e.outcome == "compacted" for e in requests[-1][1].events) >= 3
    checks = [prefix_rule.check(body) for body, _ in requests]
    assert sum(c.sent for c in checks) > 0
    assert [c.invalid for c in checks if c.invalid] == []


def test_requests_between_compactions_only_grow() -> None:
    """With recall on, each request is the one before plus appended messages (cache aside)."""
    loop = run_loop("claude-sonnet-5-5", "auto", requests=80)
    assert _compactions(loop.state) >= 2
    grew = 0
    pairs = zip(loop.states, loop.states[1:], loop.api.bodies, loop.api.bodies[1:], strict=False)
    for state, later, before, after in pairs:
        if any(e.outcome in VIEW_CHANGES for e in later.events[len(state.events) :]):
            continue  # a compaction between them
        old, new = _plain(before), _plain(after)
        assert new["system"] == old["system"]
        assert new["messages"][: len(old["messages"])] == old["messages"]
        grew += 1
    assert grew > len(loop.states) // 2


def _plain(body: dict[str, Any]) -> dict[str, Any]:
    """A body as the prefix check compares it (no cache breakpoints, contents as blocks)."""
    return prefix_rule.compared(body)


def _bodies(
    messages: Sequence[dict[str, Any]], policy: Policy, fmt: str
) -> list[tuple[dict[str, Any], ConversationState[Any]]]:
    """Each request of a replayed conversation, as JSON, with the state it was rendered from.

    Anthropic-shaped conversations are rendered for a model with preserved thinking, and each
    assistant message is re-signed by the fake for the request before it.
    """
    compactor = Compactor(policy=policy, summarizer=ExtractiveSummarizer())
    state: ConversationState[Any] = ConversationState()
    requests: list[tuple[dict[str, Any], ConversationState[Any]]] = []
    for logged in messages:
        message = logged
        if message.get("role") == "assistant" and len(state):
            state = compactor.maybe_compact(state)
            if fmt == "openai":
                body = {"messages": render_openai(state, system="S")}
            else:
                system, rendered = render_anthropic(state, system="S", model="claude-haiku-5-5")
                body = {"system": system, "messages": rendered}
            body = json.loads(json.dumps(body))
            requests.append((body, state))
            if fmt != "openai":
                message, _ = prefix_rule.resign(body, message)
        state = state.append(message)
    return requests


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversation=conversations(max_turns=8),
    window=st.sampled_from((2_000, 3_000, 6_000)),
    recall=st.booleans(),
)
def test_every_generated_conversation_is_append_only_and_passes_the_prefix_check(
    conversation: Conversation, window: int, recall: bool
) -> None:
    """Between compactions each request only grows; every thinking block sent is valid."""
    policy = Policy(context_window=window, recall_budget=("fraction", 0.1) if recall else None)
    fmt = "openai" if conversation.format == "openai" else "anthropic"
    requests = _bodies(conversation.messages, policy, fmt)
    for (before, state), (after, later) in itertools.pairwise(requests):
        if any(e.outcome in VIEW_CHANGES for e in later.events[len(state.events) :]):
            continue
        old, new = (_plain(before), _plain(after)) if fmt != "openai" else (before, after)
        assert new.get("system") == old.get("system")
        assert new["messages"][: len(old["messages"])] == old["messages"]
    for body, _ in requests if fmt != "openai" else ():
        outcome = prefix_rule.check(body)
        assert outcome.invalid == ()
        assert outcome.forged == ()
