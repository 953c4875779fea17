"""Flat costs in grown sessions (issue 15): caches checked against rules computed from scratch."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import TextBlock
from hypothesis import given
from hypothesis import strategies as st

from progsum import (
    Compactor,
    ConversationState,
    Policy,
    Summary,
    SummaryRequest,
    SummaryUpdate,
)
from progsum.engine._measure import quiet as is_quiet
from progsum.engine._plan import CutMemo
from progsum.engine._plan import plan as plan_turn
from progsum.errors import ConfigError, MessageFormatError
from progsum.judge import _provenance as provenance
from progsum.judge import _segment as segment
from progsum.judge import _values as values
from progsum.judge._lexicon import words
from progsum.messages import _formats as messages
from progsum.messages import _transcript as transcript
from progsum.policy._tokens import HeuristicCounter, usage_tokens
from progsum.policy._usage import AgentUsage
from progsum.recall._excerpt import block_text
from progsum.render._view import visible
from progsum.state import _log as state_module
from progsum.state._cleared import Cleared
from progsum.store._sqlite import STORE_FORMAT, SQLiteStore
from progsum.store._updating import REMEMBERED, Stored
from progsum.summary._header import render_header
from progsum.summary._schema import spec_of
from progsum.testing import FunctionSummarizer
from tests.conftest import fixed_clock

COUNTER = HeuristicCounter()
EXAMPLE = Path(__file__).parents[1] / "examples" / "conversations" / "trip-planning.json"


def tool_message(n: int) -> dict[str, Any]:
    """Message ``n`` of a tool-heavy Anthropic session: request, call, large result, answer."""
    step, call = n % 4, f"toolu_{n // 4:05d}"
    if step == 0:
        return {"role": "user", "content": f"Request {n}: look up the next batch of rows."}
    if step == 1:
        return {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call, "name": "rows", "input": {"n": n}}],
        }
    if step == 2:
        body = f"row {n}: the hotel confirmed breakfast for two guests.\n" * 60
        return {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call, "content": body}],
        }
    return {"role": "assistant", "content": f"Batch {n} read; nothing unusual."}


def one_fact(request: SummaryRequest[Any]) -> SummaryUpdate:
    """An instant summarizer: one fact per segment."""
    return SummaryUpdate(add={"established_facts": [f"Segment {request.segment.start} done."]})


def grown_states(length: int) -> list[ConversationState[Any]]:
    """Every state of a tool-heavy session run turn by turn through ``maybe_compact``."""
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=12_000, keep=("messages", 20)),
        summarizer=FunctionSummarizer(one_fact),
    )
    state: ConversationState[Any] = ConversationState(thread_id="grown")
    states = []
    for n in range(length):
        state = compactor.maybe_compact(state.append(tool_message(n)))
        states.append(state)
    return states


def in_view_rule(state: ConversationState[Any]) -> list[Cleared]:
    """The documented rule, from scratch: the cleared blocks of messages in `effective`."""
    kept = set(state.kept)
    return [c for c in state.cleared if c.at in kept]


def estimate_rule(state: ConversationState[Any]) -> int:
    """The estimate from scratch: messages in view, less what clearing saved, header, recalls.

    Each recall block counts when the message it is quoted in is in view.
    """
    kept = sum(COUNTER.count_message(state.log[i]) for i in state.kept)
    saved = sum(c.saved for c in in_view_rule(state))
    header = COUNTER.count_text(state.header) + 4 if state.header else 0
    log, authors = state.log, state.authors
    blocks = [block_text(r, log, authors=authors) for r in state.recalls if r.at in state.kept]
    recall = sum(COUNTER.count_text(block) + 4 for block in blocks if block)
    return kept - saved + header + recall


def test_cleared_in_view_follows_every_compaction_of_a_grown_session() -> None:
    """After each turn, the cached blocks in view and the estimate equal the rule from scratch."""
    states = grown_states(400)
    last = states[-1]
    assert sum(e.outcome == "compacted" for e in last.events) >= 5
    assert any(0 < len(s.cleared_in_view) < len(s.cleared) for s in states)  # some folded away
    for state in states:
        assert list(state.cleared_in_view) == in_view_rule(state)
        assert state.estimate(COUNTER) == estimate_rule(state)


def test_cleared_in_view_survives_json_and_forks() -> None:
    """A state read back from JSON, and a fork of an older state, see the same blocks in view."""
    states = grown_states(200)
    last = states[-1]
    loaded = ConversationState.from_json(last.to_json())
    assert loaded.cleared_in_view == last.cleared_in_view
    fork = states[120].append(tool_message(120 + 1))
    assert list(fork.cleared_in_view) == in_view_rule(fork)


def test_the_view_shows_placeholders_only_for_blocks_in_view() -> None:
    """Every placeholder of a block in view shows in `visible`, none of the folded ones."""
    last = grown_states(240)[-1]
    text = json.dumps(visible(last))
    assert all(json.dumps(c.placeholder)[1:-1] in text for c in in_view_rule(last))
    folded = [c for c in last.cleared if c.at < last.cutoff and c.at >= last.head_end]
    assert folded
    assert all(f"row {c.at}:" not in text for c in folded)


def test_offline_compact_imports_neither_the_sdk_nor_instructor() -> None:
    """`progsum compact` without a key never imports anthropic or instructor (a second at start)."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    code = (
        "import sys\nfrom progsum.cli.main import main\n"
        f"status = main(['compact', {str(EXAMPLE)!r}, '--budget', '2000', '--json'])\n"
        "print(status, sorted(m for m in ('anthropic', 'instructor') if m in sys.modules), "
        "file=sys.stderr)\n"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stderr.strip().splitlines()[-1] == "0 []"


def state_rows(path: Path) -> tuple[str, int]:
    """The saved state's JSON text and its event count, read directly from the SQLite file."""
    with sqlite3.connect(path) as db:
        text, events = db.execute("SELECT state, events FROM states").fetchone()
    return str(text), int(events)


def test_a_save_does_not_rewrite_the_events(tmp_path: Path) -> None:
    """The state row leaves the events to their own table: no event's reason is in it."""
    state = grown_states(400)[-1]
    assert len(state.events) > 50
    path = tmp_path / "grown.db"
    with SQLiteStore(path) as store:
        store.save(state, expected_version=None)
        assert store.load("grown").state.to_dict() == state.to_dict()
    text, count = state_rows(path)
    assert "events" not in json.loads(text)
    assert count == len(state.events)
    assert not any(e.reason in text for e in state.events)


def test_a_state_saved_with_its_events_in_the_row_still_loads(tmp_path: Path) -> None:
    """Files written before keep the events in the state's JSON too; they load and save on."""
    state = grown_states(200)[-1]
    path = tmp_path / "old.db"
    with SQLiteStore(path) as store:
        store.save(state, expected_version=None)
    old_row = json.dumps(state.to_dict(log=False), ensure_ascii=False)  # the former layout
    with sqlite3.connect(path) as db:
        db.execute("UPDATE states SET state = ?", (old_row,))
    with SQLiteStore(path) as store:
        loaded = store.load("grown")
        assert loaded.state.to_dict() == state.to_dict()
        more = loaded.state.append(tool_message(len(state)))
        assert store.save(more, expected_version=loaded.version) == loaded.version + 1
        assert store.load("grown").state.to_dict() == more.to_dict()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE states SET state = ?", (old_row,))
        db.execute("DELETE FROM events")
    with SQLiteStore(path) as store:  # the old row alone carries its events
        assert store.load("grown").state.events == state.events


FORMAT_1 = """
CREATE TABLE messages (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, message TEXT NOT NULL,
    archived_at TEXT, event INTEGER, PRIMARY KEY (thread_id, idx)) WITHOUT ROWID;
CREATE INDEX messages_by_event ON messages (thread_id, event) WHERE event IS NOT NULL;
CREATE TABLE events (thread_id TEXT NOT NULL, number INTEGER NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (thread_id, number)) WITHOUT ROWID;
CREATE TABLE states (thread_id TEXT PRIMARY KEY, version INTEGER NOT NULL,
    length INTEGER NOT NULL, events INTEGER NOT NULL, state TEXT NOT NULL,
    saved_at TEXT NOT NULL);
PRAGMA user_version = 1;
"""
"""The SQLite store's format-1 layout, as progsum wrote it before the cleared table."""


def format_1_file(path: Path, state: ConversationState[Any]) -> None:
    """Write ``state`` as a format-1 store did: messages and events as rows, the rest in JSON."""
    with sqlite3.connect(path) as db:
        db.executescript(FORMAT_1)
        rows = [
            (i, json.dumps(m, ensure_ascii=False)) for i, m in enumerate(state.to_dict()["log"])
        ]
        db.executemany("INSERT INTO messages VALUES ('grown', ?, ?, NULL, NULL)", rows)
        events = [(e.number, e.model_dump_json()) for e in state.events]
        db.executemany("INSERT INTO events VALUES ('grown', ?, ?)", events)
        record = json.dumps(state.to_dict(log=False))
        db.execute(
            "INSERT INTO states VALUES ('grown', 7, ?, ?, ?, '2026-01-01T00:00:00+00:00')",
            (len(state), len(state.events), record),
        )


def test_a_format_1_file_is_upgraded_and_reads_the_same(tmp_path: Path) -> None:
    """Opening a format-1 file adds the cleared table; its state loads, then saves on in rows."""
    state = grown_states(200)[-1]
    assert state.cleared
    path = tmp_path / "old.db"
    format_1_file(path, state)
    with SQLiteStore(path) as store:
        loaded = store.load("grown")
        assert loaded.version == 7
        assert loaded.state.to_dict() == state.to_dict()
        more = compact_more(loaded.state, 40)
        assert len(more.cleared) > len(state.cleared)
        assert store.save(more, expected_version=7) == 8
        assert store.load("grown").state.to_dict() == more.to_dict()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (STORE_FORMAT,)
        (count,) = db.execute("SELECT count(*) FROM cleared").fetchone()
        (text,) = db.execute("SELECT state FROM states").fetchone()
    assert count == len(more.cleared)
    assert "cleared" not in json.loads(text)


def compact_more(state: ConversationState[Any], turns: int) -> ConversationState[Any]:
    """``turns`` more turns of the tool-heavy session through the same kind of compactor."""
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=12_000, keep=("messages", 20)),
        summarizer=FunctionSummarizer(one_fact),
    )
    for n in range(len(state), len(state) + turns):
        state = compactor.maybe_compact(state.append(tool_message(n)))
    return state


def test_a_save_writes_only_the_new_cleared_marks(tmp_path: Path) -> None:
    """Each save inserts the marks cleared since the last one, never the older ones again."""
    states = grown_states(300)
    path = tmp_path / "marks.db"
    written: list[str] = []
    with SQLiteStore(path) as store:
        version = store.save(states[99], expected_version=None)
        store._connection().set_trace_callback(written.append)
        before = len(states[99].cleared)
        version = store.save(states[-1], expected_version=version)
        store._connection().set_trace_callback(None)
        assert store.load("grown").state.to_dict() == states[-1].to_dict()
    inserts = [s for s in written if s.startswith("INSERT OR REPLACE INTO cleared")]
    assert len(inserts) == len(states[-1].cleared) - before > 0


def field_numbers(summary: Any, name: str, prefix: str) -> list[int]:
    """The numbers after ``prefix`` of every id the field ever used (live items and tombstones)."""
    ids = [item.id for item in getattr(summary, name)]
    ids += [t.item.id for t in summary.retired if t.field == name]
    return [
        int(i[len(prefix) :]) for i in ids if i.startswith(prefix) and i[len(prefix) :].isdigit()
    ]


def test_new_ids_follow_the_highest_ever_used_across_a_grown_session() -> None:
    """Every merge numbers new items from one past the highest id the field ever had."""
    states = grown_states(400)
    spec = spec_of(Summary)
    pairs = [(a, b) for a, b in itertools.pairwise(states) if b.summary is not a.summary]
    assert len(pairs) > 10
    assert states[-1].summary is not None
    assert states[-1].summary.retired
    for before, after in pairs:
        assert after.summary is not None
        for f in spec.lists:
            old = field_numbers(before.summary, f.name, f.id_prefix) if before.summary else []
            new = sorted(set(field_numbers(after.summary, f.name, f.id_prefix)) - set(old))
            start = max(old, default=0) + 1
            assert new == list(range(start, start + len(new)))


def test_every_header_is_the_render_of_its_summary() -> None:
    """A state's header, however often its summary was rendered before, is `render_header`'s."""
    for state in grown_states(300):
        if state.summary is None:
            assert state.header == ""
            continue
        compactions = sum(e.outcome == "compacted" for e in state.events)
        expected = render_header(
            state.summary,
            folded=(state.head_end, state.cutoff),
            compactions=compactions,
            thread_id=state.thread_id if state.folded_in_archive else None,
        )
        assert state.header == expected


def round_message(n: int) -> dict[str, Any]:
    """Message ``n`` of an OpenAI session of long parallel tool rounds (one result per turn)."""
    block, step = divmod(n, 40)
    if step == 0:
        return {"role": "user", "content": f"Batch {block}: check these."}
    if step == 1:
        calls = [
            {
                "id": f"c{block}_{i}",
                "type": "function",
                "function": {"name": "get", "arguments": "{}"},
            }
            for i in range(37)
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls}
    if step < 39:
        return {"role": "tool", "tool_call_id": f"c{block}_{step - 2}", "content": f"ok {n}"}
    return {"role": "assistant", "content": f"Batch {block} checked."}


def test_a_compactor_reused_across_turns_plans_as_a_fresh_one() -> None:
    """Stalls inside long tool rounds, then cuts: a reused compactor's states equal fresh ones'."""
    policy = Policy(context_window=200_000, trigger=("messages", 20), keep=("messages", 4))

    def compactor() -> Compactor[Any]:
        return Compactor(policy=policy, summarizer=FunctionSummarizer(one_fact), clock=fixed_clock)

    reused = compactor()
    ours: ConversationState[Any] = ConversationState()
    theirs: ConversationState[Any] = ConversationState()
    for n in range(240):
        ours = reused.maybe_compact(ours.append(round_message(n)))
        theirs = compactor().maybe_compact(theirs.append(round_message(n)))
        assert ours.to_dict() == theirs.to_dict()
    stalls = [e for e in ours.events if e.stall == "nothing_to_fold"]
    assert stalls
    assert sum(e.outcome == "compacted" for e in ours.events) >= 3


def traced(store: SQLiteStore) -> list[str]:
    """Every SQL statement the store's connection runs from now on (the SQLite boundary)."""
    statements: list[str] = []
    store._connection().set_trace_callback(statements.append)
    return statements


def started_from_memory(
    statements: list[str], started: ConversationState[Any], reloaded: ConversationState[Any]
) -> None:
    """The second update of the grown thread read one message row and started from its save."""
    reads = [s for s in statements if s.startswith("SELECT") and "FROM messages" in s]
    assert reads == ["SELECT message FROM messages WHERE thread_id = 'grown' AND idx = 300"]
    assert started.to_dict() == reloaded.to_dict()


def test_update_starts_from_its_own_last_save_without_reloading(tmp_path: Path) -> None:
    """A second update of a thread reads one row, not the log; it saves what a reload would."""
    state = grown_states(300)[-1]
    with SQLiteStore(tmp_path / "u.db") as store, SQLiteStore(tmp_path / "u.db") as other:
        store.save(state, expected_version=None)
        seen: list[ConversationState[Any]] = []

        def change(current: ConversationState[Any]) -> ConversationState[Any]:
            seen.append(current)
            return current.append(tool_message(len(current)))

        store.update("grown", change)
        reloaded = other.load("grown").state
        statements = traced(store)
        second = store.update("grown", change)
        started_from_memory(statements, seen[1], reloaded)
        assert other.load("grown").state.to_dict() == second.state.to_dict()


def test_aupdate_starts_from_the_last_save_its_worker_made_without_reloading(
    tmp_path: Path,
) -> None:
    """An aupdate whose store work runs where the last one's ran reads one row, not the log."""
    state = grown_states(300)[-1]
    seen: list[ConversationState[Any]] = []

    async def change(current: ConversationState[Any]) -> ConversationState[Any]:
        seen.append(current)
        return current.append(tool_message(len(current)))

    async def run(store: SQLiteStore, other: SQLiteStore) -> tuple[list[str], Any, Stored[Any]]:
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=1) as worker:  # every store call on one thread
            loop.set_default_executor(worker)
            await store.aupdate("grown", change)
            reloaded = other.load("grown").state
            statements = await loop.run_in_executor(None, traced, store)
            return statements, reloaded, await store.aupdate("grown", change)

    with SQLiteStore(tmp_path / "u.db") as store, SQLiteStore(tmp_path / "u.db") as other:
        store.save(state, expected_version=None)
        statements, reloaded, second = asyncio.run(run(store, other))
        started_from_memory(statements, seen[1], reloaded)
        assert other.load("grown").state.to_dict() == second.state.to_dict()


def test_a_thread_remembers_the_last_saves_of_a_bounded_number_of_conversations(
    tmp_path: Path,
) -> None:
    """Past `REMEMBERED` conversations, the one updated longest ago is loaded again."""
    names = [f"c{n}" for n in range(REMEMBERED + 1)]
    with SQLiteStore(tmp_path / "m.db") as store:
        for name in names:
            state = ConversationState([tool_message(n) for n in range(4)], thread_id=name)
            store.save(state, expected_version=None)
            store.update(name, lambda s: s.append(tool_message(len(s))))
        statements = traced(store)
        for name in (names[-1], names[0]):
            store.update(name, lambda s: s.append(tool_message(len(s))))
    whole = [s for s in statements if "FROM messages" in s and "ORDER BY idx" in s]
    assert [s.split("'")[1] for s in whole] == [names[0]]  # the newest is read from memory


def test_update_reloads_after_another_writer_or_an_sdk_object(tmp_path: Path) -> None:
    """Another writer's save, or a message that is no plain JSON, sends the next update to load."""
    state = ConversationState([tool_message(n) for n in range(8)], thread_id="t")
    with SQLiteStore(tmp_path / "w.db") as store, SQLiteStore(tmp_path / "w.db") as other:
        store.save(state, expected_version=None)
        store.update("t", lambda s: s.append(tool_message(len(s))))
        theirs = other.load("t")
        other.save(theirs.state.append(tool_message(9)), expected_version=theirs.version)
        got: list[ConversationState[Any]] = []

        def seen(current: ConversationState[Any], more: bool = True) -> ConversationState[Any]:
            got.append(current)
            return current.append(tool_message(len(current))) if more else current

        store.update("t", seen)
        assert len(got[0]) == 10
        sdk = TextBlock(type="text", text="An SDK block.")
        store.update("t", lambda s: s.append({"role": "user", "content": [sdk]}))
        store.update("t", lambda s: seen(s, more=False))
        assert got[-1].log[-1] == {
            "role": "user",
            "content": [{"type": "text", "text": "An SDK block."}],  # as loaded: its JSON
        }


DENSE_CHARS = frozenset('{}[]()<>=:;"/\\|_$#@*&%+`~^0123456789')
"""The symbols and digits the estimator counts as data (its documented character class)."""


def estimate_from_scratch(text: str, counter: HeuristicCounter) -> int:
    """`HeuristicCounter.count_text` computed character by character, as documented."""
    if not text:
        return 0
    ascii_length = sum(1 for ch in text if ord(ch) < 128)
    extra = len(text.encode("utf-8", "surrogatepass")) - len(text)
    tokens = extra * counter.non_ascii_tokens_per_extra_byte
    if ascii_length:
        dense = sum(1 for ch in text if ch in DENSE_CHARS)
        density = min(1.0, dense / ascii_length / 0.25)
        rate = counter.prose_chars_per_token + density * (
            counter.data_chars_per_token - counter.prose_chars_per_token
        )
        tokens += ascii_length / rate
    return math.ceil(tokens * counter.scale)


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=300))
def test_the_text_estimate_counts_dense_characters_as_documented(text: str) -> None:
    """The byte-table count of symbols and digits equals counting them one by one."""
    assert COUNTER.count_text(text) == estimate_from_scratch(text, COUNTER)


PLAIN = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool", "system", "developer"]),
        "content": st.text(max_size=200),
    },
    optional={
        "name": st.text(max_size=5),
        "timestamp": st.just("2026-12-01"),
        "tool_call_id": st.sampled_from(["call_1", "call_2", 7]),
    },
)
BEFORE = st.sampled_from(
    [
        [{"role": "user", "content": "Go."}],
        [
            {"role": "user", "content": "Go."},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Hm.", "signature": "s"},
                    {"type": "text", "text": "Ok."},
                ],
            },
        ],
        [
            {"role": "user", "content": "Go."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{k}", "type": "function", "function": {"name": "f"}}
                    for k in (1, 2)
                ],
            },
        ],
    ]
)


def _read(message: dict[str, Any], index: int, previous: Any, how: Any) -> Any:
    """What ``how`` makes of the message: its info, or the error it raises."""
    try:
        return how(message, index, previous)
    except MessageFormatError as exc:
        return str(exc)


@given(PLAIN, BEFORE)
def test_a_plain_message_reads_as_the_general_path_reads_it(
    message: dict[str, Any], before: list[dict[str, Any]]
) -> None:
    """The fast paths for dicts with string content give the general path's info, error, count."""
    previous = None
    for n, earlier in enumerate(before):
        previous = messages.inspect(earlier, n, previous)
    at = len(before)
    general = messages._inspect  # every format, every check
    assert _read(message, at, previous, messages.inspect) == _read(message, at, previous, general)
    expected = COUNTER.message_tokens + COUNTER.part_tokens + COUNTER._text(message["content"])
    assert COUNTER.count_message(message) == math.ceil(expected)


def test_a_quiet_turn_classifies_no_message(monkeypatch: Any) -> None:
    """Author classes are decided when read, not on append, and still come out the same."""
    calls: list[int] = []
    real = provenance.classify

    def counting(message: object, info: Any) -> Any:
        calls.append(1)
        return real(message, info)

    monkeypatch.setattr(state_module, "classify", counting)
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=100_000),
        summarizer=FunctionSummarizer(one_fact),
    )
    state: ConversationState[Any] = ConversationState([{"role": "user", "content": "Plan it."}])
    for n in range(20):
        state = compactor.maybe_compact(state.append(tool_message(n)))
    assert calls == []
    authors = list(state.authors)
    assert len(calls) == len(state)
    assert authors[0] == "user"
    assert authors[1::4] == ["user"] * 5  # tool_message(0), (4), ...: the person's requests
    assert authors[2::4] == ["assistant"] * 5  # the tool calls
    assert authors[3::4] == ["tool"] * 5  # the tool_result messages
    assert list(state.authors) == authors
    assert len(calls) == len(state)  # classified once
    marked = state.append({"role": "user", "content": "cat log.txt output"}, author="tool")
    assert marked.authors[-1] == "tool"
    assert ConversationState.from_dict(marked.to_dict()).authors[-1] == "tool"


# The segmenter's rules as first written, one regex each (slow on long lines: every position
# tries every branch). The faster forms in progsum.judge._segment must decide every line
# the same way.
OLD_CODE = re.compile(
    r"^(?: {4}|\t)|^\s*(?:\$ |>>> |\.\.\. |#!|%\s)|"
    r"^\s*(?:def|class|import|from\s+\S+\s+import|return|elif|except|raise|async def|await|"
    r"const|let|var|function|public|private|#include|SELECT|INSERT|UPDATE\s+\w+\s+SET)\b|"
    r"[{};]\s*$|^\s*[}\])]"
)
OLD_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
OLD_AMBIGUOUS = re.compile(
    r"(?:^|[\s(])(?:[A-Za-z](?:\.[A-Za-z])*|Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|vs|etc|approx|Inc|"
    r"Ltd|Co|Corp|No|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Mon|Tue|Wed|Thu|Fri|Sat|"
    r"Sun|cf|al|fig|ca)\.(?=\s)"
)
OLD_DANGLING = re.compile(
    r"\b(?:to|the|a|an|and|or|but|of|with|for|from|like|my|your|our|their|how|that|because)\s*$",
    re.IGNORECASE,
)
LINES = st.lists(
    st.sampled_from(
        [
            *("Dr", "J.K", "e.g", "Mrs", "No", "to", "The", "AND", "def", "import", "x", "a.b"),
            *(".", "!", "?", '"', "'", ")", "]", "(", "{", "}", ";", " ", "  ", "\t", "    "),
            *("$ ", ">>> ", "so", "go.", "Sept.", "from a import", "é", "_", "1", "\u00a0"),
        ]
    ),
    max_size=14,
).map("".join)


@given(LINES)
def test_the_segmenter_rules_decide_as_their_first_regexes(line: str) -> None:
    """Code starts and ends, sentence ends, ambiguous periods and cut-off ends, as first written."""
    assert bool(segment._code().match(line) or line.strip().endswith(segment._CODE_ENDS)) == bool(
        OLD_CODE.search(line)
    )
    assert segment._ambiguous(line) == bool(OLD_AMBIGUOUS.search(line))
    assert (segment._last_word(line).lower() in words("sentences.dangling")) == bool(
        OLD_DANGLING.search(line)
    )
    parts = segment._END.split(line)
    pieces = [text + end for text, end in zip(parts[::2], [*parts[1::2], ""], strict=True)]
    assert pieces == OLD_END.split(line)


def test_a_derived_state_copies_every_slot() -> None:
    """`_replace` names each slot of the state: one added later is copied too, or this fails."""
    state: ConversationState[Any] = ConversationState([{"role": "user", "content": "Go."}])
    for n, name in enumerate(ConversationState.__slots__):
        object.__setattr__(state, name, ("sentinel", n))
    object.__setattr__(state, "_version", 7)
    copy = state._replace()
    for name in ConversationState.__slots__:
        if name != "_version":
            assert getattr(copy, name) is getattr(state, name), name
    assert copy._version == 8


def test_a_quiet_turn_is_decided_as_planning_decides_it() -> None:
    """The fast "nothing to do" check says quiet exactly when planning returns the state itself."""
    from progsum.store._archive import MemoryArchive  # noqa: PLC0415 - this test alone

    policies = [
        Policy(trigger=("fraction", 0.65), context_window=6_000),
        Policy(context_window=6_000, trigger=("messages", 9), keep=("messages", 3)),
        Policy(trigger=("fraction", 0.65), context_window=6_000, safety_margin=1.5),
    ]
    seen: set[bool] = set()
    for policy in policies:
        for archive in (None, MemoryArchive()):
            compactor = Compactor(
                policy=policy, summarizer=FunctionSummarizer(one_fact), archive=archive
            )
            state: ConversationState[Any] = ConversationState(thread_id="t")
            for n in range(40):
                usage = {"input_tokens": 300 * n, "output_tokens": 50} if n % 7 == 3 else None
                state = state.append(tool_message(n), usage=usage)
                quiet = is_quiet(compactor.config, state)
                seen.add(quiet)
                planned = plan_turn(compactor.config, CutMemo(), state, force=False)
                if quiet:
                    assert planned is state, (policy, n)
                    assert archive is None
                elif archive is None:
                    assert planned is not state, (policy, n)
                state = compactor.maybe_compact(state)
    assert seen == {True, False}


USAGES = st.one_of(
    st.integers(min_value=-5, max_value=10**7),
    st.booleans(),
    st.dictionaries(
        st.sampled_from(
            [
                *("input_tokens", "output_tokens", "cache_creation_input_tokens"),
                *("cache_read_input_tokens", "prompt_tokens", "completion_tokens", "other"),
            ]
        ),
        st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
    ),
)


@given(USAGES, st.booleans())
def test_a_usage_report_counts_as_usage_tokens_counts_it(usage: object, as_object: bool) -> None:
    """The state anchors on the report's total: usage_tokens' figure, or its error."""
    if as_object and isinstance(usage, dict):
        usage = type("Usage", (), dict(usage))()  # an SDK-like object with attributes
    try:
        expected: object = usage_tokens(usage)
    except ConfigError:
        expected = ConfigError
    try:
        got: object = AgentUsage.of(usage).tokens
    except ConfigError:
        got = ConfigError
    assert got == expected


@given(st.lists(st.tuples(USAGES, st.sampled_from(["append", "record", "unbilled"])), max_size=8))
def test_usage_totals_summed_per_turn_equal_the_records_summed(
    reports: list[tuple[object, str]],
) -> None:
    """A state's agent usage equals the `AgentUsage` reports summed, errors and JSON included."""
    state: ConversationState[Any] = ConversationState([{"role": "user", "content": "Hi."}])
    expected = AgentUsage()
    for n, (usage, how) in enumerate(reports):
        try:
            report = AgentUsage.of(usage)
        except ConfigError:
            report = None
        try:
            if how == "append":
                state = state.append({"role": "assistant", "content": f"Ok {n}."}, usage=usage)
            else:
                state = state.record_usage(usage, billed=how == "record")
        except ConfigError:
            assert report is None
            continue
        assert report is not None
        if how != "unbilled":
            expected += report
        assert state.anchor is not None
        assert state.anchor.tokens == report.tokens
    assert state.agent_usage == expected
    assert isinstance(state.agent_usage, AgentUsage)
    assert ConversationState.from_json(state.to_json()).agent_usage == expected


OLD_CANDIDATE = re.compile(r"(?<!\S)(?=\S*[\d/\\@_.])\S+")
"""The value candidates as first written: a lookahead tried at every position of the text."""
OLD_NEXT_WORD = re.compile(r"\s+(\S+)")


@given(
    st.lists(
        st.sampled_from(
            ["ab", "3", "$3,000", "x/y", "a_b", "e.g.", " ", "\n", "\t", "\u0663", "é", "@", "\xa0"]
        ),
        max_size=12,
    ).map("".join)
)
def test_value_candidates_are_the_tokens_the_first_regex_found(text: str) -> None:
    """Tokens holding a digit, separator or dot, with the word after: as the regexes found them."""
    expected = []
    for match in OLD_CANDIDATE.finditer(text):
        following = OLD_NEXT_WORD.match(text, match.end())
        expected.append((match.group(), following.group(1) if following else None))
    assert list(values._candidates(text)) == expected


def test_a_refused_append_leaves_the_log_as_it_was() -> None:
    """A bad author on a format-deciding message fixes no format and appends nothing."""
    state: ConversationState[Any] = ConversationState([{"role": "user", "content": "Go."}])
    anthropic = {"role": "assistant", "content": [{"type": "text", "text": "Ok."}]}
    with pytest.raises(ConfigError, match="author='model'"):
        state.append(anthropic, author="model")  # type: ignore[arg-type]  # the mistake tested
    assert len(state) == 1
    assert state.format is None
    openai = state.append({"role": "system", "content": "Be brief."})
    assert openai.format == "openai"
    assert list(openai.authors) == ["user", "tool"]


SOURCE_MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "developer", "tool"])},
        optional={
            "content": st.one_of(
                st.none(),
                st.text(alphabet=st.sampled_from(["a", " ", "\n", "é", "1", "{"]), max_size=8),
                st.lists(st.just({"type": "text", "text": "hi"}), max_size=2),
            ),
            "tool_call_id": st.just("call_1"),
            "tool_calls": st.just([]),
            "type": st.just("message"),
        },
    ),
    max_size=4,
)


@given(SOURCE_MESSAGES)
def test_plain_messages_read_as_the_general_path_reads_them(
    messages_in: list[dict[str, Any]],
) -> None:
    """`source_text` and the parts of any message equal the general reading's, or its error."""
    try:
        general = [list(transcript._any_parts(m)) for m in messages_in]
        expected: object = "\n".join(p for parts in general for part in parts for p in part.source)
    except Exception as error:  # noqa: BLE001 - the same error either way
        general, expected = [], type(error)
    try:
        got: object = transcript.source_text(messages_in)
        parts = [list(transcript._parts(m)) for m in messages_in]
    except Exception as error:  # noqa: BLE001 - likewise
        got, parts = type(error), []
    assert got == expected
    assert parts == general


class CountingCounter(HeuristicCounter):
    """The heuristic counter, noting each text it counts."""

    def __init__(self) -> None:
        super().__init__()
        object.__setattr__(self, "texts", [])

    def count_text(self, text: str) -> int:
        """Count as the heuristic counter does, and note the text."""
        self.texts.append(text)  # type: ignore[attr-defined]  # set in __init__
        return super().count_text(text)


def test_a_fold_s_header_is_counted_once_for_the_states_that_share_it() -> None:
    """The fold's final state and the turns after it count the fold's new header once."""
    counter = CountingCounter()
    compactor = Compactor(
        policy=Policy(context_window=3_000, keep=("messages", 4)),
        summarizer=FunctionSummarizer(one_fact),
        counter=counter,
    )
    state: ConversationState[Any] = ConversationState(thread_id="t")
    n = 0
    while state.summary is None:  # up to the first fold
        state = compactor.maybe_compact(state.append(tool_message(n)))
        n += 1
    assert state.summary is not None
    header = state.header
    assert state.header_tokens(counter) == HeuristicCounter().count_text(header) + 4
    later = state.append(tool_message(n))
    assert later.header_tokens(counter) == state.header_tokens(counter)
    compactor.maybe_compact(later)
    assert [t for t in counter.texts if t == header] == [header]  # type: ignore[attr-defined]
