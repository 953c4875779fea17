"""The three framework adapters on one workload: what they store, and how often they compact.

    python -m pip install -e ".[langchain,pydantic-ai,openai-agents]"
    python bench/adapters.py              # 200 agent runs per adapter, well under a minute
    python bench/adapters.py --runs 60

Each adapter runs the same conversation through its framework's real agent loop: per run, a user
turn, a ``search_flights`` call, its result (about 1.4 KB) and a short answer. The model is each
framework's own fake (pydantic-ai ``FunctionModel``, the Agents SDK's ``ScriptedModel``, a
LangChain chat model), answering with the call and then the text, and reporting its usage as a
provider does: one token per four characters of what it was sent (instructions, texts, tool
arguments and results), a few tokens of framing per message and a fixed cost for the tool
definition. Every adapter gets the same policy (`WINDOW`, progsum's defaults otherwise: the tail
fitted to the target) and the extractive summarizer.

Columns: ``history`` is what the framework persists after the last run (pydantic-ai:
``all_messages()`` as JSON; Agents SDK: the session's items and progsum's state session;
LangChain: the checkpointed messages and the ``progsum`` key); ``snapshots`` counts progsum
states in it (the Agents SDK's state session also holds the usage reported since its snapshot)
and ``share`` is the part of the history progsum's records take; ``compactions``, ``stalls`` and
``reductions`` are the final state's events; ``largest request`` is the most input tokens any
model call reported.
A framework that is not installed is reported and skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from progsum import Compactor, ConversationState, Policy
from progsum.summarizers import ExtractiveSummarizer

WINDOW = 12_000
"""Tokens of the model's input window: a few dozen runs fill it."""
INSTRUCTIONS = "You are a travel agent. Book one flight per leg of the trip."
TOOL_TOKENS = 60
"""What the tool definition costs in every request (the fake provider adds it)."""
FRAMING = 4
"""Tokens of framing per message sent."""
RULE = "Never book a flight that departs before 9am."


def compactor() -> Compactor[Any]:
    """The compactor every adapter gets."""
    return Compactor(policy=Policy(context_window=WINDOW), summarizer=ExtractiveSummarizer())


def user_turn(run: int) -> str:
    """The user's message of run ``run`` (the rule is stated in the second)."""
    if run == 1:
        return f"Good. {RULE}"
    return f"Leg {run}: book the next flight of the trip, same airline as before if it fits."


def search_result(day: int) -> str:
    """What ``search_flights`` returns: about 1.4 KB of flight listings."""
    return f"Day {day}: " + "TP1234 departs 10:15, arrives 13:40, 212 EUR. " * 30


ANSWER = "TP1234 at 10:15 fits your rules; I booked it."


def provider_tokens(texts: Iterable[str], messages: int) -> int:
    """Input tokens a provider would report for a request carrying ``texts`` in ``messages``."""
    return sum(len(t) for t in texts) // 4 + FRAMING * messages + TOOL_TOKENS


class Row(NamedTuple):
    """One adapter's figures after the workload."""

    history: int
    snapshots: int
    snapshot_bytes: int
    state: ConversationState[Any]
    requests: int
    largest: int
    seconds: float


def outcomes(state: ConversationState[Any], outcome: str) -> int:
    """How many of the state's events have ``outcome``."""
    return sum(1 for e in state.events if e.outcome == outcome)


# -- pydantic-ai --------------------------------------------------------------------------------


def pydantic_ai_row(runs: int) -> Row:
    """``runs`` agent runs with `ProgsumCapability`, each given the previous run's messages."""
    from pydantic_ai import Agent  # noqa: PLC0415 - optional extra
    from pydantic_ai.messages import (  # noqa: PLC0415
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: PLC0415
    from pydantic_ai.usage import RequestUsage  # noqa: PLC0415

    from progsum.integrations.pydantic_ai import (  # noqa: PLC0415
        METADATA_KEY,
        ProgsumCapability,
        restore,
    )

    sent: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        texts = [info.instructions or ""]
        for message in messages:
            for part in message.parts:
                content = getattr(part, "content", None)
                texts.append(
                    content if isinstance(content, str) else str(getattr(part, "args", ""))
                )
        sent.append(provider_tokens(texts, len(messages)))
        usage = RequestUsage(input_tokens=sent[-1], output_tokens=12)
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart(ANSWER)], usage=usage)
        return ModelResponse(
            parts=[ToolCallPart("search_flights", {"day": len(sent)})], usage=usage
        )

    capability = ProgsumCapability(compactor())
    agent: Agent[None, str] = Agent(
        FunctionModel(model), instructions=INSTRUCTIONS, capabilities=[capability]
    )

    @agent.tool_plain
    def search_flights(day: int) -> str:
        """Search flights for a day of the trip."""
        return search_result(day)

    start = time.perf_counter()
    history: list[ModelMessage] = []
    for run in range(runs):
        history = agent.run_sync(user_turn(run), message_history=history).all_messages()
    seconds = time.perf_counter() - start
    stored = [
        m.metadata[METADATA_KEY]
        for m in history
        if isinstance(m, ModelRequest) and m.metadata and METADATA_KEY in m.metadata
    ]
    return Row(
        history=len(ModelMessagesTypeAdapter.dump_json(history)),
        snapshots=len(stored),
        snapshot_bytes=sum(len(json.dumps(s)) for s in stored),
        state=restore(history),
        requests=len(sent),
        largest=max(sent, default=0),
        seconds=seconds,
    )


# -- OpenAI Agents SDK --------------------------------------------------------------------------


def agents_row(runs: int) -> Row:
    """``runs`` runs of ``Runner.run`` on one `ProgsumSession` (in-memory SQLite sessions)."""
    from agents import Agent, Runner, function_tool, set_tracing_disabled  # noqa: PLC0415
    from agents.memory import SQLiteSession  # noqa: PLC0415
    from agents.testing import (  # noqa: PLC0415
        ModelCall,
        ModelStep,
        ScriptedModel,
        assistant_message,
        function_call,
    )
    from agents.usage import Usage  # noqa: PLC0415

    from progsum.integrations.openai_agents import STATE_ITEM, ProgsumSession  # noqa: PLC0415

    sent: list[int] = []

    def respond(call: ModelCall) -> ModelStep:
        items: list[Any] = call.input if isinstance(call.input, list) else [call.input]
        texts = [call.system_instructions or "", *(_item_text(i) for i in items)]
        sent.append(provider_tokens(texts, len(items)))
        usage = Usage(
            requests=1, input_tokens=sent[-1], output_tokens=12, total_tokens=sent[-1] + 12
        )
        n = len(sent)
        if isinstance(items[-1], dict) and items[-1].get("type") == "function_call_output":
            return ModelStep(output=[assistant_message(ANSWER, item_id=f"msg_{n}")], usage=usage)
        call_item = function_call("search_flights", {"day": n}, call_id=f"call_{n}")
        return ModelStep(output=[call_item], usage=usage)

    @function_tool
    def search_flights(day: int) -> str:
        """Search flights for a day of the trip."""
        return search_result(day)

    set_tracing_disabled(disabled=True)
    model = ScriptedModel()
    agent = Agent(name="travel", instructions=INSTRUCTIONS, model=model, tools=[search_flights])
    state_session = SQLiteSession("bench:progsum")
    session = ProgsumSession(
        "bench", SQLiteSession("bench"), compactor=compactor(), state_session=state_session
    )

    async def converse() -> tuple[list[Any], list[Any]]:
        for run in range(runs):
            model.extend([ModelStep.respond(respond), ModelStep.respond(respond)])
            await Runner.run(agent, user_turn(run), session=session)
        return await session.underlying_session.get_items(), await state_session.get_items()

    start = time.perf_counter()
    items, snapshots = asyncio.run(converse())
    seconds = time.perf_counter() - start
    if session.state is None:
        raise RuntimeError("the session was never read; Runner.run did not use it")
    return Row(
        history=len(json.dumps(items)) + len(json.dumps(snapshots)),
        snapshots=sum(1 for record in snapshots if record.get("type") == STATE_ITEM),
        snapshot_bytes=len(json.dumps(snapshots)),
        state=session.state,
        requests=len(sent),
        largest=max(sent, default=0),
        seconds=seconds,
    )


def _item_text(item: object) -> str:
    """The text a Responses input item carries (content, arguments or output)."""
    if not isinstance(item, dict):
        return str(item)
    for key in ("content", "arguments", "output"):
        value = item.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return "".join(str(part.get("text", "")) for part in value if isinstance(part, dict))
    return ""


# -- LangChain ----------------------------------------------------------------------------------


def langchain_row(runs: int) -> Row:
    """``runs`` invocations of a ``create_agent`` graph with `ProgsumMiddleware`, checkpointed."""
    from langchain.agents import create_agent  # noqa: PLC0415 - optional extra
    from langchain_core.language_models import BaseChatModel  # noqa: PLC0415
    from langchain_core.messages import (  # noqa: PLC0415
        AIMessage,
        BaseMessage,
        HumanMessage,
        ToolMessage,
        messages_to_dict,
    )
    from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: PLC0415
    from langchain_core.tools import tool  # noqa: PLC0415
    from langgraph.checkpoint.memory import InMemorySaver  # noqa: PLC0415

    from progsum.integrations.langchain import STATE_KEY, ProgsumMiddleware  # noqa: PLC0415

    sent: list[int] = []

    class FakeChat(BaseChatModel):
        """A chat model that calls the tool, then answers, and reports usage_metadata."""

        @property
        def _llm_type(self) -> str:
            return "progsum-bench-fake"

        def bind_tools(self, tools: Sequence[Any], **kwargs: object) -> FakeChat:  # noqa: ARG002
            return self

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,  # noqa: ARG002 - the interface's
            run_manager: Any = None,  # noqa: ARG002, ANN401 - the interface's
            **kwargs: object,  # noqa: ARG002 - the interface's
        ) -> ChatResult:
            texts = [str(m.text) for m in messages]
            texts += [json.dumps(c["args"]) for m in messages for c in getattr(m, "tool_calls", [])]
            sent.append(provider_tokens(texts, len(messages)))
            usage = {"input_tokens": sent[-1], "output_tokens": 12, "total_tokens": sent[-1] + 12}
            n = len(sent)
            if isinstance(messages[-1], ToolMessage):
                reply = AIMessage(ANSWER, usage_metadata=usage)
            else:
                call = {"name": "search_flights", "args": {"day": n}, "id": f"call_{n}"}
                reply = AIMessage("", tool_calls=[call], usage_metadata=usage)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    @tool
    def search_flights(day: int) -> str:
        """Search flights for a day of the trip."""
        return search_result(day)

    middleware = ProgsumMiddleware(compactor())
    agent = create_agent(
        FakeChat(),
        [search_flights],
        system_prompt=INSTRUCTIONS,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "bench"}}
    start = time.perf_counter()
    for run in range(runs):
        agent.invoke({"messages": [HumanMessage(user_turn(run))]}, config)
    seconds = time.perf_counter() - start
    values = agent.get_state(config).values
    stored = values.get(STATE_KEY)
    snapshot = len(json.dumps(stored)) if stored else 0
    _, state, _ = middleware.sync(dict(values))
    return Row(
        history=len(json.dumps(messages_to_dict(values["messages"]))) + snapshot,
        snapshots=1 if stored else 0,
        snapshot_bytes=snapshot,
        state=state,
        requests=len(sent),
        largest=max(sent, default=0),
        seconds=seconds,
    )


# -- the table ----------------------------------------------------------------------------------

ADAPTERS: Sequence[tuple[str, str, Callable[[int], Row]]] = (
    ("pydantic-ai", "pydantic_ai", pydantic_ai_row),
    ("OpenAI Agents SDK", "agents", agents_row),
    ("LangChain", "langchain", langchain_row),
)


def main(argv: Sequence[str] | None = None) -> dict[str, Row]:
    """Print one row per installed adapter; return the rows by adapter name."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="agent runs per adapter")
    args = parser.parse_args(argv)
    print(f"{args.runs} runs, window {WINDOW:,} tokens, progsum's default policy")
    print(
        "| adapter | history | snapshots | share | compactions | stalls | reductions "
        "| requests | largest request | seconds |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows: dict[str, Row] = {}
    for name, module, measure in ADAPTERS:
        if importlib.util.find_spec(module) is None:
            print(f"| {name} | not installed | | | | | | | | |")
            continue
        row = rows[name] = measure(args.runs)
        share = row.snapshot_bytes / row.history if row.history else 0.0
        print(
            f"| {name} | {row.history / 1000:,.0f} KB | {row.snapshots} | {share:.0%} "
            f"| {outcomes(row.state, 'compacted')} | {outcomes(row.state, 'stalled')} "
            f"| {outcomes(row.state, 'reduced')} | {row.requests} | {row.largest:,} "
            f"| {row.seconds:.1f} |"
        )
    return rows


if __name__ == "__main__":
    main()
