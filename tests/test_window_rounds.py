"""Hundreds of parallel tool results in one round: as small as a placeholder, sent requests kept.

An agent that makes 400 parallel calls at an 8k window cannot fit: the calls alone are over the
input window (the documented exception: the kept first message and the newest round alone
exceed it). Its results must still shrink to a placeholder each, not stay at several times the
window, with every call paired with its result. A request is sent once a round's results are all
in, so the round's results may be clipped again as it grows; a message already sent stays byte
for byte the same until a fold. Sizes are counted from the rendered request, and provider rules
are checked by tests/provider_rules.py and tests/anthropic_rules.py, never by the engine.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.messages._formats import Message
from progsum.policy._tokens import HeuristicCounter
from progsum.summarizers import ExtractiveSummarizer
from tests.anthropic_rules import violations as api_violations
from tests.conversations import anthropic_rounds, openai_rounds
from tests.provider_rules import anthropic_violations, openai_violations

WINDOW = 8_000
SHAPES = {"openai": openai_rounds, "anthropic": anthropic_rounds}


class Sent:
    """One request an agent sends: after a person's message, or once a round's results are in."""

    def __init__(self, state: ConversationState[Any]) -> None:
        self.length = len(state)
        self.folds = sum(e.outcome == "compacted" for e in state.events)
        self.events = len(state.events)
        counter = HeuristicCounter()
        if state.format == "openai":
            self.messages: list[Any] = [m for m in render_openai(state) if m["role"] != "system"]
            self.problems = openai_violations(render_openai(state))
            self.tokens = sum(counter.count_message(m) for m in render_openai(state))
        else:
            system, self.messages = render_anthropic(state)
            body = {"model": "claude-sonnet-5", "max_tokens": 1_024, "messages": self.messages}
            self.problems = anthropic_violations(self.messages, state.log) + api_violations(body)
            prompt = system if isinstance(system, str) else json.dumps(system or "")
            self.tokens = counter.count_text(prompt) + sum(
                counter.count_message(m) for m in self.messages
            )
        self.at = list(state.kept)  # the log index of each message (no repeated answers here)
        self.unpaired = _unpaired(self.messages)


def _unpaired(messages: Sequence[Any]) -> set[str]:
    """Call ids without a result, and result ids without a call, in a rendered request."""
    calls: set[str] = set()
    results: set[str] = set()
    for message in messages:
        calls |= {str(c["id"]) for c in message.get("tool_calls") or ()}
        if message.get("role") == "tool":
            results.add(str(message["tool_call_id"]))
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_use":
                calls.add(str(block["id"]))
            elif block.get("type") == "tool_result":
                results.add(str(block["tool_use_id"]))
    return calls ^ results


def sent(
    messages: Sequence[Message], window: int = WINDOW
) -> tuple[list[Sent], ConversationState[Any], list[tuple[int, int, int]]]:
    """Replay ``messages`` at ``window``: the requests an agent sends, the last state, re-clips.

    A re-clip is ``(log length of the last request, message index, block)`` of each mark added
    to a block marked before.
    """
    compactor = Compactor(policy=Policy(context_window=window), summarizer=ExtractiveSummarizer())
    state: ConversationState[Any] = ConversationState()
    requests: list[Sent] = []
    reclipped: list[tuple[int, int, int]] = []
    for n, message in enumerate(messages):
        before = state.append(message)
        state = compactor.maybe_compact(before)
        marked = {(c.at, c.block) for c in before.cleared}
        last = requests[-1].length if requests else 0
        new = state.cleared[len(before.cleared) :]
        reclipped += [(last, c.at, c.block) for c in new if (c.at, c.block) in marked]
        later = messages[n + 1] if n + 1 < len(messages) else None
        if state.infos[-1].role == "assistant":
            continue  # the model just answered
        if later is not None and state.infos[-1].is_result and later.get("role") == "tool":
            continue  # more results of the round to come: no request yet
        requests.append(Sent(state))
    return requests, state, reclipped


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_round_of_400_results_shrinks_to_placeholders(shape: str) -> None:
    """After 400 parallel results at 8k the request is under 2.5 windows, every call paired."""
    window = Policy(context_window=WINDOW).input_window
    assert window is not None
    requests, _, _ = sent(SHAPES[shape](400, 1))
    last = requests[-1]
    assert last.length == (402 if shape == "openai" else 3)
    assert last.tokens <= 2.5 * window, f"{last.tokens:,} tokens, {last.tokens / window:.2f}x"
    assert last.unpaired == set()
    assert [(r.length, r.problems) for r in requests if r.problems] == []
    calls = [m for m in last.messages if m.get("tool_calls")]
    assert shape == "anthropic" or len(calls[0]["tool_calls"]) == 400
    text = json.dumps(last.messages)
    assert "read_file output" in text
    assert f"recall message {last.length}" in text


@pytest.mark.parametrize(("shape", "window"), [("anthropic", 8_000), ("openai", 32_000)])
def test_a_sent_result_stays_byte_identical_until_a_compaction(shape: str, window: int) -> None:
    """Rounds of 30 results: a sent message changes only by a fold or a reduction naming it.

    The results of the round being answered are clipped again as it grows, a ``tool`` message
    at a time (no request has sent them); a block sent once is never clipped again.
    """
    limit = Policy(context_window=window).input_window
    assert limit is not None
    requests, state, reclipped = sent(SHAPES[shape](30, 4), window)
    assert len(requests) == 5
    assert reclipped or shape == "anthropic"  # a round in one message is clipped once
    assert [(last, at) for last, at, _ in reclipped if at < last] == []
    unchanged = 0
    for before, after in itertools.pairwise(requests):
        if before.folds != after.folds:
            continue
        named = {i for e in state.events[before.events : after.events] for i in e.cleared}
        now = dict(zip(after.at, after.messages, strict=True))
        for at, message in zip(before.at, before.messages, strict=True):
            assert now[at] == message or at in named, (before.length, after.length, at)
            unchanged += now[at] == message and at > 0
    assert unchanged  # a sent round is in a later request as it was
    assert [(r.length, r.tokens) for r in requests if r.tokens > limit] == []
    assert [(r.length, r.problems) for r in requests if r.problems] == []
    assert all(r.unpaired == set() for r in requests)
