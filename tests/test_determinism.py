"""Determinism as a property: same transcript, same bytes; an empty merge and a rerun are no-ops.

The same transcript compacts to the same bytes, an empty update changes nothing, and an
unchanged, already compacted state is a fixed point.

Users of other compactors report summaries that erode when an unchanged transcript is compacted
again; these properties hold progsum to the opposite.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progsum import Compactor, ConversationState, Policy, Summary, SummaryUpdate
from progsum.render import render_anthropic, render_openai
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._merge import live_items, merge
from progsum.summary._schema import spec_of
from tests.strategies import Conversation, conversations

EXAMPLES = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Ticks:
    """A clock that advances one second per reading: replays read it at the same points."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        """The next second."""
        self.now += timedelta(seconds=1)
        return self.now


def replay(messages: Sequence[dict[str, Any]], policy: Policy) -> list[ConversationState[Summary]]:
    """Every state of a turn-by-turn replay with a fresh compactor and clock."""
    compactor = Compactor(policy=policy, summarizer=ExtractiveSummarizer(), clock=Ticks())
    state: ConversationState[Any] = ConversationState(thread_id="same")
    states = []
    for message in messages:
        state = compactor.maybe_compact(state.append(json.loads(json.dumps(message))))
        states.append(state)
    return states


def request_bytes(conversation: Conversation, state: ConversationState[Any]) -> str:
    """The rendered request for the conversation's provider, as canonical JSON."""
    if conversation.format == "openai":
        return json.dumps(render_openai(state, system="sys"), sort_keys=True)
    system, messages = render_anthropic(state, system="sys")
    return json.dumps([system, messages], sort_keys=True)


policies = st.builds(
    lambda window, keep: Policy(context_window=window, keep=("messages", keep)),
    st.integers(2_000, 6_000),
    st.integers(1, 6),
)


@EXAMPLES
@given(conversations(max_turns=8), policies)
def test_the_same_transcript_compacts_to_the_same_bytes(
    conversation: Conversation, policy: Policy
) -> None:
    """Two replays with fresh compactors give byte-identical states, headers and requests."""
    first = replay(conversation.messages, policy)
    second = replay(conversation.messages, policy)
    for one, two in zip(first, second, strict=True):
        assert one.to_json() == two.to_json()
        assert one.header == two.header
        assert request_bytes(conversation, one) == request_bytes(conversation, two)


@EXAMPLES
@given(conversations(max_turns=8), policies)
def test_merging_an_empty_update_changes_nothing(
    conversation: Conversation, policy: Policy
) -> None:
    """Every summary a replay produces is unchanged by merging an empty update into it."""
    for state in replay(conversation.messages, policy):
        if state.summary is None:
            continue
        merged, report = merge(
            state.summary, SummaryUpdate(), source=(state.cutoff, state.cutoff), compaction=99
        )
        assert merged.model_dump() == state.summary.model_dump()
        assert not report.added
        assert not report.retired
        assert not report.superseded
        assert not report.dropped


@EXAMPLES
@given(conversations(max_turns=8), policies)
def test_an_unchanged_compacted_state_is_a_fixed_point(
    conversation: Conversation, policy: Policy
) -> None:
    """Compacting a compacted state again, as it is or reloaded, changes nothing."""
    check_fixed_points(replay(conversation.messages, policy), policy)


def test_a_long_chat_is_deterministic_and_a_fixed_point() -> None:
    """A chat that compacts many times: both properties at every turn, without Hypothesis."""
    messages = [
        {"role": "user", "content": "Plan 5 days in Lisbon. Never book flights before 9am."}
    ]
    for n in range(60):
        messages.append({"role": "assistant", "content": f"Option {n}: a walk by the river. " * 12})
        messages.append({"role": "user", "content": f"Is stop {n} worth it? Budget is $3,000."})
    policy = Policy(context_window=2_000)
    first, second = replay(messages, policy), replay(messages, policy)
    assert sum(e.outcome == "compacted" for e in first[-1].events) >= 3
    assert [s.to_json() for s in first] == [s.to_json() for s in second]
    check_fixed_points(first, policy)


def check_fixed_points(states: Sequence[ConversationState[Summary]], policy: Policy) -> None:
    """Each state of a replay is a fixed point of a fresh compactor, as it is and reloaded."""
    for state in states:
        fresh = Compactor(policy=policy, summarizer=ExtractiveSummarizer(), clock=Ticks())
        assert fresh.maybe_compact(state) is state
        reloaded = ConversationState.from_json(state.to_json())
        assert fresh.maybe_compact(reloaded) is reloaded
        assert reloaded.header == state.header
        # the same state with the turn's attempt forgotten (an adapter that rebuilds it): the
        # summary never loses an item, and a second pass that folds nothing adds no event
        data = state.to_dict()
        data["attempted_at"] = None
        again = fresh.maybe_compact(ConversationState.from_dict(data))
        added = again.events[len(state.events) :]
        if not any(e.outcome in {"compacted", "consolidated"} for e in added):
            assert again.summary == state.summary
            assert again.header == state.header
        else:  # still over the trigger: it folds on, and nothing binding is lost
            assert binding(state) <= binding(again)


def binding(state: ConversationState[Any]) -> set[tuple[str, str]]:
    """``(id, text)`` of the live binding items."""
    summary = state.summary
    if summary is None:
        return set()
    spec = spec_of(Summary)
    return {
        (item.id, item.text) for field in spec.binding for item in live_items(summary)[field.name]
    }
