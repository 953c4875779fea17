"""Per-model-call overhead of progsum's framework adapters beside each framework's own compaction.

    python -m pip install -e ".[bench]"        # LangChain, pydantic-ai (+ harness), Agents SDK
    python bench/bench_integrations.py          # 1,000 and 10,000 messages, about a minute
    python bench/bench_integrations.py --sizes 1000 --calls 20

For each framework, one conversation of N messages in the framework's own types (user turns,
answers, a tool call and its result every fourth message) grows by one message per model call,
in a window large enough that nothing fires, and each side's per-call hook is timed (median
microseconds of wall clock, garbage collection paused). Both sides see the same messages:

* LangChain 1.x: ``ProgsumMiddleware.wrap_model_call`` (with an instant model handler) beside
  ``SummarizationMiddleware.before_model`` with a token trigger; the graph's ``add_messages``
  reducer runs for both and is not timed.
* pydantic-ai: ``ProgsumCapability``'s request hook beside pydantic-ai-harness's
  ``SummarizingCompaction.before_model_request`` with a token trigger (``max_tokens``).
* OpenAI Agents SDK: ``ProgsumSession`` ``add_items`` + ``get_items`` beside
  ``OpenAIResponsesCompactionSession`` ``add_items`` + ``get_items`` + ``run_compaction`` (what
  the runner calls after a turn; its trigger hook says no), both over an in-memory
  ``SQLiteSession``.

A framework that is not installed is reported and skipped. Compare ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import importlib.util
import json
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from progsum import Compactor, Policy
from progsum.summarizers import ExtractiveSummarizer

CALL, RESULT, ANSWER = 1, 2, 3
"""Positions in each run of four messages: a user turn, a tool call, its result, an answer."""
BIG_WINDOW = 4_000_000
"""Tokens: large enough that no compaction fires at 10,000 messages (about 40 tokens each)."""
NEVER = 10**9


def compactor() -> Compactor[Any]:
    """A progsum compactor whose window never fills here."""
    return Compactor(policy=Policy(context_window=BIG_WINDOW), summarizer=ExtractiveSummarizer())


def median_us(calls: int, step: Callable[[int], Callable[[], object]]) -> float:
    """Median microseconds of ``step(n)()``; ``step(n)`` prepares call ``n`` untimed."""
    times: list[float] = []
    gc.disable()
    try:
        for n in range(calls):
            call = step(n)
            start = time.perf_counter_ns()
            call()
            times.append((time.perf_counter_ns() - start) / 1_000)
    finally:
        gc.enable()
    return statistics.median(times)


def text(n: int) -> str:
    """About 40 tokens of chat."""
    return f"Message {n}: we compared two itineraries and kept the cheaper one, as agreed."


# -- LangChain ----------------------------------------------------------------------------------


def langchain_row(size: int, calls: int) -> tuple[float, float]:
    """Microseconds per model call: (progsum middleware, SummarizationMiddleware)."""
    from langchain.agents.middleware import SummarizationMiddleware  # noqa: PLC0415 - optional
    from langchain.agents.middleware.types import ModelRequest, ModelResponse  # noqa: PLC0415
    from langchain_core.language_models.fake_chat_models import (  # noqa: PLC0415
        GenericFakeChatModel,
    )
    from langchain_core.messages import (  # noqa: PLC0415
        AIMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
    from langgraph.graph import message as graph_message  # noqa: PLC0415

    from progsum.integrations.langchain import ProgsumMiddleware  # noqa: PLC0415

    add_messages: Any = graph_message.add_messages  # the agent state's reducer
    request_type: Any = ModelRequest

    def message(n: int) -> BaseMessage:
        if n % 4 == CALL:
            call = {"name": "search", "args": {"q": n}, "id": f"call_{n}"}
            return AIMessage(content="", tool_calls=[call], id=f"m{n}")
        if n % 4 == RESULT:
            return ToolMessage(content=text(n), tool_call_id=f"call_{n - 1}", id=f"m{n}")
        if n % 4 == ANSWER:
            return AIMessage(content=text(n), id=f"m{n}")
        return HumanMessage(content=text(n), id=f"m{n}")

    model = GenericFakeChatModel(messages=iter([]))
    builtin = SummarizationMiddleware(model, trigger=("tokens", NEVER))
    progsum = ProgsumMiddleware(compactor(), tools=False)
    reply = ModelResponse(result=[AIMessage(content="ok")])
    system = SystemMessage(content="You are a travel agent.")
    messages: list[BaseMessage] = add_messages([], [message(n) for n in range(size)])
    graph: dict[str, Any] = {"messages": messages}

    def call(request: Any) -> None:  # noqa: ANN401 - a LangChain ModelRequest
        result = progsum.wrap_model_call(request, lambda _: reply)
        if result.command is not None:  # what LangGraph does with the returned Command
            graph.update(result.command.update or {})

    def ours(n: int) -> Callable[[], object]:
        graph["messages"] = add_messages(graph["messages"], [message(size + n)])
        request = request_type(
            model=model, messages=graph["messages"], system_message=system, state=graph
        )
        return lambda: call(request)

    theirs_state: dict[str, Any] = {"messages": list(messages)}

    def theirs(n: int) -> Callable[[], object]:
        theirs_state["messages"] = add_messages(theirs_state["messages"], [message(size + n)])
        return lambda: builtin.before_model(theirs_state, None)  # type: ignore[arg-type]  # the hook reads no runtime

    call(request_type(model=model, messages=messages, system_message=system, state=graph))
    # that first call read the log once, as after a restart; the timed ones append
    return median_us(calls, ours), median_us(calls, theirs)


# -- pydantic-ai --------------------------------------------------------------------------------


def pydantic_ai_row(size: int, calls: int) -> tuple[float, float] | str:
    """Microseconds per model request: (progsum capability, SummarizingCompaction)."""
    if importlib.util.find_spec("pydantic_ai_harness") is None:
        return "pydantic-ai-harness is not installed"
    from pydantic_ai.messages import (  # noqa: PLC0415 - optional
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import ModelRequestContext, ModelRequestParameters  # noqa: PLC0415
    from pydantic_ai.models.function import FunctionModel  # noqa: PLC0415
    from pydantic_ai.tools import RunContext  # noqa: PLC0415
    from pydantic_ai.usage import RunUsage  # noqa: PLC0415

    from progsum.integrations.pydantic_ai import ProgsumCapability  # noqa: PLC0415

    def message(n: int) -> ModelMessage:
        if n % 4 == CALL:
            return ModelResponse(parts=[ToolCallPart("search", {"q": n}, tool_call_id=f"c{n}")])
        if n % 4 == RESULT:
            return ModelRequest(parts=[ToolReturnPart("search", text(n), tool_call_id=f"c{n - 1}")])
        if n % 4 == ANSWER:
            return ModelResponse(parts=[TextPart(text(n))])
        return ModelRequest(parts=[UserPromptPart(text(n))])

    model = FunctionModel(lambda _messages, _info: ModelResponse(parts=[TextPart("ok")]))
    harness: Any = importlib.import_module("pydantic_ai_harness.compaction")  # bench extra only
    builtin = harness.SummarizingCompaction(model=model, max_tokens=NEVER)
    progsum = ProgsumCapability(compactor())
    loop = asyncio.new_event_loop()

    def timed(hook: Callable[[Any, Any], Awaitable[Any]]) -> Callable[[int], Callable[[], object]]:
        history: list[ModelMessage] = [message(n) for n in range(size)]

        def step(n: int) -> Callable[[], object]:
            history.append(message(size + n))
            ctx = RunContext(deps=None, model=model, usage=RunUsage(), messages=history)
            request = ModelRequestContext(
                model=model,
                messages=list(history),
                model_settings=None,
                model_request_parameters=ModelRequestParameters(),
            )
            return lambda: loop.run_until_complete(hook(ctx, request))

        return step

    ours_hook = (
        progsum.prepare_model_request
        if hasattr(type(builtin).__mro__[-2], "prepare_model_request")
        else progsum.before_model_request
    )
    try:
        ours = median_us(calls, timed(ours_hook))
        theirs = median_us(calls, timed(builtin.before_model_request))
    finally:
        loop.close()
    return ours, theirs


# -- OpenAI Agents SDK --------------------------------------------------------------------------


def agents_row(size: int, calls: int) -> tuple[float, float]:
    """Microseconds per turn: (ProgsumSession, OpenAIResponsesCompactionSession)."""
    from agents.memory import (  # noqa: PLC0415 - optional
        OpenAIResponsesCompactionSession,
        SQLiteSession,
    )
    from openai import AsyncOpenAI  # noqa: PLC0415

    from progsum.integrations.openai_agents import ProgsumSession  # noqa: PLC0415

    def item(n: int) -> dict[str, Any]:
        if n % 4 == CALL:
            return {
                "type": "function_call",
                "call_id": f"c{n}",
                "name": "search",
                "arguments": json.dumps({"q": n}),
                "id": f"fc_{n}",
            }
        if n % 4 == RESULT:
            return {"type": "function_call_output", "call_id": f"c{n - 1}", "output": text(n)}
        if n % 4 == ANSWER:
            part = {"type": "output_text", "text": text(n), "annotations": []}
            return {"type": "message", "role": "assistant", "id": f"msg_{n}", "content": [part]}
        return {"role": "user", "content": text(n)}

    loop = asyncio.new_event_loop()
    ours = ProgsumSession("bench", SQLiteSession("bench"), compactor=compactor())
    theirs = OpenAIResponsesCompactionSession(
        "bench",
        SQLiteSession("bench"),
        client=AsyncOpenAI(api_key="sk-bench"),
        should_trigger_compaction=lambda _context: False,
    )
    history: list[Any] = [item(n) for n in range(size)]
    loop.run_until_complete(ours.add_items(history))
    loop.run_until_complete(theirs.add_items(history))

    async def our_turn(new: list[Any]) -> None:
        await ours.add_items(new)
        await ours.get_items()

    async def their_turn(new: list[Any], n: int) -> None:
        await theirs.add_items(new)
        await theirs.get_items()
        await theirs.run_compaction({"response_id": f"resp_{n}"})

    try:
        progsum_us = median_us(
            calls, lambda n: lambda: loop.run_until_complete(our_turn([item(size + n)]))
        )
        builtin_us = median_us(
            calls, lambda n: lambda: loop.run_until_complete(their_turn([item(size + n)], n))
        )
    finally:
        loop.close()
    return progsum_us, builtin_us


# -- the table ----------------------------------------------------------------------------------

ROWS: Sequence[tuple[str, str, str, Callable[[int, int], tuple[float, float] | str]]] = (
    ("LangChain", "langchain", "SummarizationMiddleware", langchain_row),
    ("pydantic-ai", "pydantic_ai", "harness SummarizingCompaction", pydantic_ai_row),
    ("OpenAI Agents SDK", "agents", "OpenAIResponsesCompactionSession", agents_row),
)


def main(argv: Sequence[str] | None = None) -> None:
    """Print one row per framework and size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="messages, comma-separated")
    parser.add_argument("--calls", type=int, default=40, help="timed model calls per cell")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| framework | messages | progsum adapter | built-in | built-in | built-in / progsum |")
    print("|---|---:|---:|---|---:|---:|")
    for name, module, builtin, row in ROWS:
        if importlib.util.find_spec(module) is None:
            print(f"| {name} | | not installed | {builtin} | | |")
            continue
        for size in sizes:
            result = row(size, args.calls)
            if isinstance(result, str):
                print(f"| {name} | {size:,} | | {builtin}: {result} | | |")
                continue
            ours, theirs = result
            print(
                f"| {name} | {size:,} | {ours:,.0f} µs | {builtin} | {theirs:,.0f} µs | "
                f"{theirs / ours:,.1f}\u00d7 |"
            )


if __name__ == "__main__":
    main()
