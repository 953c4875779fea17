"""ProgsumCapability in a real pydantic-ai 2.x agent: request-only compaction, restore from history.

The model is pydantic-ai's `FunctionModel` (its own test utility), which sees exactly what a
provider would be sent: the messages and the rendered instructions. `valid_request` checks the
tool pairing every provider requires (Anthropic tool-use guide: each tool result answers a
``tool_use`` of the assistant turn right before it, and each ``tool_use`` is answered in the next
user turn), written independently of progsum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("pydantic_ai.capabilities", reason="needs the pydantic-ai extra")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from progsum import Compactor, Policy
from progsum.integrations.pydantic_ai import METADATA_KEY, ProgsumCapability
from progsum.summarizers import ExtractiveSummarizer

RULE = "Never book a flight that departs before 9am."
INSTRUCTIONS = "You are a travel agent."


def provider_tokens(messages: Sequence[ModelMessage], instructions: str) -> int:
    """What a provider would report as input tokens: about one per four characters sent."""
    sent = len(instructions) + sum(len(str(part)) for m in messages for part in m.parts)
    return sent // 4


class Recorder:
    """A scripted model: a tool call, then an answer; records every request it is sent.

    Each response reports its usage as a provider would (FunctionModel's own estimate counts
    words, far below a real tokenizer), so progsum anchors on realistic counts.
    """

    def __init__(self) -> None:
        self.requests: list[tuple[list[ModelMessage], str]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """Answer like a tool-using model."""
        self.requests.append((list(messages), info.instructions or ""))
        usage = RequestUsage(input_tokens=provider_tokens(messages, info.instructions or ""))
        last = messages[-1]
        if any(isinstance(p, ToolReturnPart) for p in last.parts):
            answer = TextPart("TP1234 at 10:15 fits your rules.")
            return ModelResponse(parts=[answer], usage=usage)
        day = len(self.requests)
        return ModelResponse(parts=[ToolCallPart("search_flights", {"day": day})], usage=usage)


def valid_request(messages: Sequence[ModelMessage]) -> None:
    """Assert tool calls and returns pair across adjacent messages, and a request opens."""
    assert isinstance(messages[0], ModelRequest)
    assert any(isinstance(p, UserPromptPart) for p in messages[0].parts)
    for position, message in enumerate(messages):
        returns = {p.tool_call_id for p in message.parts if isinstance(p, ToolReturnPart)}
        calls = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
        if returns:
            before = messages[position - 1] if position else None
            made = (
                {p.tool_call_id for p in before.parts if isinstance(p, ToolCallPart)}
                if before
                else set()
            )
            assert returns <= made, f"{position}: returns {returns - made} without their calls"
        if calls and position + 1 < len(messages):
            after = {
                p.tool_call_id
                for p in messages[position + 1].parts
                if isinstance(p, ToolReturnPart)
            }
            assert calls <= after, f"{position}: calls {calls - after} never answered"


def make_agent(model: Recorder, capability: ProgsumCapability) -> Agent[None, str]:
    """A tool-using agent with progsum."""
    agent: Agent[None, str] = Agent(
        FunctionModel(model), instructions=INSTRUCTIONS, capabilities=[capability]
    )

    @agent.tool_plain
    def search_flights(day: int) -> str:
        """Search flights for a day of the trip."""
        return f"Day {day}: " + "TP1234 departs 10:15, arrives 13:40, 212 EUR. " * 30

    return agent


def compactor() -> Compactor[Any]:
    """A small window, so a short run compacts several times."""
    return Compactor(
        policy=Policy(context_window=4_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
    )


def converse(
    agent: Agent[None, str], turns: Sequence[str], history: list[ModelMessage]
) -> list[ModelMessage]:
    """Run each user turn, passing the history on as pydantic-ai users do."""
    for text in turns:
        history = agent.run_sync(text, message_history=history).all_messages()
    return history


def snapshots(history: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """Progsum's snapshots stored in the history's request metadata."""
    return [
        m.metadata[METADATA_KEY]
        for m in history
        if isinstance(m, ModelRequest) and m.metadata and METADATA_KEY in m.metadata
    ]


def test_compacts_the_request_not_the_history() -> None:
    """Past two compactions, requests are valid and short while the stored history is whole."""
    model = Recorder()
    agent = make_agent(model, ProgsumCapability(compactor()))
    turns = ["Plan flights Lisbon to Tokyo, one leg a day.", f"Good. {RULE}"]
    history = converse(agent, turns + [f"Next leg {n}." for n in range(8)], [])
    assert len(history) == 40  # nothing was removed from pydantic-ai's history
    stored = snapshots(history)
    assert len(stored) >= 2
    assert sum(e["outcome"] == "compacted" for e in stored[-1]["events"]) >= 2
    for messages, instructions in model.requests:
        valid_request(messages)
        assert instructions.startswith(INSTRUCTIONS)  # the agent's own prompt stays first
    compactions = sum(e["outcome"] == "compacted" for e in stored[-1]["events"])
    prompts = {instructions for _, instructions in model.requests}
    assert len(prompts) <= compactions + 1  # the prefix changes only when progsum compacts
    messages, instructions = model.requests[-1]
    assert RULE in instructions
    assert len(messages) < len(history)
    assert ProgsumCapability(compactor()).sync(history).anchor is not None  # usage anchors it
    assert messages[0] is history[0]  # the task, as pydantic-ai stored it


def test_restore_from_serialized_history() -> None:
    """A new capability resumes the summary from a history saved as JSON and loaded back."""
    first = make_agent(Recorder(), ProgsumCapability(compactor()))
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(7)]
    saved = ModelMessagesTypeAdapter.dump_json(converse(first, turns, []))
    loaded = ModelMessagesTypeAdapter.validate_json(saved)
    cutoff = snapshots(loaded)[-1]["cutoff"]
    assert cutoff > 0

    model = Recorder()
    restarted = make_agent(model, ProgsumCapability(compactor()))  # a new process: nothing cached
    converse(restarted, ["One more leg."], loaded)
    messages, instructions = model.requests[0]
    assert RULE in instructions
    valid_request(messages)
    assert len(messages) <= len(loaded) + 1 - cutoff + 1
