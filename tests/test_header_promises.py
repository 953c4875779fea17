"""The header promises only what exists: it names the archive once the folded messages are in it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy, load_schema
from progsum.errors import ArchiveError
from progsum.store._archive import MemoryArchive
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._schema import BaseSummary, Summary
from tests.conftest import fixed_clock

THREAD = "case-41"
POLICY = Policy(context_window=8_000, trigger=("messages", 12), keep=("messages", 4))
ARCHIVE_LINE = f'archive of thread "{THREAD}"'
CASE_LINE = f'archived under thread "{THREAD}"'


class FullDisk(MemoryArchive):
    """An archive that refuses every write until ``fixed`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.fixed = False

    def put(self, *args: Any, **kwargs: Any) -> None:
        """Refuse the write while the disk is full."""
        if not self.fixed:
            raise OSError(28, "No space left on device")
        super().put(*args, **kwargs)


def chat(turns: int, start: int = 0) -> list[dict[str, str]]:
    """A user and an assistant exchanging facts about a move, one pair per turn."""
    messages = []
    for n in range(start, start + turns):
        messages.append(
            {"role": "user", "content": f"Box {n} holds the kitchen plates and the blue mugs."}
        )
        messages.append(
            {
                "role": "assistant",
                "content": f"Noted: box {n} goes to the kitchen. I will label it, wrap the mugs "
                "in paper and stack it by the door with the other fragile boxes, so the movers "
                "load it last and unload it first.",
            }
        )
    return messages


def compactor(
    archive: MemoryArchive | None = None, schema: type[BaseSummary] = Summary
) -> Compactor[Any]:
    """The offline summarizer under `POLICY`, with ``archive`` if given."""
    return Compactor(
        policy=POLICY,
        summarizer=ExtractiveSummarizer(),
        schema=schema,
        archive=archive,
        clock=fixed_clock,
    )


def compacted(engine: Compactor[Any], turns: int = 10) -> ConversationState[Any]:
    """A conversation of ``turns`` turns under ``thread_id`` THREAD, compacted once."""
    state = ConversationState([{"role": "user", "content": "Plan my move."}], thread_id=THREAD)
    return engine.compact(state.extend(chat(turns)), force=True)


@pytest.mark.parametrize(
    ("schema", "line"),
    [("default", ARCHIVE_LINE), ("customer-support", CASE_LINE)],
    ids=["default", "customer-support"],
)
def test_no_archive_no_archive_sentence(schema: str, line: str) -> None:
    """A state with a thread id but no archive (the Agents SDK adapter's case) promises none."""
    state = compacted(compactor(schema=load_schema(schema)))
    assert state.cutoff > 0
    assert state.header.startswith("# ")
    assert "archive" not in state.header
    assert line not in state.header
    assert not state.folded_in_archive


@pytest.mark.parametrize(
    ("schema", "line"),
    [("default", ARCHIVE_LINE), ("customer-support", CASE_LINE)],
    ids=["default", "customer-support"],
)
def test_an_archive_that_holds_the_segment_is_named(schema: str, line: str) -> None:
    """With an archive, the header names the thread and the folded range it holds."""
    archive = MemoryArchive()
    state = compacted(compactor(archive, load_schema(schema)))
    start, end = state.events[-1].folded or (0, 0)
    assert [m.index for m in archive.get(THREAD)] == list(range(start, end))
    assert f"{line}, messages {start + 1}\N{EN DASH}{end}." in state.header
    assert state.events[-1].in_archive
    assert archive.events(THREAD) == [state.events[-1]]


def test_the_async_driver_keeps_the_same_promise() -> None:
    """``acompact`` names the archive exactly when ``compact`` does."""
    state = ConversationState([{"role": "user", "content": "Plan my move."}], thread_id=THREAD)
    state = state.extend(chat(10))
    with_archive = asyncio.run(compactor(MemoryArchive()).acompact(state, force=True))
    without = asyncio.run(compactor().acompact(state, force=True))
    assert with_archive.header == compactor(MemoryArchive()).compact(state, force=True).header
    assert ARCHIVE_LINE in with_archive.header
    assert "archive" not in without.header


def test_a_pending_segment_promises_no_archive_until_it_is_written() -> None:
    """A write that failed leaves no archive sentence; it comes with the compaction after the write.

    Between two compactions the header (the requests' ``system``) stays the same bytes, so the
    sentence waits for the next fold once the archive holds every folded segment.
    """
    archive = FullDisk()
    engine = compactor(archive)
    state = ConversationState([{"role": "user", "content": "Plan my move."}], thread_id=THREAD)
    for message in chat(12):
        state = engine.maybe_compact(state.append(message))
    pending = [e for e in state.events if e.archive_pending]
    assert pending, "the write failed, so the segment waits in the state's log"
    assert not any(e.in_archive for e in pending)
    assert state.header
    assert "archive" not in state.header
    archive.fixed = True
    later = iter(chat(40, start=12))
    while not any(e.outcome == "archived" for e in state.events):
        state = engine.maybe_compact(state.append(next(later)))
    assert state.folded_in_archive
    written = state.events[-1]
    assert written.outcome == "archived"
    assert "archive" not in state.header  # the header of the requests since the last fold
    assert engine.count(state)[0] == written.tokens_after == written.tokens_before
    compactions = sum(e.outcome == "compacted" for e in state.events)
    while sum(e.outcome == "compacted" for e in state.events) == compactions:
        state = engine.maybe_compact(state.append(next(later)))
    assert ARCHIVE_LINE in state.header
    folded = {i for e in state.events if e.folded for i in range(*e.folded)}
    assert folded <= {m.index for m in archive.get(THREAD)}


def test_an_unguarded_failure_leaves_the_state_without_a_promise() -> None:
    """``compact`` raises when the archive fails; the state passed in is unchanged."""
    state = ConversationState([{"role": "user", "content": "Plan my move."}], thread_id=THREAD)
    state = state.extend(chat(10))
    with pytest.raises(ArchiveError, match="No space left on device"):
        compactor(FullDisk()).compact(state, force=True)
    assert state.header == ""


def test_segments_folded_before_the_archive_was_attached_are_not_promised() -> None:
    """An archive attached after the first compaction holds only the later segments: no line."""
    state = compacted(compactor())
    archive = MemoryArchive()
    state = compactor(archive).compact(state.extend(chat(10, start=10)), force=True)
    assert state.events[-1].in_archive
    assert not state.events[0].in_archive
    assert "archive" not in state.header


def test_the_promise_survives_persistence() -> None:
    """A state read back from JSON names the archive exactly when the saved one did."""
    with_archive = compacted(compactor(MemoryArchive()))
    without = compacted(compactor())
    for state in (with_archive, without):
        loaded = ConversationState.from_json(state.to_json())
        assert loaded.header == state.header
    assert ARCHIVE_LINE in with_archive.header
    assert "archive" not in without.header


def test_the_header_offers_no_recall() -> None:
    """The header never tells the model to recall: only the caller knows if a recall tool exists."""
    for state in (compacted(compactor(MemoryArchive())), compacted(compactor())):
        assert "recall" not in state.header.lower()
