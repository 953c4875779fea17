"""Start-up: the hook and the CLI import no provider SDK unless they call a provider.

Each check runs in a fresh interpreter (a subprocess), the only way to see what an import pulls
in: the Anthropic SDK and Instructor take seconds of CPU to import, which a Claude Code hook pays
on every event. ``ANTHROPIC_API_KEY`` is set to a dummy value where it matters, because with a
key the hook's and the CLI's automatic choice is Claude; the paths checked here never call it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PROVIDER_SDKS = ("anthropic", "instructor")
"""Top-level packages that must not be imported on these paths."""

REPORT = (
    "import json, sys\n"
    f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & {set(PROVIDER_SDKS)!r})\n"
    "sys.stderr.write('SDKS ' + json.dumps(bad) + '\\n')\n"
)
"""Appended to each child program: prints which provider SDKs it imported."""


def _run(program: str, *, key: bool, stdin: str = "", cwd: Path | None = None) -> list[str]:
    """Run ``program`` then `REPORT` in a fresh interpreter; the provider SDKs it imported."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    if key:
        env["ANTHROPIC_API_KEY"] = "sk-ant-test-not-a-key"
    done = subprocess.run(  # noqa: S603 - our own interpreter and program
        [sys.executable, "-c", program + "\n" + REPORT],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("SDKS "))
    sdks: list[str] = json.loads(line.removeprefix("SDKS "))
    return sdks


def _transcript(path: Path) -> None:
    """A small Claude Code transcript: a rule, then a few tool rounds."""
    rows: list[dict[str, Any]] = []
    for n in range(1, 7):
        text = f"Step {n}: fix the billing test." + (" Never edit migrations/." if n == 1 else "")
        rows.append({"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": text}})
        use = {"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {"file_path": "a"}}
        rows.append(
            {
                "type": "assistant",
                "uuid": f"a{n}",
                "message": {"id": f"msg_{n}", "role": "assistant", "content": [use]},
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "x = 1\n" * 20}
        rows.append(
            {"type": "user", "uuid": f"r{n}", "message": {"role": "user", "content": [result]}}
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_importing_progsum_imports_no_provider_sdk() -> None:
    """``import progsum`` leaves the Anthropic SDK and Instructor unimported."""
    assert _run("import progsum", key=True) == []


def test_importing_the_claude_code_hook_imports_no_provider_sdk() -> None:
    """``import progsum.integrations.claude_code`` does not import the Anthropic SDK."""
    assert _run("import progsum.integrations.claude_code", key=True) == []


@pytest.mark.parametrize("choice", ["auto", "anthropic"])
def test_session_start_with_a_saved_header_imports_no_provider_sdk(
    tmp_path: Path, choice: str
) -> None:
    """SessionStart only prints the saved header: even with a key and Claude chosen, no SDK."""
    transcript = tmp_path / "session.jsonl"
    _transcript(transcript)
    precompact = json.dumps({"hook_event_name": "PreCompact", "transcript_path": str(transcript)})
    run_hook = "from progsum.integrations.claude_code import main\nmain(%r)"
    _run(run_hook % (["--summarizer", "extractive"],), key=False, stdin=precompact)
    assert (tmp_path / "session.jsonl.progsum.json").exists()
    start = {
        "hook_event_name": "SessionStart",
        "source": "compact",
        "transcript_path": str(transcript),
    }
    program = (
        "import contextlib, io\n"
        "from progsum.integrations.claude_code import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main({['--summarizer', choice]!r})\n"
        "assert 'additionalContext' in out.getvalue(), out.getvalue()\n"
    )
    assert _run(program, key=True, stdin=json.dumps(start)) == []


def test_progsum_compact_offline_imports_no_provider_sdk(tmp_path: Path) -> None:
    """``progsum compact`` without a key (the extractive summarizer) imports no provider SDK."""
    conversation = tmp_path / "chat.json"
    turns = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"Turn {n}: " + "words " * 60}
        for n in range(40)
    ]
    conversation.write_text(json.dumps(turns), encoding="utf-8")
    program = (
        "import contextlib, io\n"
        "from progsum.cli.main import main\n"
        "out, err = io.StringIO(), io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        f"    status = main(['compact', {str(conversation)!r}, '--budget', '3000'])\n"
        "assert status == 0, status\n"
    )
    assert _run(program, key=False) == []


def test_progsum_version_imports_no_provider_sdk() -> None:
    """``progsum --version`` imports no provider SDK, key or not."""
    program = (
        "import contextlib, io\n"
        "from progsum.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['--version']) == 0\n"
    )
    assert _run(program, key=True) == []
