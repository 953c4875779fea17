"""Both stores keep the cost accounting: agent usage totals and cost alerts, old rows included."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy, Summary, SummaryUpdate
from progsum.policy._usage import AgentUsage
from progsum.summary._update import SummarizerUsage
from progsum.testing import QueuedSummarizer
from tests.conversations import TRIP_RULE, trip_planning
from tests.store_backends import BACKENDS, Backend, SQLiteBackend, Store, make_backend

WIDE = Policy(context_window=200_000, keep=("messages", 4))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """An empty SQLite file or PostgreSQL database."""
    return make_backend(request, tmp_path)


@pytest.fixture
def store(backend: Backend) -> Iterator[Store]:
    """A fresh store on the backend."""
    with backend.open() as opened:
        yield opened


def alerted_trip() -> ConversationState[Summary]:
    """A trip whose one compaction's summarizer call raised the cost alert."""
    usage = SummarizerUsage(input_tokens=3_000, output_tokens=200)
    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": [TRIP_RULE]}, usage=usage))
    state = ConversationState(trip_planning(12), thread_id="trip").record_usage(
        {"input_tokens": 9_000, "output_tokens": 300, "cache_read_input_tokens": 2_000}
    )
    return Compactor(policy=WIDE, summarizer=fake).compact(state, force=True)


def stored_json(backend: Backend, thread_id: str) -> dict[str, Any]:
    """The saved state row of a thread, read directly."""
    if isinstance(backend, SQLiteBackend):
        with sqlite3.connect(backend.path) as db:
            (text,) = db.execute(
                "SELECT state FROM states WHERE thread_id = ?", (thread_id,)
            ).fetchone()
    else:
        ((text,),) = backend.execute(
            "SELECT state FROM progsum_states WHERE thread_id = %s", (thread_id,)
        )
    found: dict[str, Any] = json.loads(text)
    return found


def rewrite_json(backend: Backend, thread_id: str, data: dict[str, Any]) -> None:
    """Replace the saved state row of a thread, as an older progsum would have written it."""
    text = json.dumps(data)
    if isinstance(backend, SQLiteBackend):
        with sqlite3.connect(backend.path) as db:
            db.execute("UPDATE states SET state = ? WHERE thread_id = ?", (text, thread_id))
    else:
        backend.execute(
            "UPDATE progsum_states SET state = %s WHERE thread_id = %s", (text, thread_id)
        )


def strip_cost_alerts(backend: Backend, thread_id: str) -> None:
    """Remove ``cost_alert`` from a thread's event rows, as an older progsum wrote them."""
    if isinstance(backend, SQLiteBackend):
        with sqlite3.connect(backend.path) as db:
            rows = db.execute(
                "SELECT number, event FROM events WHERE thread_id = ?", (thread_id,)
            ).fetchall()
            for number, text in rows:
                event = json.loads(text)
                event.pop("cost_alert", None)
                db.execute(
                    "UPDATE events SET event = ? WHERE thread_id = ? AND number = ?",
                    (json.dumps(event), thread_id, number),
                )
    else:
        for number, text in backend.execute(
            "SELECT number, event FROM progsum_events WHERE thread_id = %s", (thread_id,)
        ):
            event = json.loads(text)
            event.pop("cost_alert", None)
            backend.execute(
                "UPDATE progsum_events SET event = %s WHERE thread_id = %s AND number = %s",
                (json.dumps(event), thread_id, number),
            )


def test_usage_totals_and_alerts_round_trip(store: Store) -> None:
    """A saved state loads with the same agent usage, share and cost alert."""
    state = alerted_trip()
    assert state.events[-1].cost_alert is not None
    store.save(state, expected_version=None)
    loaded = store.load("trip").state
    assert loaded.agent_usage == state.agent_usage
    assert loaded.summarization_share == state.summarization_share
    assert loaded.events[-1].cost_alert == state.events[-1].cost_alert
    assert store.events("trip")[-1].cost_alert == state.events[-1].cost_alert


def test_rows_saved_before_usage_totals_still_load(store: Store, backend: Backend) -> None:
    """A state row without the agent_usage key (an older progsum's) loads with zero totals."""
    state = alerted_trip()
    store.save(state, expected_version=None)
    old = stored_json(backend, "trip")
    assert old.pop("agent_usage") == state.agent_usage.to_dict()
    rewrite_json(backend, "trip", old)
    strip_cost_alerts(backend, "trip")
    loaded = store.load("trip").state
    assert loaded.agent_usage == AgentUsage()
    assert loaded.events[-1].cost_alert is None
    assert loaded.summary == state.summary


def test_saves_are_logged_on_progsum_store(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    """Each save is one DEBUG line on progsum.store naming the thread and its new version."""
    caplog.set_level(logging.DEBUG, logger="progsum.store")
    state = alerted_trip()
    store.save(state, expected_version=None)
    (record,) = [r for r in caplog.records if r.name == "progsum.store"]
    assert record.levelno == logging.DEBUG
    assert record.getMessage() == (
        f"saved thread trip version 1: {len(state)} messages, {len(state.events)} events"
    )
