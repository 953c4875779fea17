"""ProgsumSession with the real OpenAI Agents SDK, the model faked at the HTTP boundary.

The agent runs on ``OpenAIResponsesModel`` over a real ``AsyncOpenAI`` client whose transport is
``httpx2.MockTransport``: every ``POST /responses`` body is recorded and answered with Responses
API JSON (a reasoning item with ``encrypted_content`` and a function call, then a message).
`valid_input` checks what the Responses API enforces on ``input`` (its 400 errors, see
tests/test_responses.py): each output answers a call sent before it, each call is answered, a
call made with a reasoning item is sent with it, and reasoning items come back byte for byte.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs the openai-agents extra")

import httpx2
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

from progsum import Compactor, Policy
from progsum.integrations.openai_agents import ProgsumSession
from progsum.summarizers import ExtractiveSummarizer

RULE = "Never book a flight that departs before 9am."
INSTRUCTIONS = "You are a travel agent."


class Responses:
    """A fake ``/responses`` endpoint: a tool call per user turn, then an answer."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Answer one ``POST /responses``."""
        body = json.loads(request.content)
        self.bodies.append(body)
        n = len(self.bodies)
        last = body["input"][-1]
        if last.get("type") == "function_call_output":
            output: list[dict[str, Any]] = [
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": "TP1234 at 10:15 fits.", "annotations": []}
                    ],
                }
            ]
        else:
            output = [
                {
                    "type": "reasoning",
                    "id": f"rs_{n}",
                    "summary": [],
                    "encrypted_content": f"gAAAAenc{n}" + "z" * 80,
                },
                {
                    "type": "function_call",
                    "id": f"fc_{n}",
                    "call_id": f"call_{n}",
                    "name": "search_flights",
                    "arguments": json.dumps({"day": n}),
                    "status": "completed",
                },
            ]
        reply = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1_700_000_000,
            "model": body["model"],
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 100,
                "output_tokens": 10,
                "total_tokens": 110,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
        return httpx2.Response(200, json=reply)


@function_tool
def search_flights(day: int) -> str:
    """Search flights for a day of the trip."""
    return f"Day {day}: " + "TP1234 departs 10:15, arrives 13:40, 212 EUR. " * 30


def valid_input(items: Sequence[Any], log: Sequence[Any]) -> None:
    """Assert the Responses API's pairing and reasoning rules over a request's ``input``."""
    sent_calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    for position, item in enumerate(items):
        if item.get("type") == "function_call_output":
            earlier = {
                i.get("call_id") for i in items[:position] if i.get("type") == "function_call"
            }
            assert item["call_id"] in earlier, f"output {item['call_id']} without its call"
    assert set(sent_calls) <= set(outputs) | {sent_calls[-1]} if sent_calls else True
    reasoning = {i["id"]: i for i in log if i.get("type") == "reasoning"}
    sent_ids = {i.get("id") for i in items}
    for index, item in enumerate(log):
        if item.get("type") == "function_call" and item.get("id") in sent_ids and index:
            before = log[index - 1]
            if before.get("type") == "reasoning":
                assert before["id"] in sent_ids, f"call {item['call_id']} without its reasoning"
    for item in items:
        if item.get("type") == "reasoning":
            assert item["encrypted_content"] == reasoning[item["id"]]["encrypted_content"]


def compactor() -> Compactor[Any]:
    """A small window, so a short run compacts several times."""
    return Compactor(
        policy=Policy(context_window=6_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
    )


def agent(fake: Responses) -> Agent[Any]:
    """An agent on the Responses model, its client faked at the transport."""
    set_tracing_disabled(disabled=True)
    client = AsyncOpenAI(
        api_key="sk-test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(fake))
    )
    model = OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)
    return Agent(name="travel", instructions=INSTRUCTIONS, model=model, tools=[search_flights])


async def converse(session: ProgsumSession, fake: Responses, turns: Sequence[str]) -> None:
    """Run each user turn on the session."""
    for text in turns:
        await Runner.run(agent(fake), text, session=session)


def test_session_compacts_and_requests_stay_valid(tmp_path: Path) -> None:
    """Past two compactions, every request is valid, short, and carries the rule in its header."""
    fake = Responses()
    session = ProgsumSession.sqlite("trip", str(tmp_path / "chats.db"), compactor=compactor())
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [
        f"Next leg {n}." for n in range(8)
    ]
    asyncio.run(converse(session, fake, turns))
    state = session.state
    assert state is not None
    assert sum(e.outcome == "compacted" for e in state.events) >= 2
    log = asyncio.run(session.underlying_session.get_items())
    assert len(log) == 50  # every item is stored
    for body in fake.bodies:
        assert body["instructions"] == INSTRUCTIONS
        valid_input(body["input"], log)
    last = fake.bodies[-1]["input"]
    assert last[0]["role"] == "developer"
    assert RULE in last[0]["content"]
    assert len(last) < len(log)


def test_new_process_resumes_from_the_stored_session(tmp_path: Path) -> None:
    """A new ProgsumSession over the same SQLite file resumes the summary without recomputing it."""
    path = str(tmp_path / "chats.db")
    first = ProgsumSession.sqlite("trip", path, compactor=compactor())
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(7)]
    asyncio.run(converse(first, Responses(), turns))
    assert first.state is not None
    events = len(first.state.events)

    resumed = ProgsumSession.sqlite("trip", path, compactor=compactor())
    items = asyncio.run(resumed.get_items())
    assert resumed.state is not None
    assert len(resumed.state.events) == events
    assert resumed.state.cutoff == first.state.cutoff
    assert RULE in items[0]["content"]
    fake = Responses()
    asyncio.run(converse(resumed, fake, ["One more leg."]))
    valid_input(fake.bodies[0]["input"], asyncio.run(resumed.underlying_session.get_items()))


def test_malformed_item_is_not_stored(tmp_path: Path) -> None:
    """An item progsum cannot read is refused before it reaches the underlying session."""
    session = ProgsumSession.sqlite("bad", str(tmp_path / "c.db"), compactor=compactor())
    with pytest.raises(ValueError, match="call_id"):
        asyncio.run(session.add_items([{"type": "function_call", "name": "f", "arguments": "{}"}]))
    assert asyncio.run(session.underlying_session.get_items()) == []
