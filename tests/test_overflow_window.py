"""The window guarantee around refused summaries and re-pinned rounds.

Found on the long Claude Code sessions at a 2k window (bench/retention_agents.py), where every
later turn ended 2k to 18k tokens over the window. Sizes are checked from the rendered request
(`request_tokens`), not with the engine's own measure.
"""

from __future__ import annotations

import json
from typing import Any

from progsum import Compactor, ConversationState, Policy, render_anthropic
from progsum.messages._formats import Message
from progsum.policy._tokens import HeuristicCounter
from progsum.state._cleared import Cleared
from progsum.summary._request import SummaryRequest
from progsum.summary._update import SummaryUpdate
from progsum.testing import FunctionSummarizer

WINDOW = 2_000
WORDY = " ".join(["the build reads its partition table before it links"] * 60)


def request_tokens(state: ConversationState[Any]) -> int:
    """Tokens of the whole rendered request, system blocks and messages, serialised as JSON.

    An upper bound written for this test: JSON punctuation and keys are counted too.
    """
    system, messages = render_anthropic(state)
    body = json.dumps({"system": system, "messages": messages}, ensure_ascii=False)
    return HeuristicCounter().count_text(body)


def first_wordy(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A first summary far larger than its segment (refused), then short ones."""
    if request.segment.start <= 1:
        return SummaryUpdate(add={"established_facts": [WORDY]})
    return SummaryUpdate(add={"established_facts": ["The build reads its partition table."]})


def turns(count: int) -> list[Message]:
    """A task, short turns, then turns of ~150 tokens each (under the clip limit)."""
    messages: list[Message] = [{"role": "user", "content": "Fix the build in the app."}]
    for n in range(count):
        size = 2 if n < 8 else 120  # short turns first, so the first fold is small
        words = " ".join(f"step{n}word" for _ in range(size))
        messages.append({"role": ("assistant", "user")[n % 2], "content": words})
    return messages


def test_a_refused_summary_never_leaves_the_context_over_the_window() -> None:
    """After a not-smaller refusal the context still fits the window while the retry waits."""
    policy = Policy(context_window=WINDOW, keep=("messages", 2))
    compactor = Compactor(policy=policy, summarizer=FunctionSummarizer(first_wordy))
    window = policy.input_window
    assert window is not None
    state: ConversationState[Any] = ConversationState()
    over: list[tuple[int, int]] = []
    for message in turns(60):
        state = compactor.maybe_compact(state.append(message))
        size = request_tokens(state)
        if size > window:
            over.append((len(state), size))
    assert [e for e in state.events if e.stall == "not_smaller"], "the scenario lost its refusal"
    assert over == []
    waited = [e for e in state.events if e.degraded_reason and "refused" in e.degraded_reason]
    assert waited, "the context never came near the window while the retry waited"
    assert all(e.outcome == "compacted" for e in waited)


def test_a_pinned_round_folded_before_keeps_its_cleared_results() -> None:
    """Pinning a round folded earlier shows its cleared results as placeholders again.

    Found on a Claude Code session at 2k: the state's cache of cleared marks in view lost the
    marks of the opening round when it was folded, so re-pinning it (to keep the turn's thinking)
    sent its ~3,100 cleared tokens raw; the engine refused every later summary as "not smaller"
    and the context stayed over the window.
    """
    counter = HeuristicCounter()
    result = "line of the module under test\n" * 200
    messages: list[Message] = [
        {"role": "user", "content": "Fix the build in the app."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Read first.", "signature": "s0"},
                {"type": "tool_use", "id": "toolu_0", "name": "Read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": result}],
        },
        *[{"role": ("assistant", "user")[n % 2], "content": f"step {n}"} for n in range(6)],
    ]
    state: ConversationState[Any] = ConversationState(messages)
    placeholder = "[cleared]"
    mark = Cleared(at=2, block=0, placeholder=placeholder, chars=len(result), saved=1_000)
    marked = state.record(None, cleared=(mark,))
    folded = marked.record(None, cutoff=5, head_end=1)  # the round folded, not pinned
    pinned = folded.record(None, cutoff=6, head_end=1, pinned=(1, 3))  # pinned again
    _, sent = render_anthropic(pinned)
    (shown,) = [m for m in sent if "toolu_0" in json.dumps(m) and m["role"] == "user"]
    assert placeholder in json.dumps(shown)
    assert result not in json.dumps(sent)
    assert pinned.estimate(counter) < marked.estimate(counter)
