"""What the command line reports is what it did.

Counts in one unit, clipped text named as such, defaults as --help states them, and the Claude
Code hook's state file rendered.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from progsum.cli._parser import build_parser
from progsum.cli.main import main
from progsum.integrations.claude_code import main as hook_main
from progsum.integrations.claude_code import state_path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI_DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return the exit status, stdout and stderr."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def big_paste(path: Path) -> Path:
    """A chat whose third message is a 5 MB log the user pasted, then ten short rounds."""
    messages: list[dict[str, str]] = [
        {"role": "user", "content": "Review this log for me."},
        {"role": "assistant", "content": "Sure, paste it."},
        {"role": "user", "content": "ERROR disk full at node-7 " * 200_000},
        {"role": "assistant", "content": "The log shows disk full errors on node-7."},
    ]
    for n in range(10):
        messages.append({"role": "user", "content": f"Question {n}: what about node-{n}? " * 20})
        messages.append({"role": "assistant", "content": f"Node {n} is healthy. " * 30})
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def numbers(line: str) -> list[int]:
    """The comma-grouped token counts of a report line, in order."""
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]{3,}", line)]


def test_model_counts_are_reported_in_one_unit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With --model (estimates x1.3) the summary line and the event line count alike."""
    status, _, err = run(
        capsys, "compact", str(big_paste(tmp_path / "big.json")), "--model", "claude-haiku-4-5"
    )
    assert status == 0
    summary = next(line for line in err.splitlines() if "tokens before" in line)
    event = next(line for line in err.splitlines() if "->" in line)
    before, after = numbers(summary)[:2]
    assert numbers(event)[-2:] == [before, after], (summary, event)
    assert "estimates x1.3" in summary


def test_a_clipped_user_message_is_not_called_tool_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The 5 MB paste is reported as a long user message clipped, not as old tool data."""
    _, _, err = run(
        capsys, "compact", str(big_paste(tmp_path / "big.json")), "--model", "claude-haiku-4-5"
    )
    event = next(line for line in err.splitlines() if "->" in line)
    assert "tool" not in event, event
    assert "clipped the text of 1 long user message (message 3)" in event


def test_the_documented_defaults_are_the_ones_help_states() -> None:
    """Each '`--option ...` (default X)' of the README and docs/cli.md is what --help says."""
    helps = {}
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    compact = commands.choices["compact"]
    for action in compact._actions:  # argparse's list of options
        for flag in action.option_strings:
            helps[flag] = " ".join((action.help or "").split())
    documented = re.findall(r"`(--[a-z-]+)[^`]*` \(default:? ([^)]*)\)", README + CLI_DOC)
    assert documented
    for flag, default in documented:
        said = " ".join(default.split()).split(";")[0]
        assert flag in helps, flag
        assert said in helps[flag], (flag, said, helps[flag])


def hook_rows(turns: int) -> list[dict[str, Any]]:
    """Claude Code session rows: a user rule, then turns of user text and assistant replies."""
    rows: list[dict[str, Any]] = []
    for n in range(turns):
        text = f"Step {n}: fix the billing test." + (" Never touch migrations/." if n == 1 else "")
        rows.append({"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": text}})
        reply = {"type": "text", "text": f"Done with step {n}; billing_{n}.py is fixed. " * 5}
        rows.append(
            {
                "type": "assistant",
                "uuid": f"a{n}",
                "message": {"id": f"msg_{n}", "role": "assistant", "content": [reply]},
            }
        )
    return rows


def test_render_reads_the_claude_code_hook_state(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`progsum render` of the hook's <transcript>.progsum.json prints its header and tail."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in hook_rows(12)), encoding="utf-8")
    payload = {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "hook_event_name": "PreCompact",
        "trigger": "manual",
    }
    with redirect_stdout(io.StringIO()):
        assert (
            hook_main(["--summarizer", "extractive"], stdin=io.StringIO(json.dumps(payload))) == 0
        )
    saved = state_path(transcript)
    assert saved.exists()
    capsys.readouterr()
    status, out, err = run(capsys, "render", str(saved))
    assert status == 0, err
    assert out.startswith("# Earlier conversation (compressed)")
    assert "Never touch migrations/." in out
    assert "Step 11: fix the billing test." in out
    assert "24 messages logged" in err
    assert f"read with its transcript {transcript.name}" in err


def test_render_of_a_hook_state_without_its_transcript_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A hook state whose transcript is gone: one line naming the missing transcript, status 1."""
    saved = tmp_path / "gone.jsonl.progsum.json"
    saved.write_text(
        json.dumps({"header": "", "session_id": "s", "digests": [], "state": {"length": 0}}),
        encoding="utf-8",
    )
    status, out, err = run(capsys, "render", str(saved))
    assert status == 1
    assert out == ""
    assert "gone.jsonl" in err
    assert "the Claude Code transcript it was saved beside" in err
