"""The window outranks the archive: a SQLite file whose writes fail at random never holds it up.

A real `SQLiteStore` on a file; the faults are SQLite's own (its authorizer, installed at the
`sqlite3.connect` boundary, refuses COMMITs and inserts at a rate, as intermittent I/O errors
do: tests/flaky_disk.py). While the archive fails, folds go on: their
segments wait in the state (``archive_pending``) and reach the file once it takes writes again.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy, render_anthropic
from progsum.store import SQLiteStore
from progsum.summarizers import ExtractiveSummarizer
from tests import prefix_rule
from tests.conversations import coding_session, training_log
from tests.flaky_disk import FlakyWrites, flaky_sqlite
from tests.provider_rules import anthropic_violations
from tests.test_window_chats import request_tokens


@pytest.fixture
def disk() -> Iterator[FlakyWrites]:
    """Every SQLite connection opened in the test judges each write by a `FlakyWrites`."""
    with flaky_sqlite(seed=47) as faults:
        yield faults


def test_folds_go_on_while_the_archive_fails_and_nothing_is_lost(
    disk: FlakyWrites, tmp_path: Path
) -> None:
    """Writes failing at 10-90%: every request fits, every stated value is kept or named.

    Each fold waits in the state while the file refuses it; once the file takes writes again,
    every folded message is in it.
    """
    store = SQLiteStore(tmp_path / "archive.db")
    compactor = Compactor(
        policy=Policy(context_window=2_000), summarizer=ExtractiveSummarizer(), archive=store
    )
    window = compactor.policy.input_window
    assert window is not None
    messages, stated = training_log(240, 11)
    rates = random.Random(3)  # noqa: S311 - fault rates
    state: ConversationState[Any] = ConversationState(thread_id="log")
    over = []
    for n, message in enumerate(messages):
        if n % 40 == 0:
            disk.rate = rates.uniform(0.1, 0.9)
        state = compactor.maybe_compact(state.append(message))
        if (size := request_tokens(state)) > window:
            over.append((len(state), size))
    assert disk.refused, "the disk never failed"
    assert any(e.archive_pending for e in state.events)
    assert over == []
    left = {v for e in state.events if e.merge is not None for v in e.merge.archived_values}
    system, sent = render_anthropic(state)
    shown = json.dumps({"system": system, "messages": sent}, ensure_ascii=False)
    kept = {v for v in stated if re.search(rf"(?<![\d.]){re.escape(v)}(?!\.?\d)", shown)}
    assert stated - kept <= left  # nothing lost silently, archive down or not
    disk.rate = 0.0
    for n in range(70):  # the backoff passes; the pending segments are written
        state = compactor.maybe_compact(state.append({"role": "user", "content": f"Day {n}."}))
    assert [e for e in state.events if e.archive_pending and not _written(state, e.number)] == []
    archived = {m.index for m in store.get("log")}
    assert set(range(state.head_end, state.cutoff)) <= archived
    store.close()


def test_thinking_requests_stay_valid_while_the_archive_fails(
    disk: FlakyWrites, tmp_path: Path
) -> None:
    """A coding session with thinking, folded while writes fail: both renders keep their rules.

    Each assistant message answers the request rendered before it (its thinking signed for that
    request's prefix by the fake of tests/prefix_rule.py): the default render sends no block the
    prefix check refuses (T7), and the render an older model gets (thinking kept) breaks none of
    T1-T6 (tests/provider_rules.py).
    """
    store = SQLiteStore(tmp_path / "archive.db")
    compactor = Compactor(
        policy=Policy(context_window=3_000, recall_budget=None),
        summarizer=ExtractiveSummarizer(),
        archive=store,
    )
    disk.rate = 0.6
    state: ConversationState[Any] = ConversationState(thread_id="agent")
    refused: list[tuple[int, int]] = []
    broken: list[str] = []
    for logged in coding_session(12):
        message = logged
        if message["role"] == "assistant":
            state = compactor.maybe_compact(state)
            system, sent = render_anthropic(state, model="claude-opus-5-5")
            body = json.loads(json.dumps({"system": system, "messages": sent}))
            refused += prefix_rule.check(body).invalid
            broken += anthropic_violations(render_anthropic(state, thinking="keep")[1], state.log)
            message, _ = prefix_rule.resign(body, message)
        state = state.append(message)
    assert disk.refused, "the disk never failed"
    assert any(e.archive_pending for e in state.events)
    assert sum(e.outcome == "compacted" for e in state.events) >= 2
    assert (refused, broken) == ([], [])
    store.close()


def _written(state: ConversationState[Any], number: int) -> bool:
    """Whether a later ``archived`` event wrote the segment of compaction ``number``."""
    return any(e.outcome == "archived" and number in e.archives for e in state.events)
