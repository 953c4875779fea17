"""Issue 46's figures for each adapter's end-to-end run, as a Markdown table.

    python -m tests.integrations.prefix_figures    # about 15 s; needs every framework extra

Runs the same conversations as the end-to-end tests (`test_langchain`, `test_pydantic_ai`,
`test_openai_agents`: each turn, or every other run, in a new process) and prints, per adapter,
what the fake prefix check saw (`tests/integrations/wire.py`).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from agents import RunConfig, Runner

from progsum.integrations.openai_agents import ProgsumSession
from tests.integrations import test_langchain, test_openai_agents, test_pydantic_ai
from tests.integrations.wire import Report, Wire, coding_turns


def anthropic_row(name: str, wire: Wire) -> str:
    """One adapter's row from its wire."""
    r: Report = wire.report()
    left_out = ", ".join(map(str, r.left_out))
    figures = (r.requests, r.compactions, r.sent, r.refused, left_out, r.grown)
    return f"| {name} | " + " | ".join(map(str, figures)) + " |"


def agents_row() -> str:
    """The Agents SDK session's row: every other run in a new process, with the input filter."""
    fake = test_openai_agents.Responses()
    path = str(Path(tempfile.mkdtemp()) / "chats.db")
    session = ProgsumSession.sqlite("trip", path, compactor=test_openai_agents.compactor(fake))
    for n, text in enumerate(test_openai_agents.TRIP):
        if n % 2:
            session = ProgsumSession.sqlite(
                "trip", path, compactor=test_openai_agents.compactor(fake)
            )
        config = RunConfig(call_model_input_filter=session.input_filter)
        run = Runner.run(test_openai_agents.agent(fake), text, session=session, run_config=config)
        asyncio.run(run)
    reasoning = sum(json.dumps(body["input"]).count('"type": "reasoning"') for body in fake.bodies)
    grown = test_openai_agents.grown(fake)
    return (
        f"| OpenAI Agents SDK | {len(fake.bodies)} | {fake.changes} | {reasoning} reasoning items"
        f" | n/a | 0 | {grown} |"
    )


def main() -> None:
    """Print the table on standard output."""
    langchain, pydantic_ai = Wire(), Wire()
    chat = test_langchain.chat_anthropic(langchain)
    test_langchain.converse_on(langchain, chat, list(coding_turns(24)), restarts=True)
    test_pydantic_ai.converse_on(pydantic_ai, list(coding_turns(24)), restarts=True)
    rows = [
        (
            "| adapter | requests | compactions (folds, reductions) | thinking blocks sent"
            " | refused | left out, first request after each compaction"
            " | request pairs checked append-only |"
        ),
        "|---|---:|---:|---:|---:|---|---:|",
        anthropic_row("LangChain (`ChatAnthropic`)", langchain),
        anthropic_row("pydantic-ai (`AnthropicModel`)", pydantic_ai),
        agents_row(),
    ]
    sys.stdout.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
