"""The retention benchmarks' replay and request size: usage reported, the header counted once."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

# the benchmarks are scripts in bench/, not a package: import them as the scripts see each other
sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import retention
import retention_agents
import usage_reports as usage

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.policy._tokens import HeuristicCounter
from progsum.summary._update import SummaryUpdate
from progsum.testing import FunctionSummarizer

FIXTURES = Path(__file__).parent / "fixtures"
COUNTER = HeuristicCounter()


def _folding(_: Any) -> SummaryUpdate:
    return SummaryUpdate(add={"established_facts": ("The user flies to Lisbon on 2027-05-08.",)})


def _chat(n: int, *, openai: bool) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(n):
        text = f"Message {i} about the Lisbon trip, day {i % 28 + 1}, with a little more text."
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    if openai:
        messages.insert(0, {"role": "system", "content": "You are a travel agent."})
    return messages


def _folded(*, openai: bool) -> ConversationState[Any]:
    compactor = Compactor(
        policy=Policy(context_window=1_000), summarizer=FunctionSummarizer(_folding)
    )
    state = usage.replayed(_chat(80, openai=openai), compactor)
    assert state.header, "the chat was folded: the request carries a header"
    return state


def test_an_openai_request_counts_its_header_once() -> None:
    """OpenAI's chat carries the header as a system message: its size is its messages' sum."""
    state = _folded(openai=True)
    assert state.format == "openai"
    messages = render_openai(state)
    assert any(m["content"] == state.header for m in messages)
    whole = sum(COUNTER.count_message(m) for m in messages)
    assert retention_agents.request_size(state, COUNTER) == whole


def test_an_anthropic_request_counts_its_system_header_and_its_messages() -> None:
    """Anthropic's request carries the header as its system text, apart from the messages."""
    state = _folded(openai=False)
    system, messages = render_anthropic(state)
    assert all(state.header not in str(m["content"]) for m in messages)
    assert system
    head = COUNTER.count_text(state.header) + COUNTER.message_tokens
    whole = head + sum(COUNTER.count_message(m) for m in messages)
    assert retention_agents.request_size(state, COUNTER) == whole


def test_each_assistant_message_comes_with_the_measured_usage() -> None:
    """The report is the measure of the context with the reply; a user message brings none."""
    compactor = Compactor(policy=Policy(context_window=200_000))
    measured: list[int] = []

    def measure(state: ConversationState[Any]) -> int:
        measured.append(state.estimate(compactor.counter) + 7)
        return measured[-1]

    state: ConversationState[Any] = ConversationState()
    hello = {"role": "user", "content": "Hello there."}
    state = usage.appended(compactor, state, hello, measure=measure)
    assert state.anchor is None
    assert measured == []
    reply = {"role": "assistant", "content": "Hello, how can I help with the trip?"}
    state = usage.appended(compactor, state, reply, measure=measure)
    assert state.anchor is not None
    assert state.anchor.tokens == measured[-1]
    assert compactor.count(state) == (measured[-1], "anchored")
    bare = usage.replayed([{"role": "user", "content": "Hi."}, reply], compactor)
    assert bare.anchor is None


def test_with_usage_the_engine_counts_what_the_measure_counts() -> None:
    """Once two reports agree with the estimate, the count is the estimate: no margin on top."""
    compactor = Compactor(policy=Policy(context_window=200_000))
    state = usage.replayed(_chat(6, openai=False), compactor, measure=usage.estimated(compactor))
    tokens, method = compactor.count(state)
    assert method == "anchored"
    assert tokens == state.estimate(compactor.counter)
    unreported = usage.replayed(_chat(6, openai=False), compactor)
    counted, how = compactor.count(unreported)
    assert how == "estimated"
    assert counted > unreported.estimate(compactor.counter)  # the margin on top


@pytest.mark.bench
def test_the_chat_rows_fill_more_of_the_window_with_usage_reported() -> None:
    """Without reports the safety margin holds the context to 1/1.3 of what it may fill."""
    conversations = retention.msc(FIXTURES / "retention")
    reported = retention.score(conversations, 1_000, 4, ends=4)
    margin = retention.score(conversations, 1_000, 4, ends=4, usage=False)
    assert reported.over == margin.over == 0
    assert reported.tokens > margin.tokens


@pytest.mark.parametrize("flags", [[], ["--no-usage"]])
def test_the_agent_bench_prints_claude_code_s_own_compaction_row(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`bench/retention_agents.py` prints the native row, with usage reported or not."""
    retention_agents.main([str(FIXTURES / "native"), "--windows", "1000", *flags])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| csv-report @49 |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "943"  # Claude Code's summary, in estimated tokens
    assert int(cells[2].replace(",", "")) <= 943  # progsum's request is no larger
    assert cells[4] == "3 of 8"  # the values Claude Code's summary names
    assert cells[7] == "8 of 8"  # every changed file, in progsum's request
