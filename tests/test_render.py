"""Rendering: the binding header and the provider views, pinned by snapshots.

The policies here have no header budget (``header_budget=None``): these snapshots pin how every
item renders, and consolidation, which would drop items in windows this small, is tested in
tests/test_consolidation.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from progsum import (
    Compactor,
    ConfigError,
    ConversationState,
    Policy,
    Summary,
    SummaryRequest,
    SummaryUpdate,
    render_anthropic,
    render_openai,
)
from progsum.summary._header import render_header
from progsum.summary._merge import merge
from progsum.summary._update import Retirement
from progsum.testing import FunctionSummarizer
from tests.conftest import fixed_clock
from tests.conversations import (
    TRIP_BUDGET,
    TRIP_RULE,
    airline_support,
    coding_session,
    spelled,
    trip_planning,
)


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """A snapshot stored as a JSON file."""
    return snapshot.use_extension(JSONSnapshotExtension)


def scripted(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A deterministic stand-in for a model, different for each segment."""
    start = request.segment.start
    if not request.prior.constraints:
        return SummaryUpdate(
            objective="Plan a 5-day Lisbon trip in May for two vegetarians.",
            add={
                "constraints": [TRIP_RULE, TRIP_BUDGET],
                "decisions": ["Stay in Alfama."],
                "open_threads": ["Is Sintra worth a full day?"],
            },
        )
    return SummaryUpdate(
        add={
            "established_facts": [
                f"Segment from message {spelled(start + 1)} priced more tickets."
            ],
            "rejected": ["Cascais by car: parking costs €30 a day."],
        },
        retire=(Retirement(id="O1", reason="answered: half a day is enough"),),
    )


def airline_scripted(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A deterministic stand-in for a model summarizing the airline conversation."""
    if not request.prior.constraints:
        return SummaryUpdate(
            objective="Move reservation NO6JO3 (user mia_li_3668) to a later flight.",
            add={
                "constraints": [
                    "Only flights after 11am EST.",
                    "Direct flights only.",
                    "At most $200 extra.",
                ],
                "established_facts": ["NO6JO3 is booked on HAT136."],
            },
        )
    return SummaryUpdate(
        add={
            "rejected": [
                (
                    "HAT069 at 12:00 for +$120 (offered before message "
                    f"{spelled(request.segment.end)})."
                )
            ]
        }
    )


def snapshot_policy(window: int, keep: int, *, keep_first: bool = True) -> Policy:
    """The policy the snapshots were taken under: trigger 65%, a fixed tail, no header budget.

    No recall either: test_recall.py renders the recall block.
    """
    return Policy(
        trigger=("fraction", 0.65),
        context_window=window,
        keep=("messages", keep),
        keep_first=keep_first,
        header_budget=None,
        recall_budget=None,
    )


def compact_all(
    messages: list[dict[str, Any]],
    policy: Policy,
    function: Callable[[SummaryRequest[Any]], SummaryUpdate] = scripted,
) -> ConversationState[Summary]:
    """Feed a conversation turn by turn through maybe_compact."""
    compactor = Compactor(policy=policy, summarizer=FunctionSummarizer(function), clock=fixed_clock)
    state: ConversationState[Summary] = ConversationState()
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
    return state


def test_trip_header(snapshot_md: SnapshotAssertion) -> None:
    """A trip compacted several times renders as a labelled, binding Markdown header."""
    state = compact_all(
        trip_planning(30),
        snapshot_policy(2_000, 4),
    )
    assert sum(e.outcome == "compacted" for e in state.events) >= 2
    assert state.header == snapshot_md


def test_header_of_every_field_with_multiline_item(snapshot_md: SnapshotAssertion) -> None:
    """Every non-empty field gets a section in schema order; a multi-line item keeps one line."""
    update = SummaryUpdate(
        objective="Ship the billing fix.",
        add={
            "decisions": ["Round with int(), not round()."],
            "constraints": ["Do not touch config/prod.yaml."],
            "established_facts": [
                "Failing test:\ntests/test_billing.py::test_total (1999 != 2000)"
            ],
            "open_threads": ["Run the full suite."],
            "rejected": ["Decimal rounding: slower and changes 12 snapshots."],
        },
    )
    summary, _ = merge(Summary(), update, source=(1, 30), compaction=1)
    assert render_header(summary, folded=(1, 30), compactions=1) == snapshot_md


def test_empty_summary_renders_nothing() -> None:
    """No objective and no items: no header at all."""
    assert render_header(Summary(), folded=(1, 5), compactions=1) == ""


def test_rendering_is_deterministic() -> None:
    """The same state renders to the same bytes, also after a JSON round trip."""
    state = compact_all(
        trip_planning(30),
        snapshot_policy(2_000, 4),
    )
    again = ConversationState.from_json(state.to_json())
    assert render_anthropic(state, system="S") == render_anthropic(state, system="S")
    assert render_anthropic(again, system="S") == render_anthropic(state, system="S")


def test_anthropic_view_of_coding_session(snapshot_json: SnapshotAssertion) -> None:
    """Anthropic view: caller's system block, header block, first task, then the verbatim tail."""
    state = compact_all(
        coding_session(6),
        snapshot_policy(6_000, 6),
    )
    caller_block = {
        "type": "text",
        "text": "You are a careful engineer.",
        "cache_control": {"type": "ephemeral"},
    }
    system, messages = render_anthropic(state, system=[caller_block], model="claude-sonnet-4-6")
    assert system[0] is caller_block
    assert messages[0] is state.log[0]
    assert all(a is b for a, b in zip(messages[1:], state.log[state.cutoff :], strict=True))
    assert {"system": system, "messages": messages} == snapshot_json


def test_openai_view_of_airline_support(snapshot_json: SnapshotAssertion) -> None:
    """OpenAI view: caller's system prompt, the log's system message, header, task, tail."""
    state = compact_all(
        airline_support(6),
        snapshot_policy(1_500, 6),
        airline_scripted,
    )
    messages = render_openai(state, system="Be brief.")
    assert [m["role"] for m in messages[:4]] == ["system", "system", "system", "user"]
    assert messages[2]["content"] == state.header
    assert messages == snapshot_json


def test_bridge_turn_when_tail_starts_with_assistant() -> None:
    """Without the first message kept, a tail opening with an assistant turn gets a user bridge."""
    messages = coding_session(4)
    state = compact_all(
        messages,
        snapshot_policy(5_000, 5, keep_first=False),
    )
    assert state.cutoff > 0
    _, rendered = render_anthropic(state, thinking="keep")
    assert rendered[0]["role"] == "user"
    if state.log[state.cutoff]["role"] == "assistant":
        assert rendered[0]["content"].startswith("(The earlier conversation is summarized")
        assert rendered[1] is state.log[state.cutoff]


def test_openai_view_refuses_anthropic_conversation() -> None:
    """Rendering an Anthropic-format conversation for OpenAI (and back) says which to use."""
    with pytest.raises(
        ConfigError, match=r"Anthropic format \(message 1: .*use render_anthropic\(\)"
    ):
        render_openai(ConversationState(coding_session(1)))
    with pytest.raises(ConfigError, match=r"OpenAI format .*use render_openai\(\)"):
        render_anthropic(ConversationState(airline_support(1)))


def test_neutral_conversation_renders_both_ways() -> None:
    """A plain-text conversation renders for both providers, without a header before compaction."""
    state = ConversationState(trip_planning(1))
    system, messages = render_anthropic(state, system="S")
    assert system == [{"type": "text", "text": "S"}]
    assert messages == list(state.log)
    assert render_openai(state, system="S") == [{"role": "system", "content": "S"}, *state.log]
