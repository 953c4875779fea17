"""The README's examples run, print what the README says, and match the shipped quick start."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from progsum.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str, str]]:
    """Fenced blocks of the README as (language, info, body)."""
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in BLOCK.finditer(README)]


def numbered(body: str) -> str:
    """The block padded with blank lines, so tracebacks point at README.md's own line numbers."""
    start = README.index(body)
    return "\n" * README.count("\n", 0, start) + body


def fake_anthropic() -> tuple[anthropic.Anthropic, list[dict[str, Any]]]:
    """A real Anthropic client whose transport answers with canned Messages API JSON."""
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if "tools" in body:  # a summarizer call: Claude is overloaded in the README's story
            overloaded = {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            }
            return httpx2.Response(529, json=overloaded)
        bodies.append(body)
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{len(bodies)}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [
                    {"type": "text", "text": "Casa do Patio: €120 a night, breakfast included."}
                ],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 150 * len(bodies),
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 700,
                    "output_tokens": 16,
                },
            },
        )

    client = anthropic.Anthropic(
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    return client, bodies


def test_quick_start_is_the_shipped_example() -> None:
    """The quick start in the README is examples/quickstart.py, byte for byte."""
    python = [body for lang, _, body in blocks() if lang == "python"]
    assert python[0] == (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    assert len(python[0].strip().splitlines()) < 25


def test_readme_examples_run_and_print_what_they_say(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python block runs in order; each is followed by its exact output where shown."""
    client, bodies = fake_anthropic()
    module = types.ModuleType("readme_examples")  # a real module, as user code would live in
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    namespace["client"] = client
    checked = 0
    pending: str | None = None
    for lang, info, body in blocks():
        if info.startswith("file="):
            continue  # a shipped file shown whole; test_file_blocks_are_the_shipped_files
        if lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(numbered(body), "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
            pending = out.getvalue()
        elif lang == "text" and info == "output":
            assert pending is not None, "an output block must follow a Python block"
            assert pending == body
            checked += 1
            pending = None
        else:
            pending = None
    assert checked == 5
    assert len(bodies) == 3
    sent = bodies[-1]
    assert sent["system"][0]["text"] == "You are a travel agent."
    assert sent["messages"][0]["role"] == "user"


def test_set_up_commands_are_the_ones_ci_runs() -> None:
    """.ci/run finds the README's two set-up commands by their comments and runs them."""
    (setup,) = [body for lang, _, body in blocks() if lang == "sh" and "pip install" in body]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for marker in ("the quick start, offline", "the test suite"):
        (line,) = [line for line in setup.splitlines() if line.endswith(f"# {marker}")]
        assert line.split("#", 1)[0].strip()
        assert f'readme_command "{marker}"' in ci


def test_file_blocks_are_the_shipped_files() -> None:
    """A block marked ``file=PATH`` shows that file of the repository byte for byte."""
    shown = [(info.removeprefix("file="), body) for _, info, body in blocks() if "file=" in info]
    assert len(shown) >= 2
    for path, body in shown:
        assert body == (ROOT / path).read_text(encoding="utf-8"), path


def console_sessions() -> list[tuple[str, str]]:
    """The ``$ progsum ...`` commands of the README's console blocks, each with its output."""
    sessions: list[tuple[str, str]] = []
    for lang, _, body in blocks():
        if lang != "console":
            continue
        for line in body.splitlines(keepends=True):
            if line.startswith("$ "):
                sessions.append((line[2:].rstrip("\n"), ""))
            else:
                command, output = sessions[-1]
                sessions[-1] = (command, output + line)
    return sessions


def run_command(command: str) -> str:
    """What a terminal shows for one README command line, run in-process.

    ``> FILE`` sends stdout to the file, as a shell would; the terminal then shows stderr alone.
    """
    argv = shlex.split(command)
    assert argv[0] == "progsum", command
    terminal = io.StringIO()
    with contextlib.redirect_stderr(terminal):
        if ">" in argv:
            at = argv.index(">")
            with (
                Path(argv[at + 1]).open("w", encoding="utf-8") as file,
                contextlib.redirect_stdout(file),
            ):
                status = cli.main(argv[1:at])
        else:
            with contextlib.redirect_stdout(terminal):
                status = cli.main(argv[1:])
    assert status == 0, (command, terminal.getvalue())
    return terminal.getvalue()


def test_readme_command_lines_print_what_they_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``$ progsum`` line of a console block prints exactly the lines shown after it."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)  # commands may write files (> context.md, --save)
    sessions = console_sessions()
    assert len(sessions) >= 5
    for command, output in sessions:
        assert run_command(command) == output, command


def test_readme_says_the_tests_need_the_postgresql_binaries() -> None:
    """The README names what the store tests need, as the error they fail with without it does."""
    from progsum.testing import postgres  # noqa: PLC0415 - the module that finds the binaries

    source = Path(postgres.__file__).read_text(encoding="utf-8")
    for needed in ("apt-get install", "postgresql", "PROGSUM_PG_BIN"):
        assert needed in source
        assert needed in README, f"the README does not say {needed!r}"
