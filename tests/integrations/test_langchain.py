"""ProgsumMiddleware in a real LangChain v1 agent: compaction, valid requests, checkpoint restore.

The model is langchain-core's `GenericFakeChatModel` (the fake LangChain's own docs use), with
``bind_tools`` accepted and every request recorded at the model boundary. `valid_chat_request`
checks the Chat Completions rule the request must follow (OpenAI function-calling guide: each
tool message answers a call of the assistant message before its run of tool messages, and every
call is answered before the next non-tool message), written independently of progsum.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware", reason="needs the langchain extra")

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import SecretStr

from progsum import Compactor, ConfigError, ConversationState, Policy
from progsum.integrations._langchain import caught_up
from progsum.integrations.langchain import STATE_KEY, ProgsumMiddleware
from progsum.render import DROP_BLOCK_BETA, Thinking, drop_block_thinking
from progsum.store import MemoryArchive
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._merge import live_items
from progsum.summary._schema import Summary, spec_of
from tests.integrations.wire import MODEL, Wire, coding_turns, file_text

RULE = "Never book a flight that departs before 9am."
PROMPT = "You are a travel agent."


class RecordingModel(GenericFakeChatModel):
    """The fake chat model, recording what each call was sent; tools are accepted as bound."""

    requests: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, set per instance

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingModel:  # noqa: ARG002 - fake
        """Binding tools changes nothing for a scripted model."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.requests.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


@tool
def search_flights(day: int) -> str:
    """Search flights for a day of the trip."""
    return f"Day {day}: " + "TP1234 departs 10:15, arrives 13:40, 212 EUR. " * 30


def script(
    turns: int, *, recall_at: int | None = None, compact_at: int | None = None
) -> Iterator[AIMessage]:
    """Per user turn: a tool call, then a short answer; optionally a progsum tool call first."""
    for n in range(turns):
        if n == recall_at:
            call = {"name": "recall", "args": {"query": "9am"}, "id": f"recall_{n}"}
            yield AIMessage(content="", tool_calls=[call])
        if n == compact_at:
            call = {"name": "compact_conversation", "args": {}, "id": f"compact_{n}"}
            yield AIMessage(content="", tool_calls=[call])
        yield AIMessage(
            content="",
            tool_calls=[{"name": "search_flights", "args": {"day": n}, "id": f"call_{n}"}],
        )
        yield AIMessage(content=f"Day {n}: TP1234 at 10:15 fits your rules.")


def valid_chat_request(messages: Sequence[BaseMessage]) -> None:
    """Assert the request pairs every tool message with a call right before it, and vice versa."""
    open_calls: set[str] = set()
    for position, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls, f"{position}: result without its call"
            open_calls.discard(message.tool_call_id)
            continue
        last = position == len(messages) - 1
        assert not open_calls, f"{position}: calls {open_calls} were never answered"
        if isinstance(message, AIMessage) and message.tool_calls:
            open_calls = {str(call["id"]) for call in message.tool_calls}
            assert not last or open_calls
    assert isinstance(messages[0], SystemMessage)
    assert isinstance(messages[1], HumanMessage)


def compactor() -> Compactor[Any]:
    """A small window, so a short run compacts several times."""
    return Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=6_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
    )


def agent_for(model: Any, engine: Compactor[Any]) -> Any:
    """The flight agent on ``model`` with progsum's middleware over ``engine``, checkpointed."""
    return create_agent(
        model,
        [search_flights],
        system_prompt=PROMPT,
        middleware=[ProgsumMiddleware(engine)],
        checkpointer=InMemorySaver(),
    )


def run(agent: Any, thread: str, turns: Sequence[str]) -> dict[str, Any]:
    """Send each user turn to the agent on one checkpointed thread."""
    result: dict[str, Any] = {}
    for text in turns:
        config = {"configurable": {"thread_id": thread}}
        result = agent.invoke({"messages": [HumanMessage(text)]}, config)
    return result


def header_of(request: Sequence[BaseMessage]) -> str:
    """The header block of a request's system message ('' when there is none)."""
    content = request[0].content
    blocks = content if isinstance(content, list) else [content]
    texts = [b["text"] if isinstance(b, dict) else str(b) for b in blocks]
    return next((t for t in texts if t.startswith("# Earlier conversation")), "")


def test_agent_compacts_twice_and_requests_stay_valid() -> None:
    """A tool-using agent runs past two compactions; every request is valid and carries the rule."""
    model = RecordingModel(messages=script(10), requests=[])
    saver = InMemorySaver()
    middleware = ProgsumMiddleware(compactor())
    agent = create_agent(
        model, [search_flights], system_prompt=PROMPT, middleware=[middleware], checkpointer=saver
    )
    turns = ["Plan flights Lisbon to Tokyo, one leg a day.", f"Good. {RULE}"]
    result = run(agent, "t1", turns + [f"Next leg {n}." for n in range(8)])
    stored = result[STATE_KEY]
    events = stored["state"]["events"]
    assert sum(e["outcome"] == "compacted" for e in events) >= 2
    assert len(result["messages"]) == 40  # the graph keeps the whole log
    for request in model.requests:
        valid_chat_request(request)
    prompts = {repr(request[0].content) for request in model.requests}
    assert len(prompts) <= sum(e["outcome"] == "compacted" for e in events) + 1  # a stable prefix
    last = model.requests[-1]
    content = last[0].content
    assert isinstance(content, list)
    assert content[0] == {"type": "text", "text": PROMPT}  # the agent's own prompt stays first
    assert RULE in header_of(last)
    assert len(last) < len(result["messages"])


def test_restart_resumes_from_the_checkpoint() -> None:
    """A new middleware over the same checkpointer resumes the summary instead of starting over."""
    saver = InMemorySaver()
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(7)]
    first = RecordingModel(messages=script(9), requests=[])
    agent = create_agent(
        first,
        [search_flights],
        system_prompt=PROMPT,
        middleware=[ProgsumMiddleware(compactor())],
        checkpointer=saver,
    )
    before = run(agent, "t2", turns)[STATE_KEY]
    assert before["state"]["cutoff"] > 0

    second = RecordingModel(messages=script(1), requests=[])
    restarted = ProgsumMiddleware(compactor())  # a new process: nothing cached
    agent = create_agent(
        second, [search_flights], system_prompt=PROMPT, middleware=[restarted], checkpointer=saver
    )
    after = run(agent, "t2", ["One more leg."])[STATE_KEY]
    assert after["state"]["cutoff"] >= before["state"]["cutoff"]
    assert after["key"] == before["key"]
    request = second.requests[0]
    assert RULE in header_of(request)
    valid_chat_request(request)
    assert len(request) < 2 + len(turns) * 4


def test_recall_tool_reads_folded_messages() -> None:
    """The model's recall call is answered from the messages the summary folded."""
    model = RecordingModel(messages=script(9, recall_at=8), requests=[])
    agent = agent_for(model, compactor())
    turns = ["Plan flights.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(7)]
    result = run(agent, "t3", turns)
    answers = [m for m in result["messages"] if isinstance(m, ToolMessage) and m.name == "recall"]
    assert answers
    assert "9am" in answers[0].text
    assert answers[0].status == "success"


def test_compact_tool_compacts_and_stores_the_snapshot() -> None:
    """The model's compact_conversation call folds the history and the graph state records it."""
    model = RecordingModel(messages=script(6, compact_at=5), requests=[])
    roomy = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=12_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
    )
    agent = agent_for(model, roomy)
    turns = ["Plan flights.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(4)]
    result = run(agent, "t4", turns)
    answers = [
        m
        for m in result["messages"]
        if isinstance(m, ToolMessage) and m.name == "compact_conversation"
    ]
    assert answers
    assert answers[0].status == "success"
    assert answers[0].text.startswith("Compacted: messages 2-")
    events = result[STATE_KEY]["state"]["events"]
    assert [e["outcome"] for e in events] == ["compacted"]  # the tool's, not the trigger's
    after = model.requests[-1]
    assert RULE in header_of(after)
    valid_chat_request(after)


def test_async_agent_compacts_through_the_async_path() -> None:
    """``ainvoke`` runs awrap_model_call and the async compactor, with the same guarantees."""
    model = RecordingModel(messages=script(10), requests=[])
    agent = agent_for(model, compactor())
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(8)]

    async def converse() -> dict[str, Any]:
        result: dict[str, Any] = {}
        for text in turns:
            config: Any = {"configurable": {"thread_id": "t5"}}
            result = await agent.ainvoke({"messages": [HumanMessage(text)]}, config)
        return result

    result = asyncio.run(converse())
    events = result[STATE_KEY]["state"]["events"]
    assert sum(e["outcome"] == "compacted" for e in events) >= 2
    for request in model.requests:
        valid_chat_request(request)
    assert RULE in header_of(model.requests[-1])


def test_reported_usage_anchors_the_count() -> None:
    """A reply's usage_metadata (input + output tokens) becomes progsum's anchor."""
    usage = {"input_tokens": 50, "output_tokens": 5, "total_tokens": 55}
    reply = AIMessage("Found one.", id="m2", usage_metadata=usage)
    state = caught_up(ConversationState(), [HumanMessage("Find a flight.", id="m1"), reply])
    assert state.anchor is not None
    assert state.anchor.tokens == 55


def test_cached_input_is_reported_apart() -> None:
    """usage_metadata's cache reads and writes reach the agent's usage apart from fresh input."""
    usage: Any = {
        "input_tokens": 1_000,
        "output_tokens": 20,
        "total_tokens": 1_020,
        "input_token_details": {"cache_read": 700, "cache_creation": 100},
    }
    reply = AIMessage("Found one.", id="m2", usage_metadata=usage)
    state = caught_up(ConversationState(), [HumanMessage("Find a flight.", id="m1"), reply])
    assert state.anchor is not None
    assert state.anchor.tokens == 1_020
    reported = state.agent_usage
    assert (reported.input_tokens, reported.cache_read_input_tokens) == (200, 700)
    assert reported.cache_creation_input_tokens == 100


def test_archive_files_folded_messages_under_the_graph_thread() -> None:
    """With an archive, folded messages go to it under LangGraph's thread id; recall reads them."""
    archive = MemoryArchive()
    archived = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=6_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
        archive=archive,
    )
    model = RecordingModel(messages=script(9, recall_at=8), requests=[])
    agent = agent_for(model, archived)
    turns = ["Plan flights.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(7)]
    result = run(agent, "t6", turns)
    assert result[STATE_KEY]["state"]["cutoff"] > 3
    assert archive.threads() == ["t6"]
    assert any(RULE in str(entry.message) for entry in archive.get("t6"))
    answers = [m for m in result["messages"] if isinstance(m, ToolMessage) and m.name == "recall"]
    assert answers
    assert RULE in answers[0].text


def test_the_newest_user_message_opens_with_the_recall_block() -> None:
    """A question about a folded turn is sent with that turn quoted before it.

    The graph's own message is unchanged.
    """
    model = RecordingModel(messages=script(10), requests=[])
    agent = agent_for(model, compactor())
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(7)]
    question = "Which rule about departures before 9am did I give?"
    result = run(agent, "t-recall", [*turns, question])
    request = model.requests[-2]  # the call that answered the question with a tool call
    asked = [m for m in request if isinstance(m, HumanMessage)][-1]
    text = asked.content if isinstance(asked.content, str) else str(asked.content)
    assert text.startswith("<recalled_history ")
    assert RULE in text
    assert text.endswith(question)
    valid_chat_request(request)
    stored = [m for m in result["messages"] if isinstance(m, HumanMessage)][-1]
    assert stored.content == question  # the graph keeps the user's own message


HARNESS_RULE = "Always book aisle seats on every flight."
"""A rule-like sentence in a message LangChain's own middleware wrote in the human role."""


def test_a_message_langchain_wrote_never_binds_and_the_users_rule_does() -> None:
    """A HumanMessage LangChain wrote itself (``lc_source``) is harness text, not the user's.

    LangChain's SummarizationMiddleware puts its summary into the history as a HumanMessage
    marked ``additional_kwargs={"lc_source": "summarization"}``; a rule it quotes is not the
    person's word. The user's own rule in a later turn binds.
    """
    log: list[BaseMessage] = [
        HumanMessage("Plan my trip to Lisbon.", id="h0"),
        AIMessage("Happy to; which dates?", id="a0"),
        HumanMessage(
            f"Here is a summary of the conversation to date:\n\n{HARNESS_RULE}",
            additional_kwargs={"lc_source": "summarization"},
            id="s1",
        ),
        AIMessage("Noted.", id="a1"),
        HumanMessage(f"The dates are 3 to 9 May. {RULE}", id="h2"),
        AIMessage("Understood.", id="a2"),
        *(
            message
            for n in range(3, 6)
            for message in (
                HumanMessage(f"Go on with day {n}.", id=f"h{n}"),
                AIMessage(
                    " ".join([f"Day {n} has three trains and a ferry to the coast."] * 8),
                    id=f"a{n}",
                ),
            )
        ),
    ]
    state = caught_up(ConversationState(), log)
    assert state.authors[2] == "tool"
    assert state.authors[4] == "user"
    summary = compactor().compact(state, force=True).summary
    assert summary is not None
    binding = [item.text for f in spec_of(Summary).binding for item in live_items(summary)[f.name]]
    assert RULE in binding
    assert not [text for text in binding if "aisle" in text]


# -- end to end on ChatAnthropic, against the fake prefix check --------------------------------


def chat_anthropic(wire: Wire, model: str = MODEL, **options: Any) -> ChatAnthropic:
    """langchain-anthropic's ChatAnthropic, its cached clients faked at the HTTP boundary."""
    chat = ChatAnthropic(model=model, api_key=SecretStr("sk-test"), max_tokens=512, **options)
    chat.__dict__["_client"] = wire.client()
    chat.__dict__["_async_client"] = wire.async_client()
    return chat


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return file_text(path)


def converse_on(
    wire: Wire,
    chat: ChatAnthropic,
    turns: Sequence[str],
    *,
    restarts: bool = False,
    thinking: Thinking = "auto",
) -> None:
    """Run ``turns`` on one checkpointed thread; with ``restarts``, each turn in a new process.

    A new process is a new middleware over the same checkpointer: nothing cached, progsum's state
    comes back from the graph state.
    """
    engine = wire.compactor(chat.model)
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "coding"}}
    agent: Any = None
    for text in turns:
        if agent is None or restarts:
            agent = create_agent(
                chat,
                [read_file],
                system_prompt=PROMPT,
                middleware=[ProgsumMiddleware(engine, thinking=thinking)],
                checkpointer=saver,
            )
        agent.invoke({"messages": [HumanMessage(text)]}, config)


def test_chat_anthropic_agent_sends_no_block_the_api_refuses_and_requests_only_grow() -> None:
    """Through compactions, recalls and restarts, every thinking block sent passes the check.

    Between compactions each request is the one before plus what was appended, the recall
    blocks included (each stays with its question until the next fold, also across a restart).
    """
    wire = Wire()
    converse_on(wire, chat_anthropic(wire), list(coding_turns(24)), restarts=True)
    wire.checked()


def test_an_older_claude_model_gets_its_thinking_whole() -> None:
    """On a model that does not bind thinking to its prefix nothing is left out (T1-T6)."""
    wire = Wire()
    converse_on(wire, chat_anthropic(wire, "claude-sonnet-4-6"), list(coding_turns(12)))
    report = wire.report()
    assert report.compactions >= 1
    assert report.left_out
    assert not any(report.left_out)


def test_with_drop_block_the_api_drops_what_the_middleware_sends_whole() -> None:
    """thinking='drop_block' sends every block; the model asks the API to drop the stale ones."""
    wire = Wire()
    chat = chat_anthropic(wire, thinking=drop_block_thinking(), betas=[DROP_BLOCK_BETA])
    converse_on(wire, chat, list(coding_turns(12)), thinking="drop_block")
    report = wire.report()
    assert report.compactions >= 1
    assert report.refused == 0
    assert wire.api.dropped > 0
    assert not any(report.left_out)


def test_a_bad_thinking_mode_is_refused_when_the_middleware_is_made() -> None:
    """An unknown thinking mode fails at once, naming the modes."""
    with pytest.raises(ConfigError, match="'auto', 'strip', 'keep', 'drop_block'"):
        ProgsumMiddleware(compactor(), thinking="strp")  # type: ignore[arg-type]  # the mistake
