"""The window guarantee on the shapes issue 47 found over it: parallel tool rounds in OpenAI shape.

Twenty parallel calls whose results are ~330 words each (under the cheap reduction's
2,000-character floor, each under the clip limit) kept OpenAI-shaped requests over an 8k window,
while the same rounds in Anthropic shape (one user message holding every result) were clipped
and folded. Sizes are counted from the rendered request as JSON (`request_tokens`), and provider
rules are checked by tests/provider_rules.py, never by the engine's own helpers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.messages._formats import Message
from progsum.policy._tokens import HeuristicCounter
from progsum.summarizers import ExtractiveSummarizer
from tests.conversations import anthropic_rounds, openai_rounds, training_log
from tests.provider_rules import anthropic_violations, openai_violations

WINDOW = 8_000


def request_tokens(body: object) -> int:
    """Tokens of a rendered request serialised as JSON: an upper bound written for these tests."""
    return HeuristicCounter().count_text(json.dumps(body, ensure_ascii=False))


def replayed(
    messages: Sequence[Message], *, per_message: bool = False
) -> tuple[list[tuple[int, int, list[str]]], ConversationState[Any]]:
    """``(log length, request tokens, rule violations)`` at each point a request is sent.

    With ``per_message``, a request's tokens are its messages' as sent, times the engine's margin
    without usage reports, rather than its JSON's (`request_tokens`).
    """
    policy = Policy(context_window=WINDOW)
    compactor = Compactor(policy=policy, summarizer=ExtractiveSummarizer())
    state: ConversationState[Any] = ConversationState()
    points = []
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
        if state.infos[-1].role == "assistant":
            continue
        if state.format == "openai":
            view: Any = render_openai(state)
            problems = openai_violations(view)
        else:
            system, view = render_anthropic(state)
            problems = anthropic_violations(view, state.log)
            view = {"system": system, "messages": view}
        tokens = request_tokens(view)
        if per_message and state.format == "openai":
            sent = sum(HeuristicCounter().count_message(m) for m in view)
            tokens = math.ceil(sent * policy.safety_margin)
        points.append((len(state), tokens, problems))
    return points, state


def test_openai_parallel_rounds_stay_within_the_window() -> None:
    """Every request of three rounds of 20 parallel OpenAI calls fits the window, pairs intact.

    The results of one round count together against the clip limit, as one Anthropic user
    message of results does, and go to one-line placeholders when a clip's note would cost more
    than their share. Each message is counted as sent, with the margin the engine keeps without
    usage reports: rounds kept as calls and placeholders are mostly call ids and keys, which JSON
    counts at several times what a provider's tool format costs.
    """
    window = Policy(context_window=WINDOW).input_window
    assert window is not None
    points, state = replayed(openai_rounds(20, 3), per_message=True)
    assert len(points) == 61
    assert [(at, size) for at, size, _ in points if size > window] == []
    assert [(at, problems) for at, _, problems in points if problems] == []
    assert [e for e in state.events if e.outcome == "compacted"]


def test_a_tail_inside_an_open_round_folds_the_completed_rounds() -> None:
    """When the tail fitted to the target begins inside a round, the rounds before it fold."""
    window = Policy(context_window=WINDOW).input_window
    assert window is not None
    points, state = replayed(openai_rounds(10, 4))
    assert [(at, size) for at, size, _ in points if size > window] == []
    assert [(at, problems) for at, _, problems in points if problems] == []
    folds = [e.reason for e in state.events if e.outcome == "compacted"]
    assert any("completed rounds before it are folded" in reason for reason in folds)


def test_the_same_rounds_in_anthropic_shape_stay_within_the_window() -> None:
    """The Anthropic-shaped rounds, one user message of results each, fit the window too."""
    window = Policy(context_window=WINDOW).input_window
    assert window is not None
    points, _ = replayed(anthropic_rounds(20, 3))
    assert [(at, size) for at, size, _ in points if size > window] == []
    assert [(at, problems) for at, _, problems in points if problems] == []


def test_a_round_that_leaves_the_header_less_than_its_budget_shrinks_the_header() -> None:
    """A round of 50 parallel calls leaves the header less room than its budget: it gives way.

    The window outranks the header budget: while the context is over the window, the header's
    least telling loose notes go (down to the window's guard), in turns that fold nothing too.
    """
    messages = [*training_log(80, 2)[0], {"role": "user", "content": "Now read every sensor."}]
    calls = [f"call_{k}" for k in range(50)]
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "read_sensor", "arguments": f'{{"sensor": "s{k}"}}'},
                }
                for k, call in enumerate(calls)
            ],
        }
    )
    messages += [{"role": "tool", "tool_call_id": call, "content": "ok"} for call in calls]
    compactor = Compactor(policy=Policy(context_window=2_000), summarizer=ExtractiveSummarizer())
    window = compactor.policy.input_window
    assert window is not None
    state: ConversationState[Any] = ConversationState()
    margin = compactor.policy.safety_margin
    counter = HeuristicCounter()
    over = []
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
        if state.infos[-1].role == "assistant":
            continue
        # each message as sent, with the margin the engine keeps without usage reports (JSON
        # would count every call's id and keys, which a provider's tool format does not)
        sent = sum(counter.count_message(m) for m in render_openai(state))
        if sent * margin > window:
            over.append((len(state), sent))
    assert over == []
    gave_way = [e for e in state.events if "the window leaves it" in e.reason]
    assert gave_way
    assert all(e.outcome == "consolidated" for e in gave_way)
