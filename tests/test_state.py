"""ConversationState: a value with an append-only log, cheap appends, views and JSON round-trip."""

from __future__ import annotations

import json

import pytest
from anthropic.types import TextBlock

from progsum import (
    Compactor,
    ConfigError,
    ConversationState,
    MessageFormatError,
    Policy,
    Summary,
    SummaryUpdate,
)
from progsum.policy._tokens import HeuristicCounter
from progsum.testing import QueuedSummarizer
from tests.conftest import fixed_clock
from tests.conversations import TRIP_RULE, trip_planning

COUNTER = HeuristicCounter()


def compacted_trip() -> ConversationState[Summary]:
    """A trip conversation compacted once, with a usage anchor."""
    fake = QueuedSummarizer(
        SummaryUpdate(objective="Plan Lisbon.", add={"constraints": [TRIP_RULE]})
    )
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 4)),
        summarizer=fake,
        clock=fixed_clock,
    )
    state = ConversationState(trip_planning(8)).record_usage(
        {"input_tokens": 1500, "output_tokens": 40}
    )
    return compactor.compact(state, force=True)


def test_append_returns_a_new_state_and_leaves_the_old_one() -> None:
    """Appending never changes the state it is called on."""
    first = ConversationState([{"role": "user", "content": "a"}])
    second = first.append({"role": "assistant", "content": "b"})
    assert (len(first), len(second)) == (1, 2)
    assert list(first.log) == [{"role": "user", "content": "a"}]
    assert second.version == first.version + 1


def test_linear_appends_share_storage() -> None:
    """A chain of appends shares one log storage (an append costs O(1), not a copy)."""
    state = ConversationState([{"role": "user", "content": "go"}])
    later = state
    for n in range(50):
        later = later.append({"role": "assistant" if n % 2 == 0 else "user", "content": str(n)})
    assert later._store is state._store


def test_appending_to_an_older_state_forks() -> None:
    """Appending to a state that is not the newest copies its log once; both branches stay valid."""
    base = ConversationState([{"role": "user", "content": "go"}])
    left = base.append({"role": "assistant", "content": "left"})
    right = base.append({"role": "assistant", "content": "right"})
    assert [m["content"] for m in left.log] == ["go", "left"]
    assert [m["content"] for m in right.log] == ["go", "right"]
    assert right._store is not left._store


def test_extend_is_all_or_nothing() -> None:
    """A malformed message in a batch leaves the state and its shared storage untouched."""
    state = ConversationState([{"role": "user", "content": "go"}])
    with pytest.raises(MessageFormatError, match="message 2: has no 'role'"):
        state.extend([{"role": "assistant", "content": "ok"}, {"content": "oops"}])
    assert len(state._store.messages) == 1
    after = state.append({"role": "assistant", "content": "fine"})
    assert after._store is state._store
    assert len(after) == 2


def test_log_keeps_the_callers_objects() -> None:
    """The log holds the very objects appended, in order; the view is read-only."""
    messages = trip_planning(2)
    state = ConversationState(messages)
    assert all(a is b for a, b in zip(state.log, messages, strict=True))
    assert state.log[-1] is messages[-1]
    assert state.log[1:3] == messages[1:3]
    with pytest.raises(IndexError):
        state.log[len(messages)]
    assert not hasattr(state.log, "append")


def test_effective_view_is_head_plus_tail() -> None:
    """After compaction the effective view is the first message plus log[cutoff:]."""
    state = compacted_trip()
    assert state.cutoff > 1
    assert state.head_end == 1
    assert state.effective == [state.log[0], *state.log[state.cutoff :]]
    assert state.effective_length == len(state.effective)


def test_estimate_counts_header_and_effective_messages() -> None:
    """The estimate is the header, the recall block and the effective messages."""
    state = compacted_trip()
    direct = sum(COUNTER.count_message(m) for m in state.effective)
    block = state.recall_block
    assert block  # the trip's last question recalls a folded message
    recall = COUNTER.count_text(block) + 4
    assert state.estimate(COUNTER) == direct + COUNTER.count_text(state.header) + 4 + recall
    assert len(state.quotes) == 1


def test_json_round_trip_preserves_everything() -> None:
    """to_json/from_json keep log, cutoff, summary, events, anchor and version."""
    state = compacted_trip()
    again = ConversationState.from_json(state.to_json())
    assert again.to_dict() == state.to_dict()
    assert again.header == state.header
    assert again.summary == state.summary
    assert again.anchor == state.anchor


def test_sdk_objects_serialise_as_plain_json() -> None:
    """SDK content blocks in the log are written as their JSON form."""
    state = ConversationState(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [TextBlock(type="text", text="hello")]},
        ]
    )
    data = json.loads(state.to_json())
    assert data["log"][1]["content"][0]["text"] == "hello"


def test_from_dict_rejects_other_data_and_schemas() -> None:
    """Loading something that is not a state, or with the wrong schema, says what to do."""
    with pytest.raises(ConfigError, match="not a progsum state"):
        ConversationState.from_dict({"log": []})

    class Other(Summary):
        """A different schema."""

    with pytest.raises(ConfigError, match="pass schema=Summary to read it"):
        ConversationState.from_dict(compacted_trip().to_dict(), schema=Other)


def test_from_dict_rejects_damaged_cutoff() -> None:
    """A cutoff beyond the log is reported as damage, not silently accepted."""
    data = compacted_trip().to_dict()
    data["cutoff"] = 10_000
    with pytest.raises(ConfigError, match="do not fit"):
        ConversationState.from_dict(data)


def test_record_refuses_to_move_cutoff_backwards() -> None:
    """The cutoff only moves forward."""
    state = compacted_trip()
    with pytest.raises(ConfigError, match="cutoff only moves forward"):
        state.record(state.events[-1], cutoff=state.cutoff - 1)
