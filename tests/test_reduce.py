"""Cheap reduction: old, large tool data is cleared from the model view before any model call."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from progsum import (
    Compactor,
    ConfigError,
    ConversationState,
    Policy,
    render_anthropic,
    render_openai,
)
from progsum.errors import ArchiveError
from progsum.policy._reduction import Reduction
from progsum.policy._tokens import HeuristicCounter
from progsum.state._cleared import CLEARED_KEY
from progsum.store._archive import MemoryArchive
from progsum.summary._update import SummaryUpdate
from progsum.testing import QueuedSummarizer
from tests.conftest import fixed_clock

BIG = "row,amount\n" + "\n".join(f"{n},{n * 7}.00" for n in range(400))  # ~5,000 characters
POLICY = Policy(context_window=40_000, trigger=("tokens", 9_000), keep=("messages", 4))


def anthropic_session(reads: int) -> list[dict[str, Any]]:
    """A user asks for a report; the agent reads big files, one tool call per turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Summarise the sales CSVs."}]
    for n in range(reads):
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": "read_file", "input": {"n": n}}
        messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": BIG}
        messages.append({"role": "user", "content": [result]})
    messages.append({"role": "assistant", "content": "All files read."})
    return messages


def openai_session(reads: int) -> list[dict[str, Any]]:
    """The same in OpenAI chat format, with the file written back as a big tool input."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Summarise the sales CSVs."}]
    for n in range(reads):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": json.dumps({"csv": BIG})},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": BIG})
    messages.append({"role": "assistant", "content": "All files written."})
    return messages


def compactor(**kwargs: Any) -> Compactor:
    """A compactor whose fake summarizer fails the test if it is ever called."""
    options: dict[str, Any] = {
        "policy": POLICY,
        "summarizer": QueuedSummarizer(),
        "clock": fixed_clock,
    }
    return Compactor(**(options | kwargs))


def test_old_tool_results_are_cleared_and_no_model_is_called() -> None:
    """Clearing is enough here: one reduced event, the summarizer untouched, the log intact."""
    messages = anthropic_session(reads=8)
    state = ConversationState(messages)
    reduced = compactor().maybe_compact(state)

    (event,) = reduced.events
    assert event.outcome == "reduced"
    assert event.tokens_after < event.tokens_before
    assert event.tokens_after <= POLICY.target_limit
    assert event.cleared == (2, 4, 6, 8, 10, 12)  # the last 2 results, in the tail, stay whole
    assert "cleared 6 old tool result(s)" in event.reason
    assert reduced.cutoff == 0
    assert reduced.summary is None
    assert all(a is b for a, b in zip(reduced.log, messages, strict=True))

    _, view = render_anthropic(reduced)
    shown = view[2]["content"][0]
    assert shown["tool_use_id"] == "toolu_0"
    assert shown["content"].startswith(
        "[progsum cleared this output of read_file: 4,540 characters"
    )
    assert "message 3" in shown["content"]
    assert view[14] is messages[14]  # the second-to-last result is kept
    assert view[-1] is messages[-1]
    assert reduced.estimate(HeuristicCounter()) < state.estimate(HeuristicCounter())


def test_openai_results_and_inputs_are_cleared_with_pairs_intact() -> None:
    """Tool messages lose their content and tool calls their arguments; ids stay paired."""
    messages = openai_session(reads=4)
    roomy = Policy(context_window=60_000, trigger=("tokens", 18_000), keep=("messages", 4))
    reduced = compactor(policy=roomy).maybe_compact(
        ConversationState(messages, thread_id="sales-7")
    )
    (event,) = reduced.events
    assert event.outcome == "reduced"
    view = render_openai(reduced)
    calls = [c["id"] for m in view for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in view if m["role"] == "tool"]
    assert calls == results
    arguments = json.loads(view[1]["tool_calls"][0]["function"]["arguments"])
    assert "input to write_file" in arguments[CLEARED_KEY]
    assert 'thread "sales-7", message 2' in arguments[CLEARED_KEY]
    assert view[2]["content"].startswith("[progsum cleared this output of write_file")
    assert view[-1] is messages[-1]


def test_settings_choose_what_is_cleared() -> None:
    """tools= limits clearing to named tools; inputs=False keeps inputs; keep_results protects."""
    messages = openai_session(reads=4)
    only_reads = compactor(
        reduction=Reduction(tools=frozenset({"read_file"})),
        summarizer=QueuedSummarizer(SummaryUpdate()),
    )
    assert only_reads.maybe_compact(ConversationState(messages)).events[0].outcome != "reduced"

    no_inputs = compactor(
        reduction=Reduction(inputs=False, keep_results=0),
        summarizer=QueuedSummarizer(SummaryUpdate()),
    )
    state = no_inputs.maybe_compact(ConversationState(messages))
    view = render_openai(state)
    assert all(
        CLEARED_KEY not in c["function"]["arguments"]
        for m in view
        for c in m.get("tool_calls") or ()
    )


def test_when_clearing_is_not_enough_the_segment_is_summarized_from_the_originals() -> None:
    """A reduced event, then a compaction in the same turn; the summarizer sees the full data."""
    fake = QueuedSummarizer(SummaryUpdate(add={"established_facts": ["Row 399 is 2793.00."]}))
    tight = Policy(context_window=20_000, trigger=("tokens", 3_000), keep=("messages", 1))
    state = compactor(policy=tight, summarizer=fake).maybe_compact(
        ConversationState(anthropic_session(reads=8))
    )
    assert [e.outcome for e in state.events] == ["reduced", "compacted"]
    (request,) = fake.requests
    assert any(json.dumps(BIG)[1:-1] in json.dumps(m) for m in request.segment.messages)
    assert state.events[1].tokens_before == state.events[0].tokens_after


def test_reduction_none_turns_the_stage_off() -> None:
    """Without a reduction the model is asked straight away."""
    fake = QueuedSummarizer(SummaryUpdate())
    state = compactor(reduction=None, summarizer=fake).maybe_compact(
        ConversationState(anthropic_session(reads=6))
    )
    assert [e.outcome for e in state.events] == ["compacted"]
    assert not state.cleared


def test_cleared_blocks_survive_json_and_render_the_same_bytes() -> None:
    """Placeholders are decided once and stored: a reloaded state renders identically."""
    reduced = compactor().maybe_compact(ConversationState(anthropic_session(reads=6)))
    again = ConversationState.from_json(reduced.to_json())
    assert again.cleared == reduced.cleared
    assert json.dumps(render_anthropic(again)) == json.dumps(render_anthropic(reduced))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_chars": 0}, "min_chars=0 must be 1 or more"),
        ({"keep_results": -1}, "keep_results=-1 must be 0 or more"),
        ({"tools": "read_file"}, "must be a set of tool names"),
    ],
)
def test_bad_settings_name_the_value_and_the_fix(kwargs: dict[str, Any], message: str) -> None:
    """Each bad setting is one ConfigError naming it."""
    with pytest.raises(ConfigError, match=message):
        Reduction(**kwargs)


# -- the archive, written before the state that folds a segment is returned ---------------------


def test_a_folded_segment_is_archived_with_its_event() -> None:
    """Every folded message is in the archive, with the event; the header points there."""
    archive = MemoryArchive()
    fake = QueuedSummarizer(SummaryUpdate(add={"established_facts": ["The agent read the CSVs."]}))
    session = ConversationState(anthropic_session(reads=3), thread_id="sales-7")
    state = compactor(summarizer=fake, archive=archive, reduction=None).compact(session, force=True)
    start, end = state.events[-1].folded or (0, 0)
    stored = archive.get("sales-7")
    assert [m.index for m in stored] == list(range(start, end))
    assert [m.message for m in stored] == list(session.log[start:end])
    assert archive.events("sales-7") == [state.events[-1]]
    assert 'archive of thread "sales-7", messages 2\N{EN DASH}' in state.header


def test_an_archive_needs_a_thread_id() -> None:
    """An archive files segments by thread: a state without one is a clear error."""
    fake = QueuedSummarizer(SummaryUpdate())
    with pytest.raises(ConfigError, match="has no thread_id"):
        compactor(summarizer=fake, archive=MemoryArchive()).compact(
            ConversationState(anthropic_session(reads=3)), force=True
        )


def test_a_failed_archive_write_leaves_the_state_as_it_was() -> None:
    """The write fails: ArchiveError, and the caller's state is still the valid one."""

    class Full(MemoryArchive):
        def put(self, *_: Any, **__: Any) -> None:
            raise OSError("disk full")

    fake = QueuedSummarizer(SummaryUpdate(), SummaryUpdate())
    session = ConversationState(anthropic_session(reads=3), thread_id="t")
    with pytest.raises(ArchiveError, match=r"disk full.*the conversation state is unchanged"):
        compactor(summarizer=fake, archive=Full(), reduction=None).compact(session, force=True)
    assert session.cutoff == 0
    assert not session.events
    retried = compactor(summarizer=fake, archive=MemoryArchive(), reduction=None).compact(
        session, force=True
    )
    assert retried.cutoff > 0


def test_the_async_engine_archives_too() -> None:
    """The async `acompact` writes the folded segment (in a thread) before returning the state."""
    archive = MemoryArchive()
    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": ["Only read the sales CSVs."]}))
    session = ConversationState(anthropic_session(reads=3), thread_id="sales-8")
    state = asyncio.run(
        compactor(summarizer=fake, archive=archive, reduction=None).acompact(session, force=True)
    )
    start, end = state.events[-1].folded or (0, 0)
    assert [m.index for m in archive.get("sales-8")] == list(range(start, end))
