"""bench/costs_tokens.py: progsum beside the simulated deepagents and LangChain policies.

The simulation is checked against the rules read from their source: a summary replaces the
oldest messages once the context reaches the trigger, the kept part never starts with a tool
result, deepagents cuts long tool-call arguments and keeps a tenth of the window, LangChain keeps
its last 20 messages; and the whole bench runs on the small fixtures.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import costs_tokens
import retention_agents

from progsum import Policy
from progsum.policy._tokens import HeuristicCounter

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
