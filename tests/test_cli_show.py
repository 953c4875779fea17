"""``progsum show``: a saved state or a stored thread, readable in a terminal.

It shows what the summary holds, field by field (so a schema's own fields, and sections other
engineers add, appear without changes to the command), the exact values the user stated, the
recall index's size and the last compactions with their reasons.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from progsum import Compactor, ConversationState, Policy, SummaryUpdate, load_schema
from progsum.cli.main import main
from progsum.integrations.claude_code import main as hook_main
from progsum.integrations.claude_code import state_path
from progsum.store._sqlite import SQLiteStore
from progsum.summarizers import ExtractiveSummarizer
from progsum.testing import QueuedSummarizer
from tests.test_cli_reports import hook_rows

ROOT = Path(__file__).resolve().parent.parent
TRIP = ROOT / "examples" / "conversations" / "trip-planning.json"


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wide terminal, so that no table cell wraps a text the tests look for."""
    monkeypatch.setenv("COLUMNS", "300")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return the exit status, stdout and stderr."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def saved(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    """The trip example compacted and saved with ``compact --save``."""
    path = tmp_path / "trip.state.json"
    status, _, _ = run(capsys, "compact", str(TRIP), "--budget", "2000", "--save", str(path))
    assert status == 0
    return path


def test_show_a_saved_state(capsys: pytest.CaptureFixture[str], saved: Path) -> None:
    """Every field's items with ids and sources, values, the recall index, the compactions."""
    status, out, err = run(capsys, "show", str(saved))
    assert status == 0, err
    state = ConversationState.from_json(saved.read_text(encoding="utf-8"))
    assert state.summary is not None
    for item in state.summary.constraints:
        assert item.id in out
    assert "Total budget is $6,500 for both of us, flights included." in out
    for label in ("Decisions", "Constraints (binding)", "Established facts", "Open threads"):
        assert label in out
    assert "Exact values the user stated" in out
    assert "$6,500" in out
    assert "Recall index" in out
    assert f"{state.cutoff - state.head_end} folded messages" in out
    assert "Last compactions" in out
    assert "compacted" in out
    assert "consolidated" in out
    assert "45 messages logged" in out


WARD = """
name = "ward"
description = "A hospital ward."

[objective]
name = "patient"
label = "Patient"
description = "Who and why."

[[fields]]
name = "orders"
label = "Standing orders"
description = "What the doctor ordered."
binding = true

[[fields]]
name = "vitals"
label = "Vitals"
description = "Measured values."
kind = "keyed"
id_prefix = "V"
"""


def test_show_lists_whatever_fields_the_summary_has(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A schema of one's own shows its own fields and labels: nothing is hard-wired."""
    schema = tmp_path / "ward.toml"
    schema.write_text(WARD, encoding="utf-8")
    update = SummaryUpdate(objective="Bed 4, post-op.", add={"vitals": ["pulse: 72"]})
    compactor = Compactor(
        policy=Policy(context_window=8_000, keep=("messages", 2)),
        summarizer=QueuedSummarizer(update),
        schema=load_schema(schema),
    )
    state = ConversationState(
        [
            {"role": "user", "content": "Bed 4 is post-op. No fluids by mouth."},
            {"role": "assistant", "content": "Noted. " * 50},
            {"role": "user", "content": "Pulse is 72."},
            {"role": "assistant", "content": "Logged. " * 50},
            {"role": "user", "content": "Thanks."},
        ]
    )
    path = tmp_path / "ward.json"
    path.write_text(compactor.compact(state, force=True).to_json(), encoding="utf-8")
    status, out, err = run(capsys, "show", str(path), "--schema", str(schema))
    assert status == 0, err
    assert "Patient" in out
    assert "Bed 4, post-op." in out
    assert "Vitals" in out
    assert "pulse: 72" in out
    assert "Standing orders (binding)" in out


def test_show_a_stored_thread_and_list_the_threads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--thread reads a thread of a SQLite store (with its version); without it, the threads."""
    path = tmp_path / "agents.db"
    store = SQLiteStore(path)
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
        archive=store,
    )
    messages = json.loads(TRIP.read_text(encoding="utf-8"))
    state = compactor.compact(ConversationState(messages, thread_id="lisbon"), force=True)
    store.save(state, expected_version=None)
    store.close()
    status, out, err = run(capsys, "show", str(path), "--thread", "lisbon")
    assert status == 0, err
    assert "lisbon" in out
    assert "version 1" in out
    assert "Last compactions" in out
    status, out, _ = run(capsys, "show", str(path))
    assert status == 0
    assert "lisbon" in out
    assert "--thread" in out


def test_show_the_claude_code_hook_state(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The hook's state file shows like any other, its messages read from the transcript."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in hook_rows(12)), encoding="utf-8")
    payload = {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "hook_event_name": "PreCompact",
        "trigger": "manual",
    }
    with redirect_stdout(io.StringIO()):
        hook_main(["--summarizer", "extractive"], stdin=io.StringIO(json.dumps(payload)))
    capsys.readouterr()
    status, out, err = run(capsys, "show", str(state_path(transcript)))
    assert status == 0, err
    assert "session.jsonl" in out
    assert "Never touch migrations/." in out


def test_show_of_a_missing_thread_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A thread the store does not hold: one line naming it and the threads it holds; status 1."""
    path = tmp_path / "agents.db"
    with SQLiteStore(path) as store:
        store.save(
            ConversationState([{"role": "user", "content": "hi"}], thread_id="a"),
            expected_version=None,
        )
    status, out, err = run(capsys, "show", str(path), "--thread", "b")
    assert status == 1
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "'b'" in err


def test_replay_shows_a_progress_bar_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal, replay draws rich's progress bar on stderr; in a pipe, none."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich's own switch: stderr is a terminal
    status, _, err = run(capsys, "replay", str(TRIP), "--budget", "2000")
    assert status == 0
    assert "replaying" in err
    assert "45/45" in err
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    status, _, err = run(capsys, "replay", str(TRIP), "--budget", "2000")
    assert "replaying" not in err
