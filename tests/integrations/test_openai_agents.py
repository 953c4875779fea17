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
import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs the openai-agents extra")

import httpx2
from agents import (
    Agent,
    RunConfig,
    RunContextWrapper,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.memory import SQLiteSession
from agents.models.openai_responses import OpenAIResponsesModel
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from openai import AsyncOpenAI

from progsum import Compactor, ConversationState, Policy
from progsum.integrations.openai_agents import ProgsumSession
from progsum.store import MemoryArchive
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._merge import live_items
from progsum.summary._schema import Summary, spec_of
from tests.integrations.wire import Changes

RULE = "Never book a flight that departs before 9am."
INSTRUCTIONS = "You are a travel agent."


class Responses(Changes):
    """A fake ``/responses`` endpoint: a tool call per user turn, then an answer.

    As the compactor's event hook (`on_event`) it also counts what changed the prefix (folds,
    reductions) before each request (`before`).
    """

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Answer one ``POST /responses``."""
        body = json.loads(request.content)
        self.bodies.append(body)
        self.mark()
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
        sent = (len(json.dumps(body["input"])) + len(body.get("instructions") or "")) // 4
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
            "usage": {  # as a provider counts: about four characters a token of what it got
                "input_tokens": sent,
                "output_tokens": 10,
                "total_tokens": sent + 10,
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


def compactor(fake: Responses | None = None, *, keep: int = 4) -> Compactor[Any]:
    """A small window, so a short run compacts several times (``fake`` counts its events)."""
    return Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=4_000, keep=("messages", keep)),
        summarizer=ExtractiveSummarizer(),
        on_event=None if fake is None else fake.on_event,
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
    expected = asyncio.run(first.get_items())  # what the next run would be sent
    assert first.state is not None
    events = len(first.state.events)

    resumed = ProgsumSession.sqlite("trip", path, compactor=compactor())
    items = asyncio.run(resumed.get_items())
    assert resumed.state is not None
    assert len(resumed.state.events) == events
    assert resumed.state.cutoff == first.state.cutoff
    assert resumed.state.anchor == first.state.anchor  # the reports since were kept too
    assert resumed.state.agent_usage == first.state.agent_usage
    assert items == expected
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


class Scripted:
    """The Agents SDK's own fake model: per user turn a call, then an answer, with usage.

    Each response reports usage as a provider does (input: what it was sent, about four
    characters a token; output: a few tokens), so progsum can anchor its count on it.
    """

    def __init__(self, *, calls: Sequence[tuple[str, dict[str, Any]]] = ()) -> None:
        self.model = ScriptedModel([ModelStep.respond(self.respond)])
        self.reported: list[int] = []
        self.extra = list(calls)

    def respond(self, call: ModelCall) -> ModelStep:
        """A tool call for a new user turn (a scripted progsum call first), else an answer."""
        self.model.enqueue(ModelStep.respond(self.respond))  # always one step ahead
        items: list[Any] = list(call.input) if isinstance(call.input, list) else [call.input]
        sent = len(json.dumps(items, default=str)) // 4 + len(call.system_instructions or "") // 4
        self.reported.append(sent + 10)
        usage = Usage(requests=1, input_tokens=sent, output_tokens=10, total_tokens=sent + 10)
        n = len(self.reported)
        if items[-1].get("type") == "function_call_output":
            if self.extra and items[-1]["call_id"].startswith("call_"):
                name, arguments = self.extra.pop(0)
                output = [function_call(name, arguments, call_id=f"progsum_{n}")]
                return ModelStep(output=output, usage=usage)
            return ModelStep(
                output=[assistant_message("TP1234 fits.", item_id=f"msg_{n}")], usage=usage
            )
        output = [function_call("search_flights", {"day": n}, call_id=f"call_{n}")]
        return ModelStep(output=output, usage=usage)

    def agent(self, tools: Sequence[Any] = ()) -> Agent[Any]:
        """An agent on this model with ``search_flights`` and ``tools``."""
        set_tracing_disabled(disabled=True)
        return Agent(
            name="travel",
            instructions=INSTRUCTIONS,
            model=self.model,
            tools=[search_flights, *tools],
        )

    async def converse(
        self, session: ProgsumSession, turns: Sequence[str], tools: Sequence[Any] = ()
    ) -> None:
        """Run each user turn on the session, scripting enough model steps for it."""
        for text in turns:
            await Runner.run(self.agent(tools), text, session=session)


def test_reported_usage_anchors_the_count(tmp_path: Path) -> None:
    """Each response's usage reaches progsum: the count is anchored on the newest report."""
    fake = Scripted()
    session = ProgsumSession.sqlite("usage", str(tmp_path / "u.db"), compactor=compactor())
    asyncio.run(fake.converse(session, ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"]))
    state = session.state
    assert state is not None
    assert state.agent_usage.reports == len(fake.reported) == 4
    assert state.agent_usage.tokens == sum(fake.reported)
    assert state.anchor is not None
    assert state.anchor.tokens == fake.reported[-1]


def test_recall_tool_reads_the_archive(tmp_path: Path) -> None:
    """With an archive, ``session.tools`` is ``recall``; the model's call reads folded items."""
    archive = MemoryArchive()
    archived = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=4_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
        archive=archive,
    )
    session = ProgsumSession.sqlite("recall", str(tmp_path / "r.db"), compactor=archived)
    assert [tool.name for tool in session.tools] == ["recall"]
    fake = Scripted()
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(7)]
    asyncio.run(fake.converse(session, turns, session.tools))
    assert session.state is not None
    assert session.state.cutoff > 3  # the rule's turn is folded, in the archive only

    fake.extra = [("recall", {"query": "9am"})]
    asyncio.run(fake.converse(session, ["Which rule did I give you?"], session.tools))
    call = fake.model.calls[-2]
    assert "recall" in [tool.name for tool in call.tools]
    stored: list[Any] = asyncio.run(session.underlying_session.get_items())
    answers = [
        item["output"]
        for item in stored
        if item.get("type") == "function_call_output" and item["call_id"].startswith("progsum_")
    ]
    assert len(answers) == 1
    assert RULE in str(answers[0])


def test_no_archive_no_tools(tmp_path: Path) -> None:
    """Without an archive the session offers no tool (the header promises no archive either)."""
    session = ProgsumSession.sqlite("plain", str(tmp_path / "p.db"), compactor=compactor())
    assert session.tools == []


def response_usage(tokens: int) -> Usage:
    """One model response's usage, as the runner adds it to the run's context."""
    return Usage(requests=1, input_tokens=tokens, output_tokens=5, total_tokens=tokens + 5)


def test_each_report_counts_once_and_anchors_before_the_tool_outputs() -> None:
    """A report anchors after the model's items of the batch; reports already seen are skipped."""
    session = ProgsumSession("once", SQLiteSession("once"), compactor=compactor())
    run = RunContextWrapper(context=None)
    user = {"role": "user", "content": "Find a flight."}
    asyncio.run(session.add_items([user], wrapper=run))  # saved before the model is called
    run.usage.add(response_usage(40))
    call = {"type": "function_call", "call_id": "c1", "name": "search_flights", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "TP1234 10:15 " * 40}
    asyncio.run(session.add_items([call, output], wrapper=run))
    state = session.state
    assert state is not None
    assert state.anchor is not None
    assert state.anchor.tokens == 45
    before_output = ConversationState([user, call]).estimate(session.compactor.counter)
    assert state.anchor.estimate == before_output  # the tool output came after the report
    assert state.agent_usage.reports == 1

    resumed = RunContextWrapper(context=None)  # a resumed run carries a copy of the usage
    resumed.usage = copy.deepcopy(run.usage)
    resumed.usage.add(response_usage(200))
    answer = {"role": "assistant", "content": "TP1234 at 10:15."}
    asyncio.run(session.add_items([answer], wrapper=resumed))
    state = session.state
    assert state is not None
    assert state.agent_usage.reports == 2
    assert state.anchor is not None
    assert state.anchor.tokens == 205

    asyncio.run(session.add_items([{"role": "user", "content": "Thanks."}], wrapper=None))
    assert session.state is not None
    assert session.state.agent_usage.reports == 2


def test_without_the_filter_a_block_answers_a_stored_question_from_a_fold_on(
    tmp_path: Path,
) -> None:
    """Without the input filter, recall answers the newest stored question, right after a fold.

    The runner reads the session before it stores a run's new input, and a question the model
    was sent without a block must stay without one (requests only grow between compactions):
    so the session quotes a block only in the first request after a fold, which rewrites the
    prefix anyway, before the newest user item it holds (the previous run's question), and that
    item keeps it in every request until the next fold. The stored items stay the user's own.
    """
    fake = Responses()
    engine = compactor(fake, keep=8)  # the previous run's question stays in the tail
    session = ProgsumSession.sqlite("trip", str(tmp_path / "chats.db"), compactor=engine)
    asyncio.run(converse(session, fake, TRIP))
    assert fake.changes >= 2
    assert any(blocks(body) for body in fake.bodies)
    for n, body in enumerate(fake.bodies):
        if n and blocks(body) > blocks(fake.bodies[n - 1]):
            assert fake.before[n] != fake.before[n - 1], f"request {n}: a block between folds"
        quoted = [
            item
            for item in body["input"]
            if item.get("role") == "user" and "recalled_history" in json.dumps(item)
        ]
        for item in quoted:
            content = item["content"]
            assert content.startswith("<recalled_history ")
            assert content.rpartition("</recalled_history>\n\n")[2] in TRIP
            assert item is not body["input"][-1]  # never the run's own question
    assert grown(fake) > len(fake.bodies) // 2
    log = asyncio.run(session.underlying_session.get_items())
    for body in fake.bodies:
        valid_input(body["input"], log)
    assert not any("recalled_history" in json.dumps(item) for item in log)


def test_the_input_filter_quotes_the_block_before_this_runs_question(tmp_path: Path) -> None:
    """With ``session.input_filter`` the run's own question opens with what it recalls.

    From the run's first model call on; the stored items stay the user's own.
    """
    fake = Responses()
    session = ProgsumSession.sqlite("trip", str(tmp_path / "chats.db"), compactor=compactor())
    turns = ["Plan flights Lisbon to Tokyo.", f"Good. {RULE}"] + [f"Leg {n}." for n in range(7)]
    asyncio.run(converse(session, fake, turns))
    question = "Which rule about departures before 9am did I give?"
    before = len(fake.bodies)
    config = RunConfig(call_model_input_filter=session.input_filter)
    asyncio.run(Runner.run(agent(fake), question, session=session, run_config=config))
    first = fake.bodies[before]["input"]
    asked = [i for i in first if i.get("role") == "user"][-1]
    content = asked["content"] if isinstance(asked["content"], str) else json.dumps(asked)
    assert content.startswith("<recalled_history ")
    assert RULE in content
    assert content.endswith(question)
    assert sum("recalled_history" in json.dumps(item) for item in first) == 1
    log = asyncio.run(session.underlying_session.get_items())
    valid_input(first, log)
    assert not any("recalled_history" in json.dumps(item) for item in log)


HARNESS_RULE = "Always book aisle seats on every flight."


def test_items_the_application_wrote_never_bind_and_the_users_do(tmp_path: Path) -> None:
    """A developer or system item (the application's words) never binds; the user's rule does.

    The Agents SDK records who wrote an item by its role: ``user`` for the person's input,
    ``developer``/``system`` for the application's own text (a loaded skill, guidance).
    """
    filler = " ".join(["Day two has three trains and a ferry to the coast."] * 8)
    items: list[Any] = [
        {"role": "user", "content": "Plan my trip to Lisbon."},
        {"role": "assistant", "content": "Happy to; which dates?"},
        {"role": "developer", "content": HARNESS_RULE},
        {"role": "system", "content": f"Skill loaded: {HARNESS_RULE}"},
        {"role": "user", "content": f"The dates are 3 to 9 May. {RULE}"},
        {"role": "assistant", "content": filler},
        *(
            item
            for n in range(3, 6)
            for item in (
                {"role": "user", "content": f"Go on with day {n}."},
                {"role": "assistant", "content": filler},
            )
        ),
    ]
    session = ProgsumSession.sqlite("skills", str(tmp_path / "c.db"), compactor=compactor())
    asyncio.run(session.add_items(items))
    state = session.state
    assert state is not None
    assert [state.authors[at] for at in (2, 3, 4)] == ["tool", "tool", "user"]
    summary = session.compactor.compact(state, force=True).summary
    assert summary is not None
    binding = [item.text for f in spec_of(Summary).binding for item in live_items(summary)[f.name]]
    assert RULE in binding
    assert not [text for text in binding if "aisle" in text]


# -- requests that only grow between compactions ----------------------------------------------


def grown(fake: Responses) -> int:
    """Assert that requests only grow between compactions; return the pairs checked.

    Between two requests with no fold or reduction between them, ``instructions`` and
    ``tools`` are equal and the earlier ``input`` is a prefix of the later one, item for item.
    """
    checked = 0
    for n in range(1, len(fake.bodies)):
        if fake.before[n] != fake.before[n - 1]:
            continue
        old, new = fake.bodies[n - 1], fake.bodies[n]
        assert new.get("instructions") == old.get("instructions"), f"request {n}"
        assert new.get("tools") == old.get("tools"), f"request {n}"
        assert new["input"][: len(old["input"])] == old["input"], f"request {n}: input rewritten"
        checked += 1
    return checked


def blocks(body: dict[str, Any]) -> int:
    """Recall blocks in a request's input."""
    return json.dumps(body["input"]).count("<recalled_history ")


TRIP = [
    "Plan flights Lisbon to Tokyo, one leg a day.",
    f"Good. {RULE}",
    *(f"Leg {n}." for n in range(4)),
    *(
        f"Which flights did day {n} offer, and which rule about departures applies?"
        for n in range(1, 9)
    ),
]
"""A trip whose later questions ask about legs and the rule that were folded by then."""


def test_requests_only_grow_across_model_calls_runs_and_restarts(tmp_path: Path) -> None:
    """With the input filter, each run's question keeps its block in every later request.

    Across the model calls of a run, across runs and across a new process over the same SQLite
    file (every other run), each request between two compactions is the one before plus the
    items appended; reasoning items are sent byte for byte, also after a fold (rule O1).
    """
    fake = Responses()
    path = str(tmp_path / "chats.db")
    session = ProgsumSession.sqlite("trip", path, compactor=compactor(fake))
    for n, text in enumerate(TRIP):
        if n % 2:  # a new process: nothing cached, the state comes back from the file
            session = ProgsumSession.sqlite("trip", path, compactor=compactor(fake))
        config = RunConfig(call_model_input_filter=session.input_filter)
        asyncio.run(Runner.run(agent(fake), text, session=session, run_config=config))
    assert fake.changes >= 2
    assert sum(blocks(body) > 0 for body in fake.bodies) > 3
    assert max(blocks(body) for body in fake.bodies) > 1  # earlier questions keep theirs
    assert grown(fake) > len(fake.bodies) // 2
    log = asyncio.run(session.underlying_session.get_items())
    assert not any("recalled_history" in json.dumps(item) for item in log)
    for body in fake.bodies:
        valid_input(body["input"], log)
    after_fold = [
        body for n, body in enumerate(fake.bodies) if n and fake.before[n] != fake.before[n - 1]
    ]
    assert any(item.get("type") == "reasoning" for body in after_fold for item in body["input"])


def test_a_recall_for_an_item_not_stored_yet_is_kept_once_it_is(tmp_path: Path) -> None:
    """The filter's block for a question the session does not hold yet is saved once it does.

    (The runner stores a run's input before its first model call; a resumed run may not.)
    """
    fake = Responses()
    path = str(tmp_path / "chats.db")
    session = ProgsumSession.sqlite("trip", path, compactor=compactor(fake))
    asyncio.run(converse(session, fake, TRIP[:8]))
    assert fake.changes >= 1
    question = {"role": "user", "content": TRIP[8]}
    items = asyncio.run(session.get_items())
    data = CallModelData(
        model_data=ModelInputData(input=[*items, question], instructions=INSTRUCTIONS),  # type: ignore[list-item]  # plain dicts for the SDK's TypedDict items
        agent=agent(fake),
        context=None,
    )
    sent = asyncio.run(session.input_filter(data)).input
    assert json.dumps(sent[-1]).startswith('{"role": "user", "content": "<recalled_history ')
    asyncio.run(session.add_items([question]))

    resumed = ProgsumSession.sqlite("trip", path, compactor=compactor())  # a new process
    assert asyncio.run(resumed.get_items()) == sent
