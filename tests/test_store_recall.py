"""Recall's ranking in the SQL stores: exactly `MemoryArchive.rank`, from each database's index.

SQLite finds candidates through an FTS5 table, PostgreSQL through a GIN index of a ``tsvector``;
both count the terms in Python and score with `progsum.recall._rank`, so the scores must equal
the in-memory archive's to the last bit. Where the SQL stores serve another message than
`MemoryArchive` would (two writers at one index, a save replacing an archived copy), ranking
follows what their own ``get`` serves. Databases made before the recall index get it, filled,
when opened.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progsum import Compactor, ConfigError, ConversationState, Policy, SummaryUpdate
from progsum.errors import ArchiveError
from progsum.recall._index import Index, Ranges
from progsum.recall._rank import SELECTIVE
from progsum.recall._terms import MAX_TERM, document, query_terms
from progsum.state._events import CompactionEvent
from progsum.store._archive import MemoryArchive
from progsum.store._postgres import PostgresStore
from progsum.store._postgres_schema import MIGRATIONS, SCHEMA_VERSION
from progsum.store._sqlite import DIALECT, STORE_FORMAT, SQLiteStore
from progsum.testing import FIXED_TIME, QueuedSummarizer
from tests.conftest import fixed_clock
from tests.conversations import trip_planning
from tests.postgres import PostgresServer
from tests.store_backends import (
    BACKENDS,
    SQLITE_FORMAT_3,
    Backend,
    PostgresBackend,
    SQLiteBackend,
    Store,
)
from tests.store_backends import make_backend as _make_backend


def event(number: int, start: int, end: int) -> CompactionEvent:
    """The compaction event that folded log messages ``[start, end)``."""
    return CompactionEvent(
        number=number,
        outcome="compacted",
        at=FIXED_TIME,
        reason="a test fold",
        tokens_before=1000,
        tokens_after=100,
        method="estimated",
        folded=(start, end),
    )


LONG = "x" * (MAX_TERM + 6)

SEGMENTS: list[list[dict[str, Any]]] = [
    [
        {"role": "user", "content": "Meet me at Straße 12 before the deploy"},
        {"role": "assistant", "content": "STRASSE 12 it is; deploy deploy deploy at 4821"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_build", "arguments": '{"build_id": "A_77"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "build_id A_77 is green; \uff26\uff35\uff2c\uff2c log in the \ufb01le",
        },
    ],
    [
        {"role": "user", "content": [{"type": "text", "text": "ΣΊΣΥΦΟΣ rolled a stone in 東京"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching σίσυφος"},
                {"type": "tool_use", "id": "toolu_1", "name": "docs", "input": {"q": "abc_def"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "abc_def found, and abc alone, in the 2026 report",
                }
            ],
        },
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "the FULL file, please: full stop"},
    ],
    [
        {"role": "assistant", "content": "café or cafe\u0301, naïve or naive"},
        {"role": "user", "content": "deploy the İstanbul build 🚀 now, build_id 4821"},
        {"role": "assistant", "content": f"{LONG} and {LONG}y, deploy"},
    ],
]
"""Three folded segments (log 0-3, 4-8, 9-11): tool calls and results of both providers, case
and compatibility variants, underscores, digits, a repeated term, an empty message, a term
longer than `MAX_TERM`."""

QUERIES: list[tuple[str, ...]] = [
    *(
        query_terms(text)
        for text in [
            "Where was the Straße?",
            "STRASSE",
            "deploy",
            "build_id A_77",
            "\uff46\uff55\uff4c\uff4c \ufb01le",
            "σίσυφος",
            "abc",
            "abc_def",
            "東京 2026 report",
            "café naive",
            "İstanbul 🚀 4821",
            LONG,
            "zzzqx",
            "zzzqx deploy",
        ]
    ),
    ("Deploy",),  # not folded: no message holds it, though SQLite's tokenizer folds ASCII
    ("\uff46\uff55\uff4c\uff4c",),  # not folded either (fullwidth)
    ("abc def",),  # no term holds a space
    ("",),
    ("deploy", "deploy"),
    (),
]
"""Recall queries: `query_terms` of texts, and term tuples no query of recall's would hold."""

WITHIN: list[Ranges] = [
    ((0, 12),),
    ((0, 4), (9, 12)),
    ((4, 9),),
    ((1, 2), (3, 4), (10, 11)),
    ((20, 30),),
    (),
    ((-3, 2**40),),
]
"""Searched ranges: all, some segments, single messages, none archived, none, out of bounds."""

LIMITS = [0, 1, 2, 50]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The SQLite or PostgreSQL backend (an empty database)."""
    return _make_backend(request, tmp_path)


@pytest.fixture
def store(backend: Backend) -> Iterator[Store]:
    """An empty store of the backend."""
    with backend.open() as opened:
        yield opened


def archive_all(archive: Store | MemoryArchive, thread_id: str = "t") -> None:
    """Archive the three `SEGMENTS` under events 1, 2 and 3."""
    start = 0
    for number, segment in enumerate(SEGMENTS, start=1):
        archive.put(thread_id, start, segment, event(number, start, start + len(segment)))
        start += len(segment)


def rankings(
    archive: Store | MemoryArchive, thread_id: str = "t"
) -> dict[tuple[object, ...], list[tuple[int, float]]]:
    """Every query's ranking over every searched set, at every limit."""
    return {
        (query, within, limit): archive.rank(thread_id, query, within, limit=limit)
        for query, within, limit in itertools.product(QUERIES, WITHIN, LIMITS)
    }


def served(store: Store, thread_id: str) -> Index:
    """An in-memory index of exactly the messages the store's ``get`` serves for the thread."""
    index = Index()
    for entry in store.get(thread_id):
        index.add(entry.index, document(entry.message))
    return index


def follows_get(store: Store, thread_id: str, queries: Sequence[tuple[str, ...]]) -> None:
    """Assert that the store ranks the messages its ``get`` serves, as `Index` ranks them."""
    index = served(store, thread_id)
    for query in queries:
        for within in WITHIN:
            expected = index.search(query, within, limit=50)
            assert store.rank(thread_id, query, within, limit=50) == expected, (query, within)


def unindexed(backend: Backend, thread_id: str) -> int:
    """Archived messages of the thread whose recall terms are not stored (read directly)."""
    query = "SELECT count(*) FROM {}messages WHERE thread_id = {} AND archived_at IS NOT NULL "
    query += "AND length IS NULL"
    if isinstance(backend, SQLiteBackend):
        with contextlib.closing(sqlite3.connect(backend.path)) as db:
            return int(db.execute(query.format("", "?"), (thread_id,)).fetchone()[0])
    ((count,),) = backend.execute(query.format("progsum_", "%s"), (thread_id,))
    return int(count)


# -- the contract: the same ranking as MemoryArchive ----------------------------------------------


def test_rank_is_memory_archives_exactly(store: Store) -> None:
    """Every query, searched set and limit: the same indices, the same scores to the last bit."""
    memory = MemoryArchive()
    archive_all(memory)
    archive_all(store)
    expected = rankings(memory)
    assert rankings(store) == expected
    assert sum(1 for found in expected.values() if found) > 100  # not a contract of empty lists


def test_rank_finds_what_recall_asks_for(store: Store) -> None:
    """Folded variants find one another; a term finds no longer term; the limit cuts the best."""
    archive_all(store)
    everything = ((0, 12),)

    def found(text: str, within: Ranges = everything, limit: int = 50) -> list[int]:
        return sorted(i for i, _ in store.rank("t", query_terms(text), within, limit=limit))

    assert found("Straße") == found("STRASSE") == [0, 1]
    assert found("\uff26\uff35\uff2c\uff2c") == found("full") == [3, 8]
    assert found("\ufb01le") == [3, 8]
    assert found("ΣΊΣΥΦΟΣ") == [4, 5]
    assert found("abc") == [6]
    assert found("abc_def") == [5, 6]
    assert found("build_id") == [2, 3, 10]
    assert found(LONG) == [11]  # both runs are cut to the same 64 characters
    assert found("deploy") == [0, 1, 10, 11]
    assert found("deploy", ((4, 11),)) == [10]
    assert found("deploy", ((2, 10),)) == []
    assert [i for i, _ in store.rank("t", ("deploy",), everything, limit=2)] == [1, 11]
    assert store.rank("t", query_terms("zzzqx"), everything, limit=50) == []


def test_idempotent_put_changes_no_ranking(store: Store) -> None:
    """Writing the segments again (whole or in part) adds no document and changes no score."""
    archive_all(store)
    before = rankings(store)
    archive_all(store)
    store.put("t", 4, SEGMENTS[1][:2], event(2, 4, 9))
    assert rankings(store) == before


def test_threads_rank_apart(store: Store) -> None:
    """Another thread's messages are neither candidates nor part of the statistics."""
    memory = MemoryArchive()
    archive_all(memory)
    archive_all(store)
    store.put("other", 0, SEGMENTS[0] * 3, event(1, 0, 12))
    assert rankings(store) == rankings(memory)
    assert store.rank("nobody", ("deploy",), ((0, 12),), limit=5) == []


def test_a_term_too_common_to_pick_is_ruled_out_alike(store: Store) -> None:
    """Past `SELECTIVE` messages a term picks nothing, in every store as in `MemoryArchive`."""
    many = SELECTIVE + 30
    segment = [
        {"role": "user", "content": f"The deploy of build {n} went fine."} for n in range(many)
    ]
    segment[40] = {"role": "user", "content": "The deploy to Lisbon failed at the firewall."}
    memory = MemoryArchive()
    for archive in (memory, store):
        archive.put("t", 0, segment, event(1, 0, many))
    everything, early = ((0, many),), ((0, 60),)
    for words, within in itertools.product(
        ("deploy", "deploy lisbon", "firewall"), (everything, early)
    ):
        query = query_terms(words)
        assert store.rank("t", query, within, limit=5) == memory.rank("t", query, within, limit=5)
    assert memory.rank("t", ("deploy",), everything, limit=5) == []
    assert [i for i, _ in memory.rank("t", ("deploy", "lisbon"), everything, limit=5)] == [40]
    assert memory.rank("t", ("deploy",), early, limit=5)  # among 60 messages it picks


def test_a_message_too_long_for_a_tsvector_is_ranked(store: Store, backend: Backend) -> None:
    """Terms beyond PostgreSQL's 1 MB of lexemes: found from the stored terms all the same."""
    huge = " ".join(f"w{n:07d}" for n in range(140_000))  # 1.1 MB of distinct terms
    messages = [
        {"role": "tool", "tool_call_id": "c", "content": f"{huge} deploy"},
        {"role": "user", "content": "deploy w0139999 again"},
    ]
    memory = MemoryArchive()
    for archive in (memory, store):
        archive_all(archive)
        archive.put("t", 12, messages, event(4, 12, 14))
    for query in [("w0139999",), ("deploy",), ("w0000001", "again"), ("zzzqx",)]:
        for within in [((0, 14),), ((12, 13),), ((0, 12),)]:
            expected = memory.rank("t", query, within, limit=5)
            assert store.rank("t", query, within, limit=5) == expected, (query, within)
    assert sorted(i for i, _ in store.rank("t", ("w0139999",), ((0, 14),), limit=5)) == [12, 13]
    if isinstance(backend, PostgresBackend):  # the long one has terms but no lexemes
        rows = "SELECT idx FROM progsum_messages WHERE length IS NOT NULL AND lexemes IS NULL"
        assert backend.execute(rows) == [(12,)]


VOCABULARY = [
    "straße",
    "STRASSE",
    "\uff26\uff35\uff2c\uff2c",
    "full",
    "build_id",
    "A_77",
    "4821",
    "東京",
    "deploy",
    "\ufb01le",
    "file",
    "Σίσυφος",
    "abc",
    "abc_def",
    "_",
]
_threads = itertools.count()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    segments=st.lists(
        st.lists(st.lists(st.sampled_from(VOCABULARY), max_size=6), min_size=1, max_size=4),
        min_size=1,
        max_size=3,
    ),
    words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4),
    cuts=st.lists(st.integers(0, 14), max_size=4),
    limit=st.integers(0, 6),
)
def test_rank_agrees_on_generated_archives(
    store: Store,
    segments: list[list[list[str]]],
    words: list[str],
    cuts: list[int],
    limit: int,
) -> None:
    """Generated segments, queries and ranges: the store ranks as MemoryArchive does."""
    thread_id = f"generated-{next(_threads)}"
    memory, start = MemoryArchive(), 0
    for number, texts in enumerate(segments, start=1):
        messages = [{"role": "user", "content": "; ".join(text)} for text in texts]
        for archive in (memory, store):
            archive.put(thread_id, start, messages, event(number, start, start + len(texts)))
        start += len(texts)
    points = sorted(set(cuts))
    within = tuple(zip(points[::2], points[1::2], strict=False)) or ((0, start),)
    query = query_terms(" ".join(words))
    expected = memory.rank(thread_id, query, within, limit=limit)
    assert store.rank(thread_id, query, within, limit=limit) == expected


# -- what the SQL stores serve ---------------------------------------------------------------------


def test_rank_follows_the_message_get_serves_when_writers_disagree(store: Store) -> None:
    """A second writer's message at an archived index (or a save's) ranks, as get serves it."""
    archive_all(store)
    queries = [("deploy",), ("straße", "strasse"), ("other", "text"), ("abc",), ("stone",)]
    rewritten = {"role": "user", "content": "other text, no deploy here"}
    store.put("t", 1, [rewritten], event(4, 1, 2))  # no saved log: the newer copy is served
    assert store.get("t", 1, 2)[0].message == rewritten
    follows_get(store, "t", queries)
    saved = [{"role": "user", "content": f"saved {n} stone"} for n in range(6)]
    store.save(ConversationState(saved, thread_id="t"), expected_version=None)
    assert store.get("t") == []  # the saved state folded nothing: its save drops the marks
    follows_get(store, "t", queries)
    store.put("t", 0, SEGMENTS[0], event(1, 0, 4))  # a stale writer: the saved messages stay
    assert [e.message for e in store.get("t")] == saved[:4]
    follows_get(store, "t", queries)


def test_a_segment_a_save_marked_folded_is_ranked_then_indexed(
    store: Store, backend: Backend
) -> None:
    """A save that archives a fold by itself: ranked from the text, then indexed by the next put."""
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 2)),
        summarizer=QueuedSummarizer(SummaryUpdate(add={"established_facts": ["Lisbon."]})),
        clock=fixed_clock,
    )
    state = compactor.compact(ConversationState(trip_planning(8), thread_id="trip"), force=True)
    store.save(state, expected_version=None)
    folded = store.get("trip")
    assert folded
    assert unindexed(backend, "trip") == len(folded)
    queries = [query_terms(text) for text in ["Lisbon in May", "vegetarian budget", "trip"]]
    follows_get(store, "trip", queries)
    last = len(state)
    store.put("trip", last, [{"role": "user", "content": "Lisbon again"}], event(9, last, last + 1))
    assert unindexed(backend, "trip") == 0
    follows_get(store, "trip", queries)


# -- databases made before the recall index ------------------------------------------------------


def archived_rows() -> list[tuple[str, int, str, int]]:
    """``(thread, idx, message JSON, event)`` of `SEGMENTS`, in two threads, as a store writes."""
    rows = []
    for thread_id in ("t", "u"):
        start = 0
        for number, segment in enumerate(SEGMENTS, start=1):
            for offset, message in enumerate(segment):
                text = json.dumps(message, ensure_ascii=False)
                rows.append((thread_id, start + offset, text, number))
            start += len(segment)
    return rows


def test_a_file_without_the_recall_index_gets_it_filled(tmp_path: Path) -> None:
    """A format-3 file from before recall: opening it adds the index, with every message in it."""
    path = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(SQLITE_FORMAT_3)
        db.executemany(
            "INSERT INTO messages VALUES (?, ?, ?, '2026-01-01T00:00:00+00:00', ?)",
            archived_rows(),
        )
        db.commit()
    memory = MemoryArchive()
    archive_all(memory)
    with SQLiteStore(path) as store:
        assert rankings(store, "u") == rankings(memory)
    backend = SQLiteBackend(path)
    assert unindexed(backend, "t") == unindexed(backend, "u") == 0
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (STORE_FORMAT,)
        db.execute("DROP TABLE recall")  # a part lost: built anew on the next open
        db.commit()
    with SQLiteStore(path) as store:
        assert rankings(store) == rankings(memory)
        archive_all(store)
        assert rankings(store) == rankings(memory)


@pytest.fixture
def fresh_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A database that was never migrated, dropped after the test."""
    url = postgres_server.database()
    yield url
    postgres_server.drop(url)


def test_a_schema_3_database_is_migrated_with_its_archive_indexed(fresh_url: str) -> None:
    """Migration 4 adds the terms and their GIN index, and indexes every archived message."""
    backend = PostgresBackend(fresh_url)
    backend.execute(
        "CREATE TABLE progsum_migrations (version integer PRIMARY KEY, name text NOT NULL, "
        "applied_at timestamptz NOT NULL DEFAULT now())"
    )
    for version, (name, sql) in enumerate(MIGRATIONS[:3], start=1):
        backend.execute(sql)
        backend.execute("INSERT INTO progsum_migrations VALUES (%s, %s)", (version, name))
    for thread_id, idx, text, number in archived_rows():
        backend.execute(
            "INSERT INTO progsum_messages VALUES (%s, %s, %s, now(), %s)",
            (thread_id, idx, text, number),
        )
    memory = MemoryArchive()
    archive_all(memory)
    with PostgresStore(fresh_url) as store:
        assert rankings(store, "u") == rankings(memory)
    assert backend.execute("SELECT max(version) FROM progsum_migrations") == [(SCHEMA_VERSION,)]
    assert unindexed(backend, "t") == unindexed(backend, "u") == 0


# -- errors --------------------------------------------------------------------------------------


@contextlib.contextmanager
def broken_index(backend: Backend) -> Iterator[None]:
    """The database's full-text index gone (then back, for PostgreSQL's shared database)."""
    if isinstance(backend, SQLiteBackend):
        with contextlib.closing(sqlite3.connect(backend.path)) as db:
            db.execute("DROP TABLE recall")
            db.commit()
        yield
        return
    backend.execute("ALTER TABLE progsum_messages RENAME COLUMN lexemes TO hidden")
    try:
        yield
    finally:
        backend.execute("ALTER TABLE progsum_messages RENAME COLUMN hidden TO lexemes")


def test_a_failing_database_is_an_archive_error(store: Store, backend: Backend) -> None:
    """A read of the index that fails raises ArchiveError naming the thread and the store."""
    archive_all(store)
    with broken_index(backend), pytest.raises(ArchiveError) as caught:
        store.rank("t", ("deploy",), ((0, 12),), limit=5)
    message = str(caught.value)
    assert message.startswith(f"could not rank the archive of thread 't' in {store.where}: ")
    assert "nothing was changed" in message


@pytest.mark.parametrize(
    "bad", ["", "a\x00b", "t" * 501, 4821], ids=["empty", "NUL", "long", "int"]
)
def test_bad_thread_ids_are_refused_alike(store: Store, bad: Any) -> None:
    """A thread id no store can hold: the same ConfigError as MemoryArchive's."""
    with pytest.raises(ConfigError) as stored:
        store.rank(bad, ("deploy",), ((0, 12),), limit=5)
    with pytest.raises(ConfigError) as memory:
        MemoryArchive().rank(bad, ("deploy",), ((0, 12),), limit=5)
    assert str(stored.value) == str(memory.value)


def test_sqlite_query_plans(tmp_path: Path) -> None:
    """The candidates come from the FTS table, then its rows by doc; no scan of the history."""
    path = tmp_path / "plan.db"
    with SQLiteStore(path) as store:
        archive_all(store)
    with contextlib.closing(sqlite3.connect(path)) as db:
        plans = {
            name: " | ".join(
                row[3]
                for row in db.execute(
                    "EXPLAIN QUERY PLAN " + DIALECT.within(getattr(SQLiteStore.sql, name), 2),
                    params,
                )
            )
            for name, params in [
                ("ranked", ('"deploy"', "t", 0, 4, 9, 12)),
                ("unranked", ("t", 0, 4, 9, 12)),
                ("ranked_stats", ("t", 0, 4, 9, 12)),
            ]
        }
    assert plans["ranked"].startswith("SCAN recall VIRTUAL TABLE")
    assert "messages_by_doc" in plans["ranked"]
    assert "SCAN messages" not in " ".join(plans.values())
    assert "COVERING INDEX messages_recalled" in plans["ranked_stats"]


def test_the_engine_recalls_from_the_store_what_it_recalls_from_the_log(store: Store) -> None:
    """With a store as the archive, the request quotes the same excerpts the log would give."""
    asked = {"role": "user", "content": "Which hotel did we book in Tokyo, and its confirmation?"}

    def replay(engine: Compactor[Any], thread: str | None) -> ConversationState[Any]:
        state: ConversationState[Any] = ConversationState(thread_id=thread)
        for message in trip_planning(40):
            state = engine.maybe_compact(state.append(message))
        return engine.maybe_compact(state.append(asked))

    policy = Policy(context_window=2_000)
    with mock.patch.object(store, "rank", wraps=store.rank) as ranked:
        stored = replay(Compactor(policy=policy, archive=store, clock=fixed_clock), "trip")
    alone = replay(Compactor(policy=policy, clock=fixed_clock), None)
    assert ranked.called, "the store was asked"
    assert stored.recall is not None
    assert stored.recall.excerpts
    assert alone.recall is not None
    assert stored.recall.excerpts == alone.recall.excerpts
    assert stored.recall_block == alone.recall_block
