"""Both stores: the Archive protocol, saved states with versions, conflicts, faults and export.

Every test that uses the ``store`` fixture runs against SQLite and a real PostgreSQL server
(tests/postgres.py); the few that check one backend's own file or schema say so in their name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import TextBlock

from progsum import (
    Compactor,
    ConfigError,
    ConversationState,
    Policy,
    Summary,
    SummaryRequest,
    SummaryUpdate,
    render_anthropic,
)
from progsum.errors import ArchiveError, ConflictError
from progsum.messages._formats import to_record
from progsum.state._events import CompactionEvent
from progsum.store._archive import Archive, MemoryArchive
from progsum.store._sqlite import SQLiteStore, Stored
from progsum.summary._update import Retirement
from progsum.testing import FunctionSummarizer, QueuedSummarizer
from tests.conftest import fixed_clock
from tests.conversations import TRIP_RULE, spelled, trip_planning
from tests.store_backends import (
    BACKENDS,
    SQLITE_FORMAT_3,
    Backend,
    SQLiteBackend,
    Store,
    make_backend,
)

SMALL = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 4))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """An empty SQLite file or PostgreSQL database."""
    return make_backend(request, tmp_path)


@pytest.fixture
def store(backend: Backend) -> Iterator[Store]:
    """A fresh store on the backend."""
    with backend.open() as opened:
        yield opened


def compacted_trip(thread_id: str = "trip") -> ConversationState[Summary]:
    """A trip conversation compacted once, with a usage anchor and a summary."""
    fake = QueuedSummarizer(
        SummaryUpdate(objective="Plan Lisbon.", add={"constraints": [TRIP_RULE]})
    )
    compactor = Compactor(policy=SMALL, summarizer=fake, clock=fixed_clock)
    state = ConversationState(trip_planning(8), thread_id=thread_id).record_usage(
        {"input_tokens": 1500, "output_tokens": 40}
    )
    return compactor.compact(state, force=True)


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A fake summarizer: one fact naming the folded range."""
    segment = request.segment
    return SummaryUpdate(
        add={"established_facts": [f"Read {spelled(segment.start)} to {spelled(segment.end - 1)}."]}
    )


def archive_new_segments(
    archive: Archive, before: ConversationState[Any], after: ConversationState[Any]
) -> None:
    """Write each segment folded between two states to the archive, as the engine does."""
    assert after.thread_id is not None
    for event in after.events[len(before.events) :]:
        if event.outcome == "compacted" and event.folded is not None:
            start, end = event.folded
            archive.put(after.thread_id, start, list(after.log[start:end]), event)


def chat(n: int, *, tag: str = "m") -> list[dict[str, Any]]:
    """``n`` alternating user/assistant messages with distinct contents."""
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"{tag} {spelled(i)}: " + "words " * 8,
        }
        for i in range(n)
    ]


# -- saved states ---------------------------------------------------------------------------------


def test_round_trip_keeps_log_summary_events_and_anchor(store: Store) -> None:
    """A saved state loads back equal in every field, and renders the same bytes."""
    state = compacted_trip()
    assert state.summary is not None
    assert state.events
    assert state.anchor is not None
    assert store.save(state, expected_version=None) == 1
    loaded, version = store.load("trip")
    assert version == 1
    assert loaded.to_dict() == state.to_dict()
    assert loaded.summary == state.summary
    assert loaded.header == state.header
    assert render_anthropic(loaded, system="Be brief.") == render_anthropic(
        state, system="Be brief."
    )


def test_versions_count_saves_not_state_versions(store: Store) -> None:
    """The store's version is its own counter: 1, 2, 3 ... whatever ``state.version`` is."""
    state = ConversationState(chat(2), thread_id="t")
    versions = [store.save(state, expected_version=None)]
    for n in range(2):
        for message in chat(5, tag=f"more{n}"):
            state = state.append(message)
        versions.append(store.save(state, expected_version=versions[-1]))
    assert versions == [1, 2, 3]
    assert state.version == 10
    assert store.load("t").version == 3
    assert store.threads() == ["t"]


def test_save_writes_only_the_new_messages(backend: Backend) -> None:
    """A save inserts the messages appended since the last save, not the whole log again."""
    with backend.counting_writes("messages") as writes, backend.open() as store:
        state = ConversationState(chat(300), thread_id="t")
        store.save(state, expected_version=None)
        (before,) = writes()
        store.save(state.extend(chat(3, tag="new")), expected_version=1)
        assert writes() == (before + 3,)
    assert len(backend.message_rows("t")) == 303


def superseding(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A fake summarizer whose every fact supersedes its prior ones, which become tombstones."""
    prior = [i for i in request.prior.established_facts if i.origin == "summarizer"]
    return SummaryUpdate(
        add={"established_facts": [f"Read from {spelled(request.segment.start)} on."]},
        retire=[Retirement(id=item.id, reason="superseded") for item in prior],
    )


def booking(turns: int, *, start: int = 0) -> list[dict[str, Any]]:
    """A user stating a booking reference each turn (a value for the ledger), and the replies."""
    messages: list[dict[str, Any]] = []
    for n in range(start, start + turns):
        messages.append({"role": "user", "content": f"My booking reference is HX-{n:04d}."})
        messages.append({"role": "assistant", "content": f"Noted, {spelled(n)}. " + "ok " * 30})
    return messages


NO_RECALL = Policy(
    trigger=("messages", 16), context_window=8_000, keep=("messages", 4), recall_budget=None
)
"""Without recall, and at a window the values fit: every value the user stated stays on the
ledger (a value leaves only when recall returns it or the window has no room for it)."""


def grown(
    state: ConversationState[Summary], turns: int, start: int, *, policy: Policy = NO_RECALL
) -> ConversationState[Summary]:
    """``state`` after ``turns`` more booking turns, compacted as they come (told: an agent's)."""
    compactor = Compactor(
        policy=policy, summarizer=FunctionSummarizer(superseding), conversation="agent"
    )
    for message in booking(turns, start=start):
        state = compactor.maybe_compact(state.append(message))
    return state


def test_a_save_writes_only_the_new_tombstones_and_ledger_entries(backend: Backend) -> None:
    """The summary's history (tombstones, the value ledger) is rows written once, not state JSON.

    So the state row holds the live summary only, and a save costs what is new, however many
    items the session has retired: here a worker saving each state it grew, with one store.
    """
    state = grown(ConversationState(thread_id="t"), 30, 0)
    later = grown(state, 8, 30)
    assert state.summary is not None
    assert later.summary is not None
    assert len(state.summary.retired) >= 2
    assert len(later.summary.retired) > len(state.summary.retired)
    assert len(later.ledger) > len(state.ledger) >= 5
    with backend.counting_writes("retired", "ledger") as writes, backend.open() as store:
        store.save(state, expected_version=None)
        assert writes() == (len(state.summary.retired), len(state.ledger))
        store.save(later, expected_version=1)
        assert writes() == (len(later.summary.retired), len(later.ledger))
        loaded = store.load("t").state
        assert loaded.to_dict() == later.to_dict()
        again = grown(loaded, 8, 38)
        store.save(again, expected_version=2)
        assert again.summary is not None
        assert writes() == (len(again.summary.retired), len(again.ledger))
    (row,) = backend.rows("states", "t")
    saved = json.loads(next(v for v in row if isinstance(v, str) and v.startswith("{")))
    assert "retired" not in saved["summary"]
    assert "ledger" not in saved
    assert len(backend.rows("retired", "t")) == len(again.summary.retired)
    assert len(backend.rows("ledger", "t")) == len(again.ledger)
    with backend.open() as other:
        assert other.load("t").state.to_dict() == again.to_dict()


def test_a_ledger_that_releases_values_rewrites_only_its_live_entries(backend: Backend) -> None:
    """With recall on, released values leave the ledger: a save rewrites its live entries.

    From the first one released: O(live ledger), never the session's history.
    """
    state = grown(ConversationState(thread_id="t"), 30, 0, policy=SMALL)
    later = grown(state, 8, 30, policy=SMALL)
    assert state.ledger[0] not in later.ledger  # the oldest values were released
    with backend.counting_writes("ledger") as writes, backend.open() as store:
        store.save(state, expected_version=None)
        (before,) = writes()
        store.save(later, expected_version=1)
        (after,) = writes()
        assert after - before <= len(later.ledger)
        assert store.load("t").state.to_dict() == later.to_dict()
    assert len(backend.rows("ledger", "t")) == len(later.ledger)


def test_a_summary_history_that_is_not_an_extension_is_saved_as_it_is(backend: Backend) -> None:
    """A state whose tombstones or ledger were replaced, not extended, saves and loads exactly.

    So does one saved by a store that did not load it (another process's store object).
    """
    state = grown(ConversationState(thread_id="t"), 24, 0)
    assert state.summary is not None
    summary = state.summary.model_copy(update={"retired": state.summary.retired[1:3]})
    rewritten = state.record(None, summary=summary, ledger=state.ledger[2:])
    with backend.open() as store:
        store.save(state, expected_version=None)
        store.save(rewritten, expected_version=1)
        assert store.load("t").state.to_dict() == rewritten.to_dict()
    more = grown(rewritten, 6, 24)
    with backend.open() as other:
        other.save(more, expected_version=2)
    with backend.open() as store:
        assert store.load("t").state.to_dict() == more.to_dict()
    assert more.summary is not None
    assert len(backend.rows("retired", "t")) == len(more.summary.retired)


def test_a_format_3_file_loads_its_history_from_the_json_then_saves_it_in_rows(
    tmp_path: Path,
) -> None:
    """A state saved before format 4 loads the same, and its next save moves its history to rows.

    Format 3 kept the tombstones and the ledger in the state's JSON.
    """
    state = grown(ConversationState(thread_id="t"), 30, 0)
    assert state.summary is not None
    assert state.summary.retired
    assert state.ledger
    path = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(SQLITE_FORMAT_3)
        log = state.to_dict()["log"]
        rows = [(i, json.dumps(m, ensure_ascii=False)) for i, m in enumerate(log)]
        db.executemany("INSERT INTO messages VALUES ('t', ?, ?, NULL, NULL)", rows)
        events = [(e.number, e.model_dump_json()) for e in state.events]
        db.executemany("INSERT INTO events VALUES ('t', ?, ?)", events)
        record = json.dumps(state.to_dict(log=False, events=False, cleared=False))
        db.execute(
            "INSERT INTO states VALUES ('t', 4, ?, ?, ?, '2026-01-01T00:00:00+00:00', 0)",
            (len(state), len(state.events), record),
        )
        db.commit()
    with SQLiteStore(path) as store:
        loaded = store.load("t")
        assert loaded.version == 4
        assert loaded.state.to_dict() == state.to_dict()
        more = grown(loaded.state, 6, 30)
        assert store.save(more, expected_version=4) == 5
        assert store.load("t").state.to_dict() == more.to_dict()
    backend = SQLiteBackend(path)
    assert more.summary is not None
    assert len(backend.rows("retired", "t")) == len(more.summary.retired)
    assert len(backend.rows("ledger", "t")) == len(more.ledger)
    (row,) = backend.rows("states", "t")
    saved = json.loads(next(v for v in row if isinstance(v, str) and v.startswith("{")))
    assert "retired" not in saved["summary"]
    assert "ledger" not in saved


def test_sdk_objects_are_stored_as_their_json(store: Store) -> None:
    """SDK content blocks are stored as the archive's JSON form and load back as plain dicts."""
    reply = {"role": "assistant", "content": [TextBlock(type="text", text="Alfama, then Belém.")]}
    state = ConversationState([{"role": "user", "content": "Where first?"}, reply], thread_id="t")
    store.save(state, expected_version=None)
    loaded = store.load("t").state
    assert list(loaded.log) == [to_record(m) for m in state.log]
    assert loaded.log[1]["content"][0] == {"type": "text", "text": "Alfama, then Belém."}
    assert to_record(render_anthropic(loaded)) == to_record(render_anthropic(state))


def test_stale_save_conflicts_and_writes_nothing(store: Store, backend: Backend) -> None:
    """Two workers load version 1; the second save raises ConflictError and stores nothing."""
    store.save(ConversationState(chat(4), thread_id="t"), expected_version=None)
    first, second = store.load("t"), store.load("t")
    winner = first.state.extend(chat(2, tag="winner"))
    loser = second.state.extend(chat(6, tag="loser"))
    assert store.save(winner, expected_version=first.version) == 2
    with pytest.raises(ConflictError) as caught:
        store.save(loser, expected_version=second.version)
    assert (caught.value.thread_id, caught.value.expected, caught.value.actual) == ("t", 1, 2)
    assert "reload it and apply your change again" in str(caught.value)
    stored = store.load("t")
    assert stored.version == 2
    assert stored.state.to_dict() == winner.to_dict()
    rows = backend.message_rows("t")
    assert len(rows) == 6
    assert not [text for _, text in rows if "loser" in text]


def test_creating_an_existing_thread_conflicts(store: Store) -> None:
    """expected_version=None means "new thread": it fails when the thread exists."""
    store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)
    with pytest.raises(ConflictError) as caught:
        store.save(ConversationState(chat(3), thread_id="t"), expected_version=None)
    assert (caught.value.expected, caught.value.actual) == (0, 1)
    assert len(store.load("t").state) == 2


def test_caller_mistakes_name_the_fix(store: Store) -> None:
    """No thread id, unknown thread, shorter or diverging logs: ConfigError saying what to do."""
    with pytest.raises(ConfigError, match=r"thread_id='\.\.\.'"):
        store.save(ConversationState(chat(2)), expected_version=None)
    with pytest.raises(ConfigError, match=r"'nope'.*saved: none.*expected_version=None"):
        store.load("nope")
    with pytest.raises(ConfigError, match="was never saved"):
        store.save(ConversationState(chat(2), thread_id="nope"), expected_version=3)
    store.save(ConversationState(chat(4), thread_id="t"), expected_version=None)
    with pytest.raises(ConfigError, match=r"'nope'.*saved: 't'"):
        store.load("nope")
    with pytest.raises(ConfigError, match="append-only"):
        store.save(ConversationState(chat(3), thread_id="t"), expected_version=1)
    with pytest.raises(ConfigError, match="message 3 of the state differs"):
        store.save(ConversationState(chat(5, tag="other"), thread_id="t"), expected_version=1)
    assert store.load("t").version == 1


def test_load_with_another_schema_says_which(store: Store) -> None:
    """A thread summarized with Summary cannot be read as another schema by mistake."""

    class Other(Summary):
        """A different schema."""

    store.save(compacted_trip(), expected_version=None)
    with pytest.raises(ConfigError, match="pass schema=Summary"):
        store.load("trip", schema=Other)


# -- update: load, change, save, retry ------------------------------------------------------------


def test_update_reapplies_the_change_after_a_conflict(store: Store) -> None:
    """When another writer saves in between, update reloads and applies the change again."""
    store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)
    seen: list[int] = []

    def change(state: ConversationState[Summary]) -> ConversationState[Summary]:
        seen.append(len(state))
        if len(seen) == 1:  # another worker saves while this one is busy
            other = store.load("t")
            store.save(other.state.extend(chat(2, tag="other")), expected_version=other.version)
        return state.extend(chat(2, tag="mine"))

    stored = store.update("t", change)
    assert seen == [2, 4]
    assert stored.version == 3
    contents = [m["content"].split(":")[0] for m in store.load("t").state.log]
    assert contents == ["m zero", "m one", "other zero", "other one", "mine zero", "mine one"]


def test_update_gives_up_after_its_attempts(store: Store) -> None:
    """A writer that always loses raises the last ConflictError, and its change is not stored."""
    store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)

    def always_raced(state: ConversationState[Summary]) -> ConversationState[Summary]:
        other = store.load("t")
        store.save(other.state.extend(chat(2, tag="other")), expected_version=other.version)
        return state.extend(chat(2, tag="mine"))

    with pytest.raises(ConflictError):
        store.update("t", always_raced, attempts=3)
    assert store.load("t").version == 4
    assert not [m for m in store.load("t").state.log if m["content"].startswith("mine")]
    with pytest.raises(ConfigError, match="attempts=0"):
        store.update("t", always_raced, attempts=0)


def test_update_without_a_change_saves_nothing(store: Store) -> None:
    """A change that returns its state (maybe_compact when nothing is due) keeps the version."""
    store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)
    compactor = Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts))
    stored = store.update("t", compactor.maybe_compact)
    assert stored.version == 1
    with pytest.raises(ConfigError, match="not a ConversationState of thread 't'"):
        store.update("t", lambda _: ConversationState(chat(3), thread_id="u"))


def test_aupdate_accepts_an_async_change(store: Store) -> None:
    """The async helper awaits an async change and saves from a worker thread."""
    store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)

    async def change(state: ConversationState[Summary]) -> ConversationState[Summary]:
        await asyncio.sleep(0)
        return state.extend(chat(2, tag="async"))

    async def run() -> list[Stored[Summary]]:
        first = await store.aupdate("t", change)
        second = await store.aupdate("t", lambda s: s.extend(chat(2, tag="sync")))
        return [first, second]

    first, second = asyncio.run(run())
    assert (first.version, second.version) == (2, 3)
    assert store.load("t").state.to_dict() == second.state.to_dict()


def test_aupdate_reapplies_after_a_conflict(store: Store) -> None:
    """The async helper retries like update: reload, apply again, save; then gives up."""
    store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)
    calls: list[int] = []

    async def raced(state: ConversationState[Summary]) -> ConversationState[Summary]:
        calls.append(len(state))
        if len(calls) == 1:
            other = store.load("t")
            store.save(other.state.extend(chat(2, tag="other")), expected_version=other.version)
        return state.extend(chat(2, tag="mine"))

    stored = asyncio.run(store.aupdate("t", raced))
    assert calls == [2, 4]
    assert stored.version == 3

    def always_raced(state: ConversationState[Summary]) -> ConversationState[Summary]:
        other = store.load("t")
        store.save(other.state.extend(chat(2, tag="late")), expected_version=other.version)
        return state.extend(chat(2, tag="lost"))

    with pytest.raises(ConflictError):
        asyncio.run(store.aupdate("t", always_raced, attempts=2))
    assert store.load("t").version == 5


# -- the archive ----------------------------------------------------------------------------------


def test_store_is_an_archive_that_answers_like_memory_archive(store: Store) -> None:
    """get, search and events agree with MemoryArchive for the same writes."""
    memory = MemoryArchive()
    assert isinstance(store, Archive)
    state = ConversationState(trip_planning(8), thread_id="trip")
    compactor = Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts), clock=fixed_clock)
    for archive in (memory, store):
        after = compactor.compact(state, force=True)
        archive_new_segments(archive, state, after)
        grown = after.extend(trip_planning(8)[4:])
        archive_new_segments(archive, grown, compactor.compact(grown, force=True))

    def view(entries: list[Any]) -> list[tuple[int, Any, int | None]]:
        return [(e.index, e.message, e.event) for e in entries]

    assert view(store.get("trip")) == view(memory.get("trip"))
    assert view(store.get("trip", 3, 9)) == view(memory.get("trip", 3, 9))
    assert [e.index for e in store.get("trip", 3, 9)] == list(range(3, 9))
    for text in ("SINTRA", "belém", "€17", "no such words"):
        assert view(store.search("trip", text)) == view(memory.search("trip", text))
    assert view(store.search("trip", "worth", limit=3)) == view(
        memory.search("trip", "worth", limit=3)
    )
    assert store.events("trip") == memory.events("trip")
    assert [e.number for e in store.events("trip")] == [1, 2]
    assert store.threads() == memory.threads() == ["trip"]
    assert store.get("other") == store.search("other", "x") == []
    assert store.events("other") == []


def test_put_is_idempotent(store: Store, backend: Backend) -> None:
    """Writing the same segment again (a retry after a crash) stores nothing twice."""
    state = compacted_trip()
    event = state.events[-1]
    assert event.folded is not None
    start, end = event.folded
    segment = list(state.log[start:end])
    store.put("trip", start, segment, event)
    first = store.get("trip")
    store.put("trip", start, segment, event)
    store.put("trip", start, segment[:3], event)
    assert store.get("trip") == first  # same rows, same first archived_at
    assert [e.message for e in first] == segment
    assert [e.event for e in first] == [event.number] * len(segment)
    assert store.events("trip") == [event]
    assert len(backend.message_rows("trip")) == len(segment)


def test_a_saved_message_is_stored_once_when_archived(store: Store, backend: Backend) -> None:
    """The archive and the saved log share one table: archiving a saved message marks it."""
    state = ConversationState(trip_planning(8), thread_id="trip")
    store.save(state, expected_version=None)
    assert store.get("trip") == []  # saved, not folded: not in the archive yet
    compactor = Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts), clock=fixed_clock)
    after = compactor.compact(state, force=True)
    archive_new_segments(store, state, after)
    store.save(after, expected_version=1)
    assert after.events[-1].folded == (1, len(state) - 4)
    assert [e.index for e in store.get("trip")] == list(range(1, len(state) - 4))
    assert len(backend.message_rows("trip")) == len(state)


def test_save_archives_what_its_compactions_folded(store: Store) -> None:
    """A compacted state saved without an archive write still leaves its segment archived."""
    state = compacted_trip()
    store.save(state, expected_version=None)
    event = state.events[-1]
    assert event.folded is not None
    archived = store.get("trip")
    assert [e.index for e in archived] == list(range(*event.folded))
    assert [e.message for e in archived] == list(state.log[slice(*event.folded)])
    assert store.events("trip") == list(state.events)


def test_a_losing_writers_archive_is_replaced_by_the_winners(store: Store) -> None:
    """Two workers fold different appends: whoever archived first, the winner's archive stays."""
    store.save(ConversationState(trip_planning(6), thread_id="trip"), expected_version=None)
    loaded = store.load("trip")
    compactor = Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts), clock=fixed_clock)
    loser = compactor.compact(loaded.state.extend(chat(6, tag="loser")), force=True)
    winner = compactor.compact(loaded.state.extend(chat(4, tag="winner")), force=True)
    archive_new_segments(store, loaded.state, loser)  # the loser archives first ...
    archive_new_segments(store, loaded.state, winner)  # ... then the winner ...
    store.save(winner, expected_version=loaded.version)  # ... and the winner saves first
    with pytest.raises(ConflictError):
        store.save(loser, expected_version=loaded.version)
    archive_new_segments(store, loaded.state, loser)  # a late retry of the loser's archive
    event = winner.events[-1]
    assert event.folded is not None
    assert [(e.index, e.message) for e in store.get("trip")] == [
        (i, winner.log[i]) for i in range(*event.folded)
    ]
    assert store.events("trip") == list(winner.events)
    assert store.load("trip").state.to_dict() == winner.to_dict()


def test_a_loser_with_more_compactions_leaves_no_marks(store: Store) -> None:
    """A loser that folded twice archived an event the winner lacks; the winner's save drops it."""
    store.save(ConversationState(trip_planning(6), thread_id="trip"), expected_version=None)
    loaded = store.load("trip")
    compactor = Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts), clock=fixed_clock)
    once = compactor.compact(loaded.state.extend(chat(6, tag="loser")), force=True)
    twice = compactor.compact(once.extend(chat(10, tag="loser-more")), force=True)
    assert [e.number for e in twice.events] == [1, 2]
    winner = compactor.compact(loaded.state.extend(chat(2, tag="winner")), force=True)
    archive_new_segments(store, loaded.state, twice)
    archive_new_segments(store, loaded.state, winner)
    assert [e.number for e in store.events("trip")] == [1, 2]
    assert store.search("trip", "loser")  # the loser's second segment, before the winner saves
    store.save(winner, expected_version=loaded.version)
    event = winner.events[-1]
    assert event.folded is not None
    assert [(e.index, e.message, e.event) for e in store.get("trip")] == [
        (i, winner.log[i], 1) for i in range(*event.folded)
    ]
    assert store.events("trip") == list(winner.events)
    assert store.search("trip", "loser") == []


def test_a_loser_that_folded_further_on_the_same_messages_leaves_no_marks(
    store: Store,
) -> None:
    """Two workers got the same messages; the loser folded once more: that fold is forgotten."""
    store.save(ConversationState(trip_planning(6), thread_id="trip"), expected_version=None)
    loaded = store.load("trip")
    compactor = Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts), clock=fixed_clock)
    same = chat(16, tag="same")
    winner = compactor.compact(loaded.state.extend(same[:8]), force=True).extend(same[8:])
    loser = compactor.compact(winner, force=True)  # the same first fold, then one more
    assert loser.events[0] == winner.events[0]
    assert loser.events[1].folded == (20, 28)
    archive_new_segments(store, loaded.state, loser)
    archive_new_segments(store, loaded.state, winner)
    store.save(winner, expected_version=loaded.version)
    assert [(e.index, e.event) for e in store.get("trip")] == [(i, 1) for i in range(1, 20)]
    assert store.events("trip") == list(winner.events)


def test_the_file_is_one_wal_mode_sqlite_database(tmp_path: Path) -> None:
    """The store is a single SQLite file in WAL mode; a file that is not one is refused."""
    store = SQLiteStore(tmp_path / "store.db")
    store.save(ConversationState(chat(2), thread_id="t"), expected_version=None)
    with sqlite3.connect(tmp_path / "store.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    (tmp_path / "notes.txt").write_text("not a database " * 100, encoding="utf-8")
    with pytest.raises(ArchiveError, match=r"notes\.txt.*file is not a database"):
        SQLiteStore(tmp_path / "notes.txt")


# -- faults ---------------------------------------------------------------------------------------


def test_failed_archive_write_stores_nothing(store: Store, backend: Backend) -> None:
    """When the disk refuses the archive write, put raises ArchiveError and nothing is visible."""
    state = ConversationState(trip_planning(8), thread_id="trip")
    store.save(state, expected_version=None)
    after = compacted_trip()
    with backend.refusing_writes("messages") as failing:
        match = r"could not archive messages of thread 'trip'.*retry"
        with pytest.raises(ArchiveError, match=match):
            archive_new_segments(failing, state, after)
        with pytest.raises(ArchiveError, match="could not save thread 'trip'"):
            failing.save(after, expected_version=1)
    assert store.get("trip") == []
    assert store.events("trip") == []
    stored = store.load("trip")
    assert (stored.version, stored.state.to_dict()) == (1, state.to_dict())


def test_failed_state_write_keeps_the_old_state(store: Store, backend: Backend) -> None:
    """When the state row cannot be written, the messages of that save are rolled back too."""
    state = ConversationState(trip_planning(8), thread_id="trip")
    store.save(state, expected_version=None)
    after = compacted_trip().extend(chat(4, tag="late"))
    with backend.refusing_writes("states") as failing:
        archive_new_segments(failing, state, after)  # the archive write itself succeeds
        with pytest.raises(ArchiveError, match="could not save thread 'trip'"):
            failing.save(after, expected_version=1)
    stored = store.load("trip")
    assert (stored.version, stored.state.to_dict()) == (1, state.to_dict())
    assert not [text for _, text in backend.message_rows("trip") if "late" in text]
    # nothing lost: every message is in the saved state or the archive, and the retry succeeds
    archived = {e.index: e.message for e in store.get("trip")}
    saved = dict(enumerate(stored.state.log))
    assert all(i in archived or i in saved for i in range(len(state)))
    archive_new_segments(store, state, after)
    assert store.save(after, expected_version=1) == 2
    assert store.load("trip").state.to_dict() == after.to_dict()


def test_newer_sqlite_store_format_is_refused(tmp_path: Path) -> None:
    """A file written by a newer progsum is not misread."""
    with sqlite3.connect(tmp_path / "new.db") as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(ArchiveError, match=r"format 99.*upgrade progsum"):
        SQLiteStore(tmp_path / "new.db")


# -- through the engine ---------------------------------------------------------------------------


def test_compactions_through_the_engine_end_up_in_the_store(store: Store) -> None:
    """An agent loop that compacts and persists each turn: archive and saved state stay complete.

    The store is the compactor's archive: the engine writes each folded segment to it before it
    returns the state that `update` then saves.
    """
    compactor = Compactor(
        policy=SMALL, summarizer=FunctionSummarizer(facts), clock=fixed_clock, archive=store
    )
    store.save(ConversationState(trip_planning(1)[:2], thread_id="trip"), expected_version=None)
    for message in trip_planning(30)[2:]:

        def turn(
            state: ConversationState[Summary], message: dict[str, Any] = message
        ) -> ConversationState[Summary]:
            return compactor.maybe_compact(state.append(message))

        store.update("trip", turn)
    state, version = store.load("trip")
    compacted = [e for e in state.events if e.outcome == "compacted"]
    assert len(compacted) >= 3
    assert version == len(trip_planning(30)) - 1
    archived = store.get("trip")
    assert [e.index for e in archived] == list(range(state.head_end, state.cutoff))
    assert [e.message for e in archived] == list(state.log[state.head_end : state.cutoff])
    assert [e.event for e in archived] == [
        e.number for e in compacted for _ in range(*(e.folded or (0, 0)))
    ]
    assert store.events("trip") == list(state.events)


# -- Markdown export ------------------------------------------------------------------------------


def test_markdown_export_reads_in_log_order(store: Store) -> None:
    """Header, kept head, each compaction with its messages, then the live tail; deterministic."""
    state = compacted_trip().extend(
        [
            {"role": "user", "content": "Show me the itinerary."},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Day 1: ```Alfama```, Day 2: Sintra."}],
            },
        ]
    )
    store.save(state, expected_version=None)
    text = store.export_markdown("trip")
    assert text == store.export_markdown("trip")
    assert text.startswith("# Conversation `trip`\n\nSaved version 1: 22 messages, 1 compaction")
    for line in state.header.splitlines():
        assert ("#" + line if line.startswith("#") else line) in text
    event = state.events[0]
    assert event.folded is not None
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections == [
        "## Earlier conversation (compressed)",
        "## Kept in front (messages 1)",
        f"## Compaction 1: compacted, messages 2\N{EN DASH}{event.folded[1]}",
        f"## Live tail (messages {event.folded[1] + 1}\N{EN DASH}22)",
    ]
    assert "\n### Objective\nPlan Lisbon.\n" in text
    assert text.count("### Message ") == len(state)
    rule = text.index(f"### Message 3 · user\n\n{TRIP_RULE}")
    assert text.index("Plan a 5-day trip") < rule < text.index("Show me")
    assert "\n````json\n" in text  # a fence longer than the backticks inside the message


def test_markdown_export_of_an_archive_only_thread(store: Store) -> None:
    """A thread with archived segments but no saved state still exports, by event."""
    state = compacted_trip()
    archive_new_segments(store, ConversationState(thread_id="trip"), state)
    text = store.export_markdown("trip")
    assert "No saved state:" in text
    assert text.count("### Message ") == len(store.get("trip"))
    with pytest.raises(ConfigError, match="'missing'"):
        store.export_markdown("missing")


# -- scale ----------------------------------------------------------------------------------------


def test_twenty_thousand_messages_persist_incrementally(store: Store) -> None:
    """A 20,000-message conversation saved in 10 steps reloads identically, quickly."""
    messages = chat(20_000)
    state = ConversationState(messages[:2_000], thread_id="long")
    started = time.perf_counter()
    version = store.save(state, expected_version=None)
    for step in range(1, 10):
        state = state.extend(messages[step * 2_000 : (step + 1) * 2_000])
        version = store.save(state, expected_version=version)
    saved = time.perf_counter() - started
    started = time.perf_counter()
    loaded, loaded_version = store.load("long")
    load_time = time.perf_counter() - started
    started = time.perf_counter()
    store.save(state.append({"role": "user", "content": "one more"}), expected_version=version)
    one_more = time.perf_counter() - started
    print(  # noqa: T201 - the timing is reported with pytest -s
        f"\n20,000 messages: 10 saves of 2,000 in {saved:.3f} s, load {load_time:.3f} s, "
        f"then saving one more message {one_more * 1000:.2f} ms"
    )
    assert loaded_version == version == 10
    assert list(loaded.log) == messages
    assert loaded.to_dict() == state.to_dict()
    assert load_time < 5.0
    assert one_more < 1.0


def test_compaction_event_json_is_stored_whole(store: Store) -> None:
    """The archived event keeps every field, merge report and usage included."""
    state = compacted_trip()
    archive_new_segments(store, ConversationState(thread_id="trip"), state)
    (event,) = store.events("trip")
    assert isinstance(event, CompactionEvent)
    assert event.model_dump() == state.events[-1].model_dump()


def test_search_matches_text_literally(store: Store) -> None:
    """Search is a case-insensitive substring match: ``%`` and ``_`` match only themselves."""
    event = compacted_trip().events[-1]
    messages = [
        {"role": "user", "content": "A 50% deposit, booking_ref A-1234."},
        {"role": "assistant", "content": "500 euros now; the booking ref comes later."},
        {"role": "user", "content": "Back\\slash and 5_0."},
    ]
    memory = MemoryArchive()
    for archive in (store, memory):
        archive.put("t", 1, messages, event)
    found = {
        text: [e.index for e in store.search("t", text)]
        for text in ("50%", "booking_ref", "a-1234", "BOOKING", "5_0", "\\\\", "%", "_")
    }
    assert found == {
        "50%": [1],
        "booking_ref": [1],
        "a-1234": [1],
        "BOOKING": [1, 2],
        "5_0": [3],
        "\\\\": [3],  # the JSON text escapes the backslash: two characters
        "%": [1],
        "_": [1, 3],
    }
    assert found == {text: [e.index for e in memory.search("t", text)] for text in found}
    assert [e.index for e in store.search("t", "o", limit=2)] == [1, 2]
