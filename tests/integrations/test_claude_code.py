"""The Claude Code hook: PreCompact folds the live transcript, SessionStart(compact) hands it back.

Input and output follow the Claude Code hooks reference: the event as JSON on stdin
(``session_id``, ``transcript_path``, ``hook_event_name``, ``trigger`` or ``source``), and for
``SessionStart`` a ``hookSpecificOutput`` with ``additionalContext`` on stdout.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from progsum.integrations.claude_code import main, state_path

RULE = "Do not touch migrations/ under any circumstances."


def rows(turns: range) -> list[dict[str, Any]]:
    """Claude Code session rows: a user rule, then tool turns (one row per content block)."""
    out: list[dict[str, Any]] = []
    for n in turns:
        text = f"Step {n}: fix the billing test." + (f" {RULE}" if n == 1 else "")
        out.append({"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": text}})
        block = {
            "type": "tool_use",
            "id": f"toolu_{n}",
            "name": "Read",
            "input": {"file_path": f"src/billing_{n}.py"},
        }
        out.append(
            {
                "type": "assistant",
                "uuid": f"a{n}",
                "message": {"id": f"msg_{n}", "role": "assistant", "content": [block]},
            }
        )
        result = {
            "type": "tool_result",
            "tool_use_id": f"toolu_{n}",
            "content": "def total(): ...\n" * 40,
        }
        out.append(
            {"type": "user", "uuid": f"r{n}", "message": {"role": "user", "content": [result]}}
        )
        answer = {"type": "text", "text": f"Read billing_{n}.py; the rounding is in total()."}
        out.append(
            {
                "type": "assistant",
                "uuid": f"b{n}",
                "message": {"id": f"msg_{n}b", "role": "assistant", "content": [answer]},
            }
        )
    return out


def write(path: Path, data: list[dict[str, Any]], *, torn: bool) -> None:
    """Write rows as JSONL; ``torn`` leaves a half-written last line, as a live transcript may."""
    text = "".join(json.dumps(r) + "\n" for r in data)
    if torn:
        text += '{"type": "assistant", "message": {"id": "msg_x", "role": "assi'
    path.write_text(text, encoding="utf-8")


def run(payload: dict[str, Any]) -> str:
    """Run the hook command in-process; its stdout."""
    out = io.StringIO()
    assert (
        main(["--summarizer", "extractive"], stdin=io.StringIO(json.dumps(payload)), stdout=out)
        == 0
    )
    return out.getvalue()


def test_precompact_then_session_start_hands_back_the_binding_rule(tmp_path: Path) -> None:
    """After PreCompact on a torn live transcript, SessionStart(compact) returns the header."""
    transcript = tmp_path / "s1.jsonl"
    write(transcript, rows(range(12)), torn=True)
    base = {"session_id": "s1", "transcript_path": str(transcript)}
    assert run({**base, "hook_event_name": "PreCompact", "trigger": "auto"}) == ""
    assert state_path(transcript).exists()
    output = json.loads(run({**base, "hook_event_name": "SessionStart", "source": "compact"}))
    context = output["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert RULE in context["additionalContext"]
    assert context["additionalContext"].startswith("# Earlier conversation (compressed)")


def test_second_compaction_resumes_the_saved_state(tmp_path: Path) -> None:
    """A later PreCompact adds to the saved summary: the rule stays and the events accumulate."""
    transcript = tmp_path / "s2.jsonl"
    write(transcript, rows(range(10)), torn=False)
    base = {"session_id": "s2", "transcript_path": str(transcript)}
    run({**base, "hook_event_name": "PreCompact", "trigger": "auto"})
    first = json.loads(state_path(transcript).read_text(encoding="utf-8"))
    write(transcript, rows(range(20)), torn=True)
    run({**base, "hook_event_name": "PreCompact", "trigger": "manual"})
    second = json.loads(state_path(transcript).read_text(encoding="utf-8"))
    assert len(second["state"]["events"]) == len(first["state"]["events"]) + 1
    assert second["state"]["cutoff"] > first["state"]["cutoff"]
    assert RULE in second["header"]


def test_other_events_and_sources_print_nothing(tmp_path: Path) -> None:
    """SessionStart for a new session (source startup) adds no context."""
    transcript = tmp_path / "s3.jsonl"
    write(transcript, rows(range(3)), torn=False)
    payload = {
        "transcript_path": str(transcript),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    assert run(payload) == ""


def test_damaged_transcript_never_blocks_claude_code(tmp_path: Path) -> None:
    """A broken line in the middle is reported on stderr, and the hook still exits 0."""
    transcript = tmp_path / "s4.jsonl"
    transcript.write_text('{"type": "user"\n{"type": "user"}\n', encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "progsum.integrations.claude_code",
        "--summarizer",
        "extractive",
    ]
    payload = json.dumps({"transcript_path": str(transcript), "hook_event_name": "PreCompact"})
    done = subprocess.run(command, input=payload, capture_output=True, text=True, check=False)  # noqa: S603 - our own module
    assert done.returncode == 0
    assert done.stdout == ""
    assert "line 1 is not JSON" in done.stderr
