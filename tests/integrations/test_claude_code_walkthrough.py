"""docs/integrations.md's Claude Code walkthrough, run as written.

The page's step 5 pipes the two hook events to the hook and checks the saved state with
``progsum show`` and ``progsum render``. Here those commands run in a shell, on a transcript in
Claude Code's format with the placeholders filled in; what they print is what the page says.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "integrations.md"
SESSION = "7f1c2a90-walkthrough"
RULE = "Never run migrations against the staging database."


def _walkthrough() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## The Claude Code hook, step by step")
    return text[start : text.index("\n## ", start + 1)]


def _echo_commands() -> list[str]:
    """The walkthrough's ``echo ... | python -m ...`` commands, joined across continuations."""
    blocks = re.findall(r"```sh\n(.*?)```", _walkthrough(), flags=re.DOTALL)
    lines = "\n".join(b.replace("\\\n", " ") for b in blocks).splitlines()
    return [line.strip() for line in lines if line.strip().startswith("echo ")]


def _transcript(path: Path, turns: int = 30) -> None:
    """A Claude Code transcript: the user's task and rule, then tool rounds that fill it."""
    rows: list[dict[str, object]] = []
    parent = "u0"

    def add(kind: str, message: dict[str, object]) -> None:
        nonlocal parent
        uuid = f"u{len(rows) + 1}"
        row = {"type": kind, "isSidechain": False, "sessionId": SESSION, "uuid": uuid}
        rows.append({**row, "parentUuid": parent, "message": message})
        parent = uuid

    add("user", {"role": "user", "content": f"Add retries to the billing client. {RULE}"})
    for n in range(turns):
        read = {"file_path": f"billing/client_{n}.py"}
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": read}
        add("assistant", {"id": f"msg_{n}", "role": "assistant", "content": [call]})
        body = f"def call_{n}(request):\n    return send(request)  # line {n}\n" * 30
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": body}
        add("user", {"role": "user", "content": [result]})
        say = {"type": "text", "text": f"client_{n}.py sends without a retry; noted."}
        add("assistant", {"id": f"msg_{n}b", "role": "assistant", "content": [say]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` in a shell, ``python`` and ``progsum`` being this interpreter's.

    Without ``ANTHROPIC_API_KEY`` the hook summarizes offline (tests never reach the network).
    """
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    command = re.sub(r"\bpython\b", shlex.quote(sys.executable), command)
    command = re.sub(r"^progsum\b", shlex.quote(str(bin_dir / "progsum")), command)
    return subprocess.run(  # noqa: S602 - the page's own shell commands, on test files
        command,
        shell=True,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_the_walkthrough_names_both_events() -> None:
    """The page pipes a PreCompact and a SessionStart (source compact) event to the hook."""
    commands = _echo_commands()
    assert len(commands) == 2
    assert '"hook_event_name": "PreCompact"' in commands[0]
    assert '"source": "compact"' in commands[1]
    assert all("python -m progsum.integrations.claude_code" in c for c in commands)


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "progsum").exists(), reason="progsum not installed"
)
def test_the_walkthrough_runs_as_written(tmp_path: Path) -> None:
    """Folding on PreCompact, the header back on SessionStart, then show and render the file."""
    transcript = tmp_path / f"{SESSION}.jsonl"
    _transcript(transcript)
    fill = {"<session>": SESSION, "<path>.jsonl": str(transcript)}
    outputs = []
    for written in _echo_commands():
        command = written
        for placeholder, value in fill.items():
            command = command.replace(placeholder, value)
        done = _run(command, tmp_path)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    saved = Path(f"{transcript}.progsum.json")
    assert saved.exists(), "PreCompact wrote no state next to the transcript"
    assert outputs[0] == ""  # PreCompact adds no context: it only saves the state
    answer = json.loads(outputs[1])["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    context = answer["additionalContext"]
    assert context.startswith("# Earlier conversation (compressed)")
    # Claude Code drops the first message when it compacts: its rule must bind in the header
    assert f"## Rules (binding)\n- [C1] {RULE}" in context

    show = _run(f"progsum show {shlex.quote(str(saved))}", tmp_path)
    assert show.returncode == 0, show.stderr
    assert "compaction" in show.stdout
    render = _run(f"progsum render {shlex.quote(str(saved))}", tmp_path)
    assert render.returncode == 0, render.stderr
    assert context.strip() in render.stdout, "render does not print the header Claude Code got"
