"""ProgsumCapability in a real pydantic-ai 2.x agent: request-only compaction, restore from history.

The model is pydantic-ai's `FunctionModel` (its own test utility), which sees exactly what a
provider would be sent: the messages and the rendered instructions. `valid_request` checks the
tool pairing every provider requires (Anthropic tool-use guide: each tool result answers a
``tool_use`` of the assistant turn right before it, and each ``tool_use`` is answered in the next
user turn), written independently of progsum.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("pydantic_ai.capabilities", reason="needs the pydantic-ai extra")

from pydantic_ai import Agent
from pydantic_ai import messages as _messages
from pydantic_ai.conversation import ConversationTypeAdapter
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from progsum import Compactor, Policy
from progsum.integrations.pydantic_ai import METADATA_KEY, ProgsumCapability, restore
from progsum.store import MemoryArchive
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._merge import live_items
from progsum.summary._schema import Summary, spec_of
from tests.integrations.wire import MODEL, Wire, coding_turns, file_text

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
        self.tools: list[ToolDefinition] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """Answer like a tool-using model."""
        self.requests.append((list(messages), info.instructions or ""))
        self.tools = list(info.function_tools)
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
        policy=Policy(trigger=("fraction", 0.65), context_window=4_000, keep=("messages", 4)),
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
    assert len(stored) == 1  # the current state only
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


def stored_size(history: Sequence[ModelMessage]) -> int:
    """Bytes of the history as a user stores it (``ModelMessagesTypeAdapter``)."""
    return len(ModelMessagesTypeAdapter.dump_json(list(history)))


def test_history_holds_one_snapshot_however_many_compactions() -> None:
    """Over many runs and compactions the stored history carries one progsum state, the newest."""
    capability = ProgsumCapability(compactor())
    agent = make_agent(Recorder(), capability)
    turns = ["Plan flights Lisbon to Tokyo, one leg a day.", f"Good. {RULE}"]
    history = converse(agent, turns + [f"Next leg {n}." for n in range(28)], [])
    state = capability.sync(history)
    assert sum(e.outcome == "compacted" for e in state.events) >= 5
    stored = snapshots(history)
    assert len(stored) == 1
    assert len(stored[0]["events"]) == len(state.events)  # the current state, not an old one
    assert len(json.dumps(stored[0])) < stored_size(history) / 4

    loaded = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history))
    model = Recorder()
    restarted = ProgsumCapability(compactor())  # a new process: nothing cached
    history = converse(make_agent(model, restarted), ["One more leg."], loaded)
    resumed = restarted.sync(history)
    assert resumed.cutoff >= state.cutoff
    assert resumed.events[: len(state.events)] == state.events  # resumed, not summarized anew
    assert RULE in model.requests[0][1]
    assert len(snapshots(history)) == 1


def test_failed_run_leaves_the_previous_history_resumable() -> None:
    """A run that fails after compacting keeps the snapshot of the history it was given."""
    agent = make_agent(Recorder(), ProgsumCapability(compactor()))
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(6)]
    history = converse(agent, turns, [])
    before = restore(history)
    assert before.cutoff > 0

    compacted_then_failed: list[bool] = []

    def failing(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        compacted_then_failed.append(METADATA_KEY in (messages[-1].metadata or {}))
        raise RuntimeError("provider down")

    broken: Agent[None, str] = Agent(
        FunctionModel(failing),
        instructions=INSTRUCTIONS,
        capabilities=[ProgsumCapability(compactor())],
    )
    for n in range(4):  # enough new text that the failing requests compact first
        with pytest.raises(RuntimeError, match="provider down"):
            broken.run_sync(f"Leg {n}: " + "a long note on seats. " * 80, message_history=history)
    assert any(compacted_then_failed)  # the failed request carried a newer snapshot
    assert len(snapshots(history)) == 1
    assert restore(history).events == before.events


def test_cached_input_is_reported_apart() -> None:
    """A response's cache reads and writes reach the agent's usage apart; the anchor is all."""
    usage = RequestUsage(
        input_tokens=1_000, output_tokens=20, cache_read_tokens=700, cache_write_tokens=100
    )
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Find a flight.")]),
        ModelResponse(parts=[TextPart("TP1234 at 10:15.")], usage=usage),
    ]
    state = restore(history)
    assert state.anchor is not None
    assert state.anchor.tokens == 1_020
    reported = state.agent_usage
    assert (reported.input_tokens, reported.output_tokens) == (200, 20)
    assert reported.cache_read_input_tokens == 700
    assert reported.cache_creation_input_tokens == 100


class Recalling(Recorder):
    """The scripted model, which calls ``recall`` when the user asks about an earlier rule."""

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """Call ``recall`` for the question, else behave as `Recorder`."""
        prompts = [p for p in messages[-1].parts if isinstance(p, UserPromptPart)]
        if prompts and prompts[0].content == "Which rule did I give you?":
            self.requests.append((list(messages), info.instructions or ""))
            return ModelResponse(parts=[ToolCallPart("recall", {"query": "9am"})])
        return super().__call__(messages, info)


def test_recall_tool_reads_the_archive() -> None:
    """With an archive, folded messages go to it under the conversation id; recall reads them."""
    archive = MemoryArchive()
    archived = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=4_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
        archive=archive,
    )
    model = Recalling()
    agent = make_agent(model, ProgsumCapability(archived))
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(6)]
    history = converse(agent, turns, [])
    assert restore(history).cutoff > 3  # the rule's turn is folded
    assert archive.threads() == [history[0].conversation_id]
    assert "recall" in [tool.name for tool in model.tools]

    history = converse(agent, ["Which rule did I give you?"], history)
    returns = [
        part
        for message in history
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "recall"
    ]
    assert len(returns) == 1
    assert RULE in str(returns[0].content)


def test_no_archive_no_recall_tool() -> None:
    """Without an archive the capability adds no tool."""
    model = Recorder()
    converse(make_agent(model, ProgsumCapability(compactor())), ["Plan flights."], [])
    assert [tool.name for tool in model.tools] == ["search_flights"]


def test_conversation_store_appends_and_never_branches() -> None:
    """Through a conversation store, each save appends the run's messages; no stored one changes.

    The conversation goes through JSON between runs, so the store compares the messages it holds
    with the conversation's: an older snapshot removed from one of them would branch it.
    """
    # conversation stores came in pydantic-ai 2.78; the adapter itself supports the extra's 2.62
    stores = pytest.importorskip("pydantic_ai.conversation_store", reason="needs pydantic-ai 2.78+")
    store = stores.InMemoryConversationStore()
    capability = ProgsumCapability(compactor())
    agent = make_agent(Recorder(), capability)
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(14)]

    async def converse_stored() -> str:
        first = await agent.run(turns[0])
        await store.save(first)
        conversation_id = first.conversation.conversation_id
        for text in turns[1:]:
            loaded = await store.load(conversation_id)
            assert loaded is not None
            # carried between requests as JSON, as a web app does
            conversation = ConversationTypeAdapter.validate_json(
                ConversationTypeAdapter.dump_json(loaded)
            )
            result = await agent.run(text, conversation=conversation)
            saved = await store.save(result)
            assert len(saved) == len(result.new_messages())  # appended, not branched
        return conversation_id

    conversation_id = asyncio.run(converse_stored())
    record = asyncio.run(store.read_record(conversation_id))
    assert record is not None
    assert record.branches == []
    loaded = asyncio.run(store.load(conversation_id))
    assert loaded is not None
    state = capability.sync(list(loaded.messages))
    assert sum(e.outcome == "compacted" for e in state.events) >= 2
    assert ProgsumCapability(compactor()).sync(list(loaded.messages)).events == state.events


def test_the_newest_user_request_opens_with_the_recall_block() -> None:
    """A question about a folded turn is sent with it quoted first; the history is unchanged."""
    model = Recorder()
    agent = make_agent(model, ProgsumCapability(compactor()))
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(7)]
    question = "Which rule about departures before 9am did I give?"
    history = converse(agent, [*turns, question], [])
    messages, _ = model.requests[-2]  # the call right after the question
    asked = next(
        m
        for m in reversed(messages)
        if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
    )
    prompts = [p.content for p in asked.parts if isinstance(p, UserPromptPart)]
    assert str(prompts[0]).startswith("<recalled_history ")
    assert RULE in str(prompts[0])
    assert prompts[-1] == question
    valid_request(messages)
    stored = [m for m in history if isinstance(m, ModelRequest)]
    own = [p for m in stored for p in m.parts if isinstance(p, UserPromptPart)]
    assert own[-1].content == question
    assert not any("recalled_history" in str(p.content) for p in own)


CAPABILITY_PARTS = hasattr(_messages, "InstructionCapabilityPart")
"""Whether pydantic-ai records a capability's instructions as its own part (2.68 on)."""


def _skill(text: str) -> Any:
    """A part a capability wrote (a loaded skill), or the framework's retry feedback before 2.68."""
    if not CAPABILITY_PARTS:  # the extra's floor (2.62): retry feedback is the framework's part
        return RetryFeedbackPart(content=text, retry=RetryInfo("model_retry"))
    from pydantic_ai.messages import InstructionCapabilityPart, OperatorSource  # noqa: PLC0415

    @dataclass(kw_only=True)
    class StyleGuide(InstructionCapabilityPart, namespace="tests"):
        """An instruction a capability adds mid-conversation (a loaded skill, say)."""

    return StyleGuide(content=text, source=OperatorSource())


HARNESS_RULE = "Always book aisle seats on every flight."


def test_parts_pydantic_ai_wrote_never_bind_and_the_users_prompt_does() -> None:
    """A request holding only parts the framework or a capability wrote is harness text.

    pydantic-ai records who wrote each part: a ``UserPromptPart`` is the end user's; a
    capability's instruction (a skill the application loaded) and its retry feedback are
    not. Only the user's rule binds.
    """
    skill = _skill(HARNESS_RULE)
    filler = " ".join(["Day two has three trains and a ferry to the coast."] * 8)
    log: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Plan my trip to Lisbon.")]),
        ModelResponse(parts=[TextPart("Happy to; which dates?")]),
        ModelRequest(parts=[skill]),
        ModelResponse(parts=[TextPart("Noted.")]),
        ModelRequest(
            parts=[RetryFeedbackPart(content=HARNESS_RULE, retry=RetryInfo("model_retry"))]
        ),
        ModelResponse(parts=[TextPart("Understood.")]),
        ModelRequest(parts=[UserPromptPart(f"The dates are 3 to 9 May. {RULE}")]),
        ModelResponse(parts=[TextPart(filler)]),
        *(
            message
            for n in range(3, 6)
            for message in (
                ModelRequest(parts=[UserPromptPart(f"Go on with day {n}.")]),
                ModelResponse(parts=[TextPart(filler)]),
            )
        ),
    ]
    state = restore(log)
    assert [state.authors[at] for at in (2, 4, 6)] == ["tool", "tool", "user"]
    summary = compactor().compact(state, force=True).summary
    assert summary is not None
    binding = [item.text for f in spec_of(Summary).binding for item in live_items(summary)[f.name]]
    assert RULE in binding
    assert not [text for text in binding if "aisle" in text]


# -- end to end on AnthropicModel, against the fake prefix check ---------------------------------


def anthropic_agent(
    wire: Wire, capability: ProgsumCapability, model: str = MODEL
) -> Agent[None, str]:
    """A coding agent on pydantic-ai's AnthropicModel, its client faked at the HTTP boundary."""
    provider = AnthropicProvider(anthropic_client=wire.async_client())
    agent: Agent[None, str] = Agent(
        AnthropicModel(model, provider=provider),
        instructions=INSTRUCTIONS,
        capabilities=[capability],
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return file_text(path)

    return agent


def converse_on(
    wire: Wire, turns: Sequence[str], *, model: str = MODEL, restarts: bool = False
) -> list[ModelMessage]:
    """Run ``turns``, the history passed on; with ``restarts``, each turn in a new process.

    A new process gets the history back from JSON (``ModelMessagesTypeAdapter``) and a new
    capability: nothing cached, progsum's state comes from the history's snapshot.
    """
    engine = wire.compactor(model)
    capability = ProgsumCapability(engine)
    history: list[ModelMessage] = []
    for text in turns:
        if restarts:
            capability = ProgsumCapability(engine)
            history = ModelMessagesTypeAdapter.validate_json(
                ModelMessagesTypeAdapter.dump_json(history)
            )
        agent = anthropic_agent(wire, capability, model)
        history = agent.run_sync(text, message_history=history).all_messages()
    return history


def test_anthropic_model_agent_sends_no_block_the_api_refuses_and_requests_only_grow() -> None:
    """Through compactions, recalls and restarts, every thinking block sent passes the check.

    Between compactions each request is the one before plus what was appended, the recall
    blocks included (each stays with its question until the next fold, also across a restart);
    pydantic-ai never had to retry with ``drop_block``.
    """
    wire = Wire()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pydantic-ai warns when it retries a refused request
        history = converse_on(wire, list(coding_turns(24)), restarts=True)
    report = wire.checked()
    thinking = [p for m in history for p in m.parts if isinstance(p, ThinkingPart)]
    assert len(thinking) == report.requests  # the stored history keeps every one


def test_an_older_claude_model_gets_its_thinking_whole() -> None:
    """On a model that does not bind thinking to its prefix nothing is left out (T1-T6)."""
    wire = Wire()
    converse_on(wire, list(coding_turns(12)), model="claude-sonnet-4-6")
    report = wire.report()
    assert report.compactions >= 1
    assert report.left_out
    assert not any(report.left_out)
