"""bench/costs_tokens.py: progsum beside the simulated deepagents and LangChain policies.

The simulation is checked against the rules read from their source: a summary replaces the
oldest messages once the context reaches the trigger, the kept part never starts with a tool
result, deepagents cuts long tool-call arguments and keeps a tenth of the window, LangChain keeps
its last 20 messages; and the whole bench runs on the small fixtures.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import costs_tokens
import costs_tokens_parts
import prefix
import retention_agents
from costs_tokens_sent import Sent

from progsum import Policy
from progsum.messages._formats import to_record
from progsum.policy._tokens import HeuristicCounter
from progsum.policy._windows import MODELS

pytestmark = pytest.mark.bench  # outside the default run: python -m pytest -m bench

FIXTURES = Path(__file__).parent / "fixtures"


def _chat(turns: int, words: int = 60) -> tuple[dict[str, Any], ...]:
    messages = []
    for n in range(turns):
        text = " ".join(f"w{n}x{k}" for k in range(words))
        messages.append({"role": "user", "content": f"question {n} {text}"})
        messages.append({"role": "assistant", "content": f"answer {n} {text}"})
    return tuple(messages)


def _sent(body: dict[str, Any]) -> list[str]:
    """The texts of a rendered Anthropic body's messages, in order."""
    texts: list[str] = []
    for message in body["messages"]:
        content = message["content"]
        blocks = [content] if isinstance(content, str) else content
        texts.extend(b if isinstance(b, str) else b.get("text", b.get("type", "")) for b in blocks)
    return texts


def _fresh(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first request after each summary (its first text is a summary not sent before)."""
    found, seen = [], None
    for body in bodies:
        first = _sent(body)[0]
        if first.startswith(costs_tokens.PREFIX_TEXT) and first != seen:
            found.append(body)
            seen = first
    return found


class Spy(costs_tokens.Bill):
    """A bill that keeps every request body."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict[str, Any]] = []

    def body(self, body: dict[str, Any]) -> None:
        """Keep ``body``, then price it."""
        self.bodies.append(body)
        super().body(body)

    def anthropic(self, system: Sequence[Any], messages: Sequence[Any]) -> None:
        """Keep the request's body, then price it."""
        self.bodies.append({"system": to_record(list(system)), "messages": to_record(messages)})
        super().anthropic(system, messages)


def test_deepagents_summarizes_at_its_trigger_and_keeps_a_tenth_of_the_window() -> None:
    """No request reaches 0.85 of the window by much, and after a summary the tail is <= 10%."""
    window = 4_000
    stream = costs_tokens.Stream("chat", _chat(60), None, None, "anthropic")
    bill = Spy()
    costs_tokens.simulate(stream, window, costs_tokens.DEEPAGENTS, bill)
    assert bill.compactions > 0
    counter = HeuristicCounter()
    fresh = _fresh(bill.bodies)
    assert len(fresh) == bill.compactions
    for body in fresh:
        assert body["messages"][0]["role"] == "user"
        tail = sum(counter.count_message(m) for m in body["messages"][1:])
        assert tail <= 0.10 * window + 50  # the kept part (rendered: a little JSON more)
    trigger = 0.85 * window
    for body in bill.bodies:
        assert sum(counter.count_message(m) for m in body["messages"]) < trigger + 400
    assert costs_tokens.DEEPAGENTS.trigger == 0.85  # compute_summarization_defaults, with a profile


def test_langchain_keeps_its_last_20_messages() -> None:
    """After LangChain's summary the request holds the summary and at most 20 (+1 new) messages."""
    stream = costs_tokens.Stream("chat", _chat(60), None, None, "anthropic")
    bill = Spy()
    costs_tokens.simulate(stream, 4_000, costs_tokens.LANGCHAIN, bill)
    assert bill.compactions > 0
    fresh = _fresh(bill.bodies)
    assert len(fresh) == bill.compactions
    assert all(len(b["messages"]) <= 1 + 20 for b in fresh)


def test_the_kept_part_never_starts_with_a_tool_result() -> None:
    """A cut that would orphan a tool result moves back to the call, as LangChain's safe cutoff."""
    messages: list[dict[str, Any]] = []
    for n in range(40):
        messages.append({"role": "user", "content": f"task {n} " + "x " * 200})
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"t{n}", "name": "read", "input": {"path": f"f{n}"}}
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "y " * 300}],
            }
        )
        messages.append({"role": "assistant", "content": f"done {n}"})
    stream = costs_tokens.Stream("tools", tuple(messages), None, None, "anthropic")
    for framework in (costs_tokens.DEEPAGENTS, costs_tokens.LANGCHAIN):
        bill = Spy()
        costs_tokens.simulate(stream, 4_000, framework, bill)
        assert bill.compactions > 0, framework.name
        for body in bill.bodies:
            if _sent(body)[0].startswith(costs_tokens.PREFIX_TEXT) and len(body["messages"]) > 1:
                second = body["messages"][1]
                blocks = second["content"] if isinstance(second["content"], list) else []
                assert not any(b.get("type") == "tool_result" for b in blocks), framework.name


def test_deepagents_cuts_long_tool_call_arguments() -> None:
    """A string argument over 2,000 characters becomes its first 20 and the truncation mark."""
    long = "a" * 2_500
    anthropic = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t", "name": "write", "input": {"text": long, "path": "p"}}
        ],
    }
    clipped = costs_tokens._clip_args(anthropic)
    assert clipped is not None
    assert clipped["content"][0]["input"] == {
        "text": "a" * 20 + costs_tokens.TRUNCATED,
        "path": "p",
    }
    openai = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c",
                "type": "function",
                "function": {"name": "w", "arguments": f'{{"t": "{long}"}}'},
            }
        ],
    }
    clipped = costs_tokens._clip_args(openai)
    assert clipped is not None
    assert "a" * 21 not in clipped["tool_calls"][0]["function"]["arguments"]
    assert costs_tokens._clip_args({"role": "assistant", "content": "short"}) is None


def test_the_bench_runs_on_the_fixtures(capsys: pytest.CaptureFixture[str]) -> None:
    """Every set gets the three policies and a knob row; deepagents is the ratio's baseline."""
    costs_tokens.main(
        [
            str(FIXTURES / "retention"),
            "--agent-data",
            str(FIXTURES / "bench"),
            "--windows",
            "1000",
            "--streams",
            "1",
            "--knob",
            "target=0.3",
        ]
    )
    out = capsys.readouterr().out
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ")][1:]
    named = {(r[0].strip(), r[2].strip()): r for r in rows}
    for name in costs_tokens.SETS:
        for policy in (
            "deepagents (simulated)",
            "LangChain (simulated)",
            "progsum",
            "progsum, target=0.3",
        ):
            assert (name, policy) in named, (name, policy)
        assert named[name, "deepagents (simulated)"][6].strip() == "1.00x"
    for name in ("MSC", "MemoryBank"):
        assert named[name, "progsum"][12].strip().endswith("%")
        assert named[name, "progsum"][13].strip().endswith("%")


def test_agent_retention_replays_with_each_knob(capsys: pytest.CaptureFixture[str]) -> None:
    """--agent-retention: retention_agents' counts with the defaults and with the knob's policy."""
    argv = [str(FIXTURES / "agents"), "--windows", "2000", "--agent-retention", "2"]
    costs_tokens.main([*argv, "--knob", "target=0.2,first=0"])
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines()][2:]
    by_policy = {row[1].strip(): row for row in rows}
    assert set(by_policy) == {"progsum", "progsum, target=0.2, first=0"}
    default, knob = by_policy["progsum"], by_policy["progsum, target=0.2, first=0"]
    assert int(knob[2].replace(",", "")) < int(default[2].replace(",", ""))  # fewer tokens sent
    assert all("/" in cell for cell in (*default[3:5], *knob[3:5]))
    # the knob is undone: the module's own policy is the class again
    assert vars(retention_agents)["Policy"] is Policy


def _openai_task(n: int, words: int = 80) -> list[dict[str, Any]]:
    """An OpenAI-shaped tool round: a request, a call (its id reused), its result, an answer."""
    text = " ".join(f"w{n}x{k}" for k in range(words))
    arguments = f'{{"path": "src/mod{n}/file{n}.py"}}'
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read", "arguments": arguments},
    }
    return [
        {"role": "user", "content": f"task {n}: fix src/mod{n}/file{n}.py {text}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": f"contents {n} {text}"},
        {"role": "assistant", "content": f"edited src/mod{n}/file{n}.py for user_{n}a1"},
    ]


def test_incremental_pricing_equals_pricing_each_request_whole() -> None:
    """`Sent.price` gives the body's JSON text and cache read of dumping each request whole."""
    messages = [m for n in range(30) for m in _openai_task(n)]
    sent, cache = Sent(), prefix.Cache()
    requests = [messages[:end] for end in range(1, 60)]
    requests += [
        [{"role": "system", "content": "a summary"}, *messages[40:end]] for end in (60, 80)
    ]
    requests.append([{"role": "user", "content": "edited"}, *messages[30:50]])  # a changed copy
    for request in requests:
        text, read = sent.price(request)
        assert text == json.dumps({"messages": request}, ensure_ascii=False)
        assert read == prefix.openai_cache_read(request, cache)


def test_openai_rows_price_the_same_as_whole_bodies() -> None:
    """A framework's and progsum's OpenAI rows equal the figures of `Bill.body` per request."""

    class Whole(costs_tokens.Bill):
        def messages(self, messages: Any) -> None:
            """Price the request as its whole body."""
            self.body({"messages": [dict(m) for m in messages]})

    stream = costs_tokens.Stream(
        "tasks", tuple(m for n in range(40) for m in _openai_task(n)), None, "be brief", "openai"
    )
    for framework in (costs_tokens.DEEPAGENTS, costs_tokens.LANGCHAIN):
        fast, whole = costs_tokens.Bill(fmt="openai"), Whole(fmt="openai")
        costs_tokens.simulate(stream, 3_000, framework, fast)
        costs_tokens.simulate(stream, 3_000, framework, whole)
        assert fast.compactions > 0
        assert (fast.tokens, fast.read, fast.requests) == (whole.tokens, whole.read, whole.requests)
    ran = costs_tokens.progsum_agent([stream], 3_000, {}, costs_tokens.Bill(fmt="openai"))
    each = costs_tokens.progsum_agent([stream], 3_000, {}, Whole(fmt="openai"))
    assert ran.compactions > 0
    assert (ran.tokens, ran.read, ran.requests) == (each.tokens, each.read, each.requests)


def test_reuses_are_the_next_replys_values_seen_before() -> None:
    """Paths and ids the agent's next message reuses count; tool-call ids and new values do not."""
    messages = [*_openai_task(1), *_openai_task(2)]
    found = costs_tokens.reuses(messages)
    assert found[0] == {"src/mod1/file1.py"}  # the call reuses the path the task named
    assert found[2] == {"src/mod1/file1.py"}  # the answer too; user_1a1 is new there
    assert found[1] == found[3] == frozenset()  # before a message that is not the assistant's
    assert all("call_1" not in f for f in found)


def test_the_rows_count_the_reused_values_each_request_holds() -> None:
    """The reuse column: progsum's requests hold what the next reply reuses, on a short stream."""
    stream = costs_tokens.Stream(
        "tasks", tuple(m for n in range(6) for m in _openai_task(n)), None, None, "openai"
    )
    bill = costs_tokens.progsum_agent([stream], 200_000, {})
    assert bill.reused == 12  # two per task: the call and the answer reuse the task's path
    assert bill.reused_sent == 12  # nothing folded at 200k


def test_the_conversation_knob_reaches_the_compactor() -> None:
    """``conversation=agent`` is the Compactor's argument; the Policy gets only its own settings."""
    knob = costs_tokens.parse_knob("target=0.2,conversation=agent")
    assert knob == {"target": ("fraction", 0.2), "conversation": "agent"}
    assert costs_tokens.knob_policy(8_000, knob) == Policy(
        context_window=8_000, target=knob["target"]
    )
    with pytest.raises(argparse.ArgumentTypeError, match="conversation=agent"):
        costs_tokens.parse_knob("conversation=robot")
    text_actions = costs_tokens.Stream(
        "text", tuple(m for n in range(30) for m in _chat_round(n)), None, None, "openai"
    )
    default = costs_tokens.progsum_agent([text_actions], 4_000, {})
    agent = costs_tokens.progsum_agent([text_actions], 4_000, {"conversation": "agent"})
    assert default.compactions > 0
    assert (agent.tokens, agent.compactions) != (default.tokens, default.compactions)


def _chat_round(n: int) -> list[dict[str, Any]]:
    """A text-action agent's round: a command in prose, its output as a user message."""
    output = " ".join(f"line{n}_{k} value{k}" for k in range(60))
    return [
        {"role": "assistant", "content": f"I will run `cat src/pkg/mod{n}.py` to read it."},
        {"role": "user", "content": f"OBSERVATION: {output}"},
    ]


def test_the_parts_add_up_to_the_tokens_per_request(capsys: pytest.CaptureFixture[str]) -> None:
    """costs_tokens_parts: each row's parts sum to its tokens per request (within rounding)."""
    costs_tokens_parts.main(
        [str(FIXTURES / "bench"), "--windows", "1000", "--streams", "1", "--sets", "tau_bench"]
    )
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines()][2:]
    assert {r[2].strip() for r in rows} == {
        "deepagents (simulated)",
        "LangChain (simulated)",
        "progsum",
    }
    for row in rows:
        cells = [int(c.replace(",", "")) for c in row[4:]]
        assert abs(sum(cells[1:]) - cells[0]) <= len(cells)
    progsum = next(r for r in rows if r[2].strip() == "progsum")
    assert int(progsum[6].replace(",", "")) > 0  # a header once it folded


def test_the_prices_are_progsums_own_table() -> None:
    """The bench prices the agent and the summarizer from progsum's table, cache reads included."""
    sonnet = MODELS["claude-sonnet-5-5"]
    haiku = MODELS["claude-haiku-5-5"]
    assert haiku.price is not None
    assert haiku.long_price is not None
    tiers = (
        (haiku.long_prompt, haiku.price.input, haiku.price.output),
        (None, haiku.long_price.input, haiku.long_price.output),
    )
    assert (sonnet.price, tiers) == (costs_tokens.AGENT_PRICE, costs_tokens.SUMMARIZER_PRICE)
    price = costs_tokens.AGENT_PRICE
    bill = costs_tokens.Bill(tokens=3_000_000, read=1_000_000, written=1_000_000)
    assert bill.dollars(price.cache_read) == pytest.approx(
        price.input + price.cache_read + price.cache_write
    )


def test_anthropic_rows_price_the_same_as_whole_bodies() -> None:
    """Incremental Anthropic pricing equals `Bill.body` per request, frameworks and progsum."""

    class Whole(costs_tokens.Bill):
        def anthropic(self, system: Sequence[Any], messages: Sequence[Any]) -> None:
            """Price the request as its whole body."""
            self.body({"system": to_record(list(system)), "messages": to_record(list(messages))})

    stream = costs_tokens.Stream("chat", _chat(80), None, "be brief " * 300, "anthropic")
    bills: list[tuple[costs_tokens.Bill, costs_tokens.Bill]] = []
    for framework in (costs_tokens.DEEPAGENTS, costs_tokens.LANGCHAIN):
        pair = (costs_tokens.Bill(), Whole())
        for bill in pair:
            costs_tokens.simulate(stream, 4_000, framework, bill)
        bills.append(pair)
    ran = costs_tokens.progsum_agent([stream], 4_000, {}, costs_tokens.Bill())
    bills.append((ran, costs_tokens.progsum_agent([stream], 4_000, {}, Whole())))
    for fast, whole in bills:
        assert fast.compactions > 0
        assert fast.read > 0
        figures = (fast.tokens, fast.read, fast.written, fast.requests)
        assert figures == (whole.tokens, whole.read, whole.written, whole.requests)
