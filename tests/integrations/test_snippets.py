"""The adapter snippets of README.md and the blocks of docs/integrations.md run as written.

Each block runs in a fresh interpreter in an empty directory, as a user's script would
(tests/integrations/snippet_runner.py), with the model faked at the HTTP boundary: every httpx2
transport answers with Messages API or Responses API JSON, and dummy API keys are set. Only the
distributions that the install line beside the block brings in can be imported there (its
pyproject.toml extra, followed through the installed packages' metadata), so a snippet needing a
package its extra lacks fails as it would after that ``pip install``, even in a virtual
environment that has every extra. The Claude Code settings block runs each hook command on the
event Claude Code sends it. A block of a language with no runner fails; a block whose extra is not
installed at all (the core test run) is skipped, and CI's framework step runs it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("snippet_runner.py")
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
INSTALL = re.compile(
    r"pip install (?:-e )?(\"?)\.(?:\[([\w,-]+)\])?\1(?=[\s`),.;:]|$)", re.MULTILINE
)
"""An install from a checkout: ``pip install .`` or ``pip install ".[extra,...]"`` (or ``-e``)."""
ADAPTERS = "## Framework integrations"
RULE = "Do not touch migrations/ under any circumstances."
SUMMARIZER_TOOL = "record_summary_update"
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-test"}
PROVIDER_SETTINGS = ("ANTHROPIC_", "OPENAI_", "LANGSMITH_", "LANGCHAIN_", "LOGFIRE_")
"""Prefixes of the environment variables left out: a developer's keys, endpoints and tracing."""


@dataclass(frozen=True)
class Snippet:
    """One fenced block of a documentation page and the extras its install line names."""

    page: str
    line: int
    lang: str
    info: str
    body: str
    extras: tuple[str, ...] | None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}:{self.lang}"


def section(text: str, heading: str) -> tuple[int, str]:
    """Where the section under ``heading`` starts, and its text up to the next heading."""
    start = text.index(f"\n{heading}\n") + 1
    end = text.find("\n## ", start + len(heading))
    return start, text[start : end if end != -1 else len(text)]


def snippets_of(page: str, heading: str | None = None) -> list[Snippet]:
    """The fenced blocks of a page (or of one section), each with the install line before it."""
    text = (ROOT / page).read_text(encoding="utf-8")
    offset, part = section(text, heading) if heading else (0, text)
    found: list[Snippet] = []
    previous = 0
    for match in BLOCK.finditer(part):
        installs = list(INSTALL.finditer(part, previous, match.start()))
        extras = None
        if installs:
            extras = tuple(e for e in (installs[-1].group(2) or "").split(",") if e)
        line = text.count("\n", 0, offset + match.start(3)) + 1
        found.append(
            Snippet(page, line, match.group(1), match.group(2).strip(), match.group(3), extras)
        )
        previous = match.end()
    return found


SNIPPETS = snippets_of("README.md", ADAPTERS) + snippets_of("docs/integrations.md")


def allowed(extras: Sequence[str]) -> set[str]:
    """The distributions ``pip install ".[extras]"`` installs: progsum's requirements, followed."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional: dict[str, list[str]] = project["optional-dependencies"]
    unknown = sorted(set(extras) - set(optional))
    assert not unknown, f"the install line names extras pyproject.toml lacks: {unknown}"
    todo = [*project["dependencies"], *(r for extra in extras for r in optional[extra])]
    seen: set[tuple[str, str]] = set()
    names = {"progsum"}
    while todo:
        requirement = Requirement(todo.pop())
        name = canonicalize_name(requirement.name)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        if name == "progsum":
            todo += [r for extra in requirement.extras for r in optional[extra]]
            continue
        wanted = {("", name)} | {(extra, name) for extra in requirement.extras}
        if wanted <= seen:
            continue
        seen |= wanted
        names.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed: the snippet fails on its import, naming it
        for text in requires:
            child = Requirement(text)
            marker = child.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e, _ in wanted):
                child.marker = None
                todo.append(str(child))
    return names


def absent(extras: Sequence[str]) -> list[str]:
    """The extras none of whose own requirements is installed (the core test run has none).

    An extra that is installed only in part is not absent: its snippet runs, and fails on what
    is missing.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def installed(requirement: str) -> bool:
        try:
            metadata.distribution(Requirement(requirement).name)
        except metadata.PackageNotFoundError:
            return False
        return True

    optional: dict[str, list[str]] = project["optional-dependencies"]
    return [extra for extra in extras if not any(map(installed, optional[extra]))]


@dataclass(frozen=True)
class Run:
    """What one run of a snippet did: its output and the HTTP requests it made."""

    stdout: str
    requests: list[dict[str, Any]]

    def model_calls(self) -> list[dict[str, Any]]:
        """The requests to a model API (the trace exporter's are left out)."""
        return [r for r in self.requests if not r["url"].endswith("/traces/ingest")]


def run(
    snippet: Snippet,
    where: Path,
    command: Sequence[str],
    *,
    stdin: str = "",
    tools: Mapping[str, Any] | None = None,
) -> Run:
    """Run the runner with ``command`` in ``where``; fail with its output if it fails."""
    assert snippet.extras is not None, f"{snippet}: no install line (pip install ...) before it"
    log = where / "requests.jsonl"
    log.unlink(missing_ok=True)
    config = {"allowed": sorted(allowed(snippet.extras)), "log": str(log), "tools": tools or {}}
    (where / "runner.json").write_text(json.dumps(config), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(PROVIDER_SETTINGS)} | KEYS
    done = subprocess.run(  # noqa: S603 - our own runner, on the repository's own snippet
        [sys.executable, str(RUNNER), str(where / "runner.json"), *command],
        cwd=where,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode:
        pytest.fail(f"{snippet} failed:\n{done.stderr[-4000:]}", pytrace=False)
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    requests = [json.loads(line) for line in lines]
    unanswered = [r["url"] for r in requests if r["status"] >= 400]
    assert not unanswered, f"{snippet} sent requests the fake could not answer: {unanswered}"
    return Run(done.stdout, requests)


def user_texts(body: Mapping[str, Any]) -> Iterator[str]:
    """The text of every user message of a Messages API or Responses API request body."""
    for message in [*body.get("messages", []), *body.get("input", [])]:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            yield from (block["text"] for block in content if "text" in block)


def run_python(snippet: Snippet, where: Path) -> Run:
    """Run a Python block as a script, its tracebacks pointing at the page's own lines."""
    code = where / "snippet.py"
    code.write_text("\n" * (snippet.line - 1) + snippet.body, encoding="utf-8")
    done = run(snippet, where, ["code", str(code), snippet.page])
    calls = done.model_calls()
    assert calls, f"{snippet} called no model"
    first = next(user_texts(calls[0]["body"]), None)
    assert first is not None, f"{snippet}: its first model call carries no user message"
    assert all(first in user_texts(call["body"]) for call in calls[1:]), (
        f"{snippet}: a later model call lost the conversation's first message {first!r}"
    )
    return done


def transcript(path: Path) -> None:
    """A Claude Code session transcript: a rule from the user, then tool turns."""
    rows: list[dict[str, Any]] = []
    for n in range(8):
        text = f"Step {n}: fix the billing test." + (f" {RULE}" if n == 1 else "")
        rows.append({"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": text}})
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {"n": n}}
        message = {"id": f"msg_{n}", "role": "assistant", "content": [call]}
        rows.append({"type": "assistant", "uuid": f"a{n}", "message": message})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "def f(): ...\n"}
        answer = {"role": "user", "content": [result]}
        rows.append({"type": "user", "uuid": f"r{n}", "message": answer})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def run_claude_code_settings(snippet: Snippet, where: Path) -> list[Run]:
    """Each hook command of a settings block, on PreCompact then SessionStart(compact)."""
    hooks = json.loads(snippet.body)["hooks"]
    assert set(hooks) == {"PreCompact", "SessionStart"}, f"{snippet}: hooks {sorted(hooks)}"
    session = where / "session.jsonl"
    transcript(session)
    runs: list[Run] = []
    for event in ("PreCompact", "SessionStart"):
        payload = {"session_id": "s1", "transcript_path": str(session), "hook_event_name": event}
        payload |= {"trigger": "auto"} if event == "PreCompact" else {"source": "compact"}
        for entry in hooks[event]:
            for hook in entry["hooks"]:
                argv = shlex.split(hook["command"])
                assert argv[:2] == ["python", "-m"], f"{snippet}: {hook['command']!r}"
                tool = {SUMMARIZER_TOOL: {"constraints": [RULE]}}
                runs.append(run(snippet, where, argv[1:], stdin=json.dumps(payload), tools=tool))
    return runs


@pytest.mark.parametrize("snippet", SNIPPETS, ids=str)
def test_snippet_runs_as_written(snippet: Snippet, tmp_path: Path) -> None:
    """The block runs after its install line alone, its model calls answered by the fake."""
    assert snippet.extras is not None, f"{snippet}: no install line (pip install ...) before it"
    if missing := absent(snippet.extras):
        pytest.skip(f"needs the {missing} extra; CI's framework step (.ci/run 4/5) has it")
    if snippet.lang == "python":
        run_python(snippet, tmp_path)
    elif snippet.lang == "json" and "claude-code" in snippet.info:
        compacted, started = run_claude_code_settings(snippet, tmp_path)
        offered = [[t["name"] for t in c["body"].get("tools", [])] for c in compacted.model_calls()]
        assert offered, "PreCompact did not ask Claude (faked) for the summary"
        assert all(SUMMARIZER_TOOL in names for names in offered), offered
        context = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
        assert RULE in context
    else:
        pytest.fail(f"{snippet}: no runner for a ```{snippet.lang} {snippet.info} block")


def test_every_adapter_has_a_snippet_with_its_install_line() -> None:
    """The README shows a block per adapter, each after the install line of its extra."""
    readme = [s for s in SNIPPETS if s.page == "README.md"]
    shown = {s.info.removeprefix("file=examples/integrations/"): s.extras for s in readme}
    assert shown == {
        "langchain_agent.py": ("langchain",),
        "pydantic_ai_agent.py": ("pydantic-ai",),
        "openai_agents_session.py": ("openai-agents",),
        "claude-code-settings.json": (),
    }
