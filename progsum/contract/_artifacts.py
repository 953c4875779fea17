"""The artifact trail of a folded segment: files, commands, errors, ids and sources from tool calls.

Pure and deterministic. `trail(segment)` reads the segment's tool calls and the results that follow
them (paired by position, since real logs reuse call ids) and returns one `Artifact` per thing
touched, in its last known state. Each artifact is one ``key: value`` line whose key is the exact
path, command, id or URL, so a keyed field supersedes an entry when the state changes::

    src/app.py: modified (Edit, 3 edits)
    pytest -q: exit 1, 2 failed, 5 passed
    error in pytest -q: AssertionError: expected 3; resolved at message 41
    reservation_id ZFA04Y: returned by get_reservation_details, status cancelled
    https://docs.example.com/api: fetched (WebFetch)

Read formats (see docs/artifacts.md): Claude Code tools (Read, Write, Edit, MultiEdit,
NotebookEdit, Bash, Grep, Glob, WebFetch, WebSearch, Task), SWE-agent text actions (a command in
the last fenced or ``<command>`` block of an assistant message, its observation in the next
tool-authored user message) and its function-calling tools (``open``, ``create``, ``edit``,
``insert``, ``str_replace_editor``, ``bash``, ``submit``), and any OpenAI or Anthropic function
call: paths, commands and URLs by argument name, ids in arguments and JSON results.

Calls are paired with their results in `progsum.contract._steps`, and ids are read from JSON in
`progsum.contract._identifiers`; this module folds those steps into the trail and says what each
trail line is worth when the header is over budget (`weight`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from progsum.contract._git import effects
from progsum.contract._identifiers import digest, ids_in
from progsum.contract._planning import tool_names
from progsum.contract._steps import Step, steps
from progsum.judge._lexicon import words
from progsum.summary._request import Segment

__all__ = [
    "ARTIFACT_KINDS",
    "MAX_KEY_CHARS",
    "MAX_VALUE_CHARS",
    "Artifact",
    "ArtifactKind",
    "essential",
    "expendable",
    "trail",
    "weight",
]

ArtifactKind: TypeAlias = Literal["files", "commands", "errors", "identifiers", "sources"]
ARTIFACT_KINDS: tuple[ArtifactKind, ...] = ("files", "commands", "errors", "identifiers", "sources")
"""The artifact kinds, as named in `progsum.summary._schema.EXTRACTORS`."""

MAX_KEY_CHARS = 160
"""Longest key (a path, command, id or URL) kept whole; longer ones end in ``…``."""
MAX_VALUE_CHARS = 160
"""Longest state text after the key."""
_STATUS_CHARS = 30
"""Room kept after an error line for its resolution."""
PASSED_RANK = 4
"""The rank of a command that ran without failing."""
DIGEST_CHARS = 260
"""Longest state text of a record's id line, with the record's values
(`progsum.contract._identifiers.digest`)."""
MAX_RESULT_IDS = 16
"""Most ids taken from one tool result (a search listing forty flights yields the first 16)."""


@dataclass(frozen=True, slots=True)
class Artifact:
    """One entry of the trail.

    Attributes:
        kind: Which extractor kind it is (`ARTIFACT_KINDS`).
        key: The exact path, command, id or URL (one line).
        value: Its last known state (one line).
        at: Log index of the message that gave the last state.
        rank: Importance, lowest first: changed files and unresolved errors, failed commands,
            ids, passing commands, resolved errors, sources and listed numbers (flight numbers
            of a search result), files only read, searches.
    """

    kind: ArtifactKind
    key: str
    value: str
    at: int
    rank: int

    @property
    def text(self) -> str:
        """The item line, ``key: value``."""
        return f"{self.key}: {self.value}"


# -- folding steps into a state --------------------------------------------------------------------

# Tools known by name (case-folded): Claude Code's, SWE-agent's and common file and shell tools.
# These are API names, matched exactly, each read by its own arguments; a tool of another name
# is read by the words in its name (the lexicon's ``tools``, `_file_verb`).
_READ_TOOLS = frozenset({"read", "open", "view", "cat", "read_file", "view_file"})
_CREATE_TOOLS = frozenset({"create", "write", "create_file", "write_file"})
_EDIT_TOOLS = frozenset(
    {"edit", "multiedit", "notebookedit", "insert", "str_replace", "apply_patch", "edit_file"}
)
_SEARCH_TOOLS = frozenset({"grep", "glob", "find_file", "search_file", "search_dir", "ls"})
_SHELL_TOOLS = frozenset({"bash", "shell", "run", "execute", "run_command", "terminal"})
_PATH_ARGS = ("file_path", "notebook_path", "path", "filename", "file")
_DIFF = re.compile(r"^diff --git a/\S+ b/(\S+)$", re.MULTILINE)
_OPEN_FILE = re.compile(r"^\(Open file: (.+)\)$", re.MULTILINE)
_EXIT = re.compile(r"^Exit code (\d+)")
_TALLY_WORD = r"(?:passed|failed|failures?|errors?|skipped|tests?|doctests?|xfailed|xpassed)"
_TALLY_LINE = re.compile(
    r"\b\d+ (?:passed|failed|failures?)\b|\bRan \d+ tests?\b|\b\d+ tests?, \d+ failures?"
)
_TALLY = re.compile(rf"\b(\d+) ({_TALLY_WORD})\b")
_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception)\b:?|\*\* \(\w+|error[:\[]|fatal:|FAILED\b|E\s{2,}|"
    r"bash: .*: command not found|.*: No such file or directory|<tool_use_error>)",
    re.IGNORECASE,
)
_TAG = re.compile(r"</?[a-z_]+>")


@dataclass
class _File:
    status: str
    tools: list[str]
    at: int
    edits: int = 0


@dataclass
class _Trail:
    files: dict[str, _File] = field(default_factory=dict)
    commands: dict[str, tuple[str, int, bool, int]] = field(default_factory=dict)
    """command → (state, at, failed, rank)."""
    errors: dict[str, tuple[str, int]] = field(default_factory=dict)
    """target → (first error line, at); a later success on the target resolves it."""
    resolved: dict[str, int] = field(default_factory=dict)
    ids: dict[str, tuple[str, int]] = field(default_factory=dict)
    sources: dict[str, tuple[str, int]] = field(default_factory=dict)
    open_file: str | None = None

    def touch(self, path: str, status: str, tool: str, at: int, *, edit: bool = True) -> None:
        entry = self.files.get(path)
        if entry is None:
            self.files[path] = _File(status, [tool], at, int(edit and status == "modified"))
            return
        if tool not in entry.tools:
            entry.tools.append(tool)
        entry.at = at
        if status == "read":
            return
        if status == "modified":
            entry.edits += edit
            if entry.status != "created":
                entry.status = "modified"
        else:
            entry.status = status

    def fail(self, target: str, output: str, at: int) -> None:
        self.errors[target] = (_first_error(output), at)
        self.resolved.pop(target, None)

    def succeed(self, target: str, at: int) -> None:
        """A success on ``target`` (or a command that runs a failed one again) resolves it."""
        for failed in self.errors:
            if failed == target or (len(failed) > 3 and failed in target):  # noqa: PLR2004
                self.resolved.setdefault(failed, at)  # the first step that fixed it


def trail(segment: Segment, planning: Collection[str] = tool_names()) -> tuple[Artifact, ...]:
    """The artifacts of ``segment``'s tool calls, each in its last known state.

    Ordered by kind (`ARTIFACT_KINDS`), then by where each was last seen. Calls of the planning
    tools named in ``planning`` (case-folded; default: the known ones) are the work ledger's
    (`progsum.contract._planning`), not artifacts.
    """
    state = _Trail()
    for step in steps(segment):
        if step.tool.casefold() not in planning:
            _fold(state, step)
    return _artifacts(state)


def _fold(state: _Trail, step: Step) -> None:
    tool = step.tool.casefold()
    args = step.args
    footer = _OPEN_FILE.findall(step.output)
    path = _path(args) or (state.open_file if tool == "edit" else None)
    if tool == "str_replace_editor":
        sub = str(args.get("command", "view"))
        tool = {"view": "view", "create": "create", "undo_edit": "edit"}.get(sub, "edit")
    elif path is not None:
        tool = _file_verb(tool)
    failed = step.error or _failed_edit(step.output)
    if path is not None and tool in _READ_TOOLS | _CREATE_TOOLS | _EDIT_TOOLS:
        if failed:
            state.fail(path, step.output, step.at)
        else:
            state.touch(path, _file_status(tool, step.output), step.tool, step.at)
            state.succeed(path, step.at)
        if tool in ("open", "create", "view"):
            state.open_file = path
    elif tool in _SHELL_TOOLS or (tool == "submit"):
        _command(state, step)
        for changed in _DIFF.findall(step.output):
            path = _one_line(changed, MAX_KEY_CHARS)
            state.touch(path, "modified", f"{step.tool} diff", step.at, edit=False)
    elif tool in _SEARCH_TOOLS:
        key = _search_key(step.tool, args)
        state.commands[key] = (_search_state(step.output), step.at, False, 8)
    elif tool in ("webfetch", "fetch", "web_fetch") or "url" in args:
        url = _one_line(str(args.get("url", "")), MAX_KEY_CHARS)
        if url:
            state.sources[url] = ("fetch failed" if failed else f"fetched ({step.tool})", step.at)
    elif "query" in args and any(word in tool for word in words("tools.search")):
        key = _one_line(f"search {_quoted(args['query'])}", MAX_KEY_CHARS)
        state.sources[key] = (f"searched ({step.tool})", step.at)
    elif tool == "task":
        what = _one_line(str(args.get("description") or args.get("prompt") or ""), 80)
        key = f"Task {_quoted(what)}"
        state.commands[key] = ("failed" if failed else "completed (subagent)", step.at, failed, 4)
    if footer and tool not in ("open", "create"):
        state.open_file = state.open_file or footer[-1]
    _identifiers(state, step, failed=failed)


def _file_verb(tool: str) -> str:
    """A file tool's name as a known verb (``save_report`` → ``create``), else unchanged."""
    if tool in _READ_TOOLS | _CREATE_TOOLS | _EDIT_TOOLS:
        return tool
    for verb in ("edit", "create", "read"):  # the lexicon's tools.edit, tools.create, tools.read
        if any(word in tool for word in words(f"tools.{verb}")):
            return verb
    return tool


def _path(args: Mapping[str, object]) -> str | None:
    for name in _PATH_ARGS:
        value = args.get(name)
        if isinstance(value, str) and value.strip() and "\n" not in value:
            return _one_line(value, MAX_KEY_CHARS)
    return None


def _failed_edit(output: str) -> bool:
    head = output.lstrip()[:200]
    return head.startswith("<tool_use_error>") or "Your proposed edit has introduced" in head


def _file_status(tool: str, output: str) -> str:
    if tool in _READ_TOOLS:
        return "read"
    if tool in _CREATE_TOOLS:
        return "modified" if "has been updated" in output[:300] else "created"
    return "modified"


def _command(state: _Trail, step: Step) -> None:
    raw = str(step.args.get("command") or step.args.get("cmd") or step.args.get("input") or "")
    if step.tool.casefold() == "submit":
        raw = raw or "submit"
    if not raw.strip():
        return
    key = _command_key(raw)
    output = step.output
    exit_match = _EXIT.match(output.lstrip())
    erred = any(_ERROR_LINE.match(line) for line in output.splitlines())
    code: int | None = None
    if exit_match is not None:
        code = int(exit_match.group(1))
    elif step.error:
        code = 1
    elif step.tool == "Bash":
        code = 0  # Claude Code reports a failed command as an error starting "Exit code N"
    failed = bool(code) if code is not None else erred
    tally = _tally(output)
    if code is None:
        value = f"error: {_first_error(output)}" if failed else (tally or "ran")
    else:
        detail = tally or (_first_error(output) if failed else "")
        value = f"exit {code}, {detail}" if detail else f"exit {code}"
    failing = _failing_tests(output) if failed else []
    if failing:
        value += "; failing: " + ", ".join(failing)
    state.commands[key] = (
        _one_line(value, MAX_VALUE_CHARS),
        step.at,
        failed,
        2 if failed else PASSED_RANK,
    )
    if failed:
        state.fail(key, output, step.at)
    else:
        state.succeed(key, step.at)
    _shell_files(state, raw, step, failed=failed)


def _first_error(output: str) -> str:
    """The line that says what went wrong: an exception or error line, else the first line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    lines = [line for line in lines if not _EXIT.match(line) and not line.startswith("(Open file")]
    exceptions = [line for line in lines if re.match(r"[\w.]*(?:Error|Exception)\b", line)]
    chosen = (
        exceptions[-1]
        if exceptions
        else next(
            (line for line in lines if _ERROR_LINE.match(line)), lines[0] if lines else "failed"
        )
    )
    chosen = re.sub(r"^E\s+", "", chosen)  # pytest's marker for the failing assertion
    return _one_line(_TAG.sub("", chosen), MAX_VALUE_CHARS)


_FAILING = re.compile(
    r"^FAILED (?P<pytest>\S+::\S+)|"  # pytest's short summary
    r"^(?:FAIL|ERROR): (?P<case>\w+) \((?P<where>[\w.]+)\)|"  # unittest
    r"^--- FAIL: (?P<go>\S+)",  # go test
    re.MULTILINE,
)


def _failing_tests(output: str) -> list[str]:
    """The tests a run's output reports failing, each once, in order (the runners' own lines)."""
    found: dict[str, None] = {}
    for match in _FAILING.finditer(output):
        name = match["pytest"] or match["go"] or f"{match['where']}.{match['case']}"
        found[name] = None
    return list(found)


def _tally(output: str) -> str:
    """Test counts from the last line that reports them ("2 failed, 5 passed")."""
    lines = [line for line in output.splitlines() if _TALLY_LINE.search(line)]
    if not lines:
        return ""
    return ", ".join(f"{n} {word}" for n, word in _TALLY.findall(lines[-1]))


def _command_key(raw: str) -> str:
    lines = [line.strip() for line in raw.strip().splitlines() if line.strip()]
    key = _balanced(_one_line(lines[0], MAX_KEY_CHARS - 16))  # room for the line count
    if len(lines) > 1:
        key += f" (+{len(lines) - 1} lines)"
    return _one_line(key, MAX_KEY_CHARS)


def _shell_files(state: _Trail, raw: str, step: Step, *, failed: bool) -> None:
    """What a shell command did to files and the repository (`progsum.contract._git.effects`).

    Files it deletes (``rm``, ``git rm``) or creates (``touch``), files put back as committed
    (``git restore``, ``git checkout --``: an edit no longer in place), branches it created and
    the commits git reported. A command that failed changed nothing.
    """
    if failed:
        return
    done = effects(raw, step.output)
    for path in done.deleted:
        state.touch(_one_line(path, MAX_KEY_CHARS), "deleted", step.tool, step.at)
    for path in done.created:
        state.touch(_one_line(path, MAX_KEY_CHARS), "created", step.tool, step.at)
    for path, how in done.restored:
        state.touch(_one_line(path, MAX_KEY_CHARS), "reverted", how, step.at)
    for name, how in done.branches:
        state.ids[f"branch {name}"] = (f"created ({how})", step.at)
    for sha, branch, subject in done.commits:
        state.ids[f"commit {sha}"] = (f"on {branch}, {subject}", step.at)


def _search_key(tool: str, args: Mapping[str, object]) -> str:
    pattern = args.get("pattern") or args.get("file_name") or args.get("search_term") or ""
    where = args.get("path") or args.get("dir") or ""
    key = f"{tool} {_quoted(pattern)}"
    if where:
        key += f" in {where}"
    return _one_line(key, MAX_KEY_CHARS)


def _search_state(output: str) -> str:
    if re.match(r"\s*No (files|matches) found", output):
        return "no match"
    lines = [line for line in output.splitlines() if line.strip()]
    return f"{len(lines)} lines of results"


# -- identifiers -----------------------------------------------------------------------------------


def _identifiers(state: _Trail, step: Step, *, failed: bool) -> None:
    for kind, value in ids_in(step.args, ""):
        state.ids[f"{kind} {value}"] = (f"used by {step.tool}", step.at)
    if failed:
        return
    try:
        result = json.loads(step.output)
    except ValueError:
        return
    status = result.get("status") if isinstance(result, Mapping) else None
    found = 0
    for kind, value in ids_in(result, ""):
        key = f"{kind} {value}"
        if key in state.ids and state.ids[key][0].startswith("used by") and found:
            continue
        text = f"returned by {step.tool}"
        if isinstance(status, str) and found == 0 and len(status) < _STATUS_CHARS:
            text += f", status {status}"
        if found == 0 and isinstance(result, Mapping):
            values = digest(result, value, str(status))
            text = _one_line(f"{text}; {values}", DIGEST_CHARS) if values else text
        state.ids[key] = (text, step.at)
        found += 1
        if found >= MAX_RESULT_IDS:
            break


# -- artifacts -------------------------------------------------------------------------------------


def _artifacts(state: _Trail) -> tuple[Artifact, ...]:
    found: list[Artifact] = []
    for path, entry in state.files.items():
        changed = entry.status != "read"
        tools = ", ".join(t for t in entry.tools if not changed or t.casefold() not in _READ_TOOLS)
        edits = f", {entry.edits} edits" if entry.edits > 1 else ""
        rank = 1 if changed else 7
        found.append(Artifact("files", path, f"{entry.status} ({tools}{edits})", entry.at, rank))
    for key, (value, at, _failed, rank) in state.commands.items():
        found.append(Artifact("commands", key, value, at, rank))
    for target, (line, at) in state.errors.items():
        done = state.resolved.get(target)
        what = _one_line(line, MAX_VALUE_CHARS - _STATUS_CHARS)
        if done is None:
            found.append(Artifact("errors", f"error in {target}", f"{what}; unresolved", at, 1))
        else:
            text = f"{what}; resolved at message {done + 1}"  # numbered from 1, as shown
            found.append(Artifact("errors", f"error in {target}", text, done, 5))
    for key, (value, at) in state.ids.items():
        listed = value.startswith("returned by") and not key.split()[0].endswith("_id")
        found.append(Artifact("identifiers", key, value, at, 6 if listed else 3))
    for key, (value, at) in state.sources.items():
        found.append(Artifact("sources", key, value, at, 6))
    cleaned = [
        Artifact(
            a.kind,
            _balanced(_one_line(a.key, MAX_KEY_CHARS)),
            _balanced(
                _one_line(a.value, DIGEST_CHARS if a.kind == "identifiers" else MAX_VALUE_CHARS)
            ),
            a.at,
            a.rank,
        )
        for a in found
    ]
    order = {kind: n for n, kind in enumerate(ARTIFACT_KINDS)}
    return tuple(sorted(cleaned, key=lambda a: (order[a.kind], a.at)))


_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def _one_line(text: str, limit: int) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``limit`` characters with ``…``."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


_PAIRS = (('"', '"'), ("`", "`"), ("(", ")"), ("[", "]"), ("{", "}"))


def _balanced(text: str) -> str:
    """``text`` cut before a quote, backtick or bracket it leaves open, with ``…``.

    The first line of ``git commit -m "$(cat <<'EOF'`` or a key cut at its length limit would
    otherwise read as a fragment; the cut keeps what precedes the open one, verbatim.
    """
    for _ in range(len(_PAIRS) * 4):
        for opener, closer in _PAIRS:
            open_count = text.count(opener)
            if opener == closer:
                if open_count % 2:
                    break
            elif open_count != text.count(closer):
                break
        else:
            return text
        at = text.rfind(opener) if opener == closer or open_count > text.count(closer) else -1
        if at < 0:
            at = text.rfind(closer)
        text = text[:at].rstrip(" =-,:;") + "…"
    return text


def _quoted(value: object) -> str:
    """``value`` on one line between double quotes, its characters as they are."""
    return f'"{_one_line(str(value), MAX_KEY_CHARS)}"'


_EXPENDABLE = re.compile(
    r"^read(?: under \S+)?(?: \(part \d+\))?: |"
    r": (?:read \(.*\)|no match|\d+ lines of results|exit 0|ran|completed \(subagent\)|"
    r"fetched \(.*\)|searched \(.*\))$|; resolved at message \d+$"
)


def expendable(text: str) -> bool:
    """Whether a trail line is worth least when the header is over budget.

    It is when it shows a file only read, a search, a command that passed without counts, an
    error already resolved, or a source.
    """
    return bool(_EXPENDABLE.search(text))


_LOOKED_UP = re.compile(r": (?:no match|\d+ lines of results|fetched \(.*\)|searched \(.*\))$")
"""A search or a fetched source: what the agent looked up, not what it worked on."""

_CHANGED = "(?:created|modified|deleted|reverted)"
"""The actions a file's trail line names when the session changed it (a read is not one)."""
_LISTED = rf"^{_CHANGED}(?: under \S+)?(?: \(part \d+\))?: "
"""A compact line listing the files one action changed (in a folder, in parts)."""

_ESSENTIAL = re.compile(
    rf": {_CHANGED} \(.*\)$|{_LISTED}|^\w+_id \S+(?:, \S+)*: |^(?:branch|commit) \S+: "
)


def essential(text: str) -> bool:
    """Whether a trail line is worth most: a file changed, an id, a branch or a commit."""
    return bool(_ESSENTIAL.search(text))


_LISTED_CHANGES = re.compile(_LISTED)

PROSE_TIER = 1
"""Where a summarizer's or a note's item ranks among the trail lines (`weight`)."""


def weight(text: str) -> int:
    """Drop order of a trail line when the header is over budget (0 first, 5 last).

    The working set outlasts every prose item (`PROSE_TIER`): only searches and fetched sources
    (0) go before the notes; then files only read, passing commands without counts and resolved
    errors (2); other commands, errors and ids (3); changed files and ``*_id`` ids (4); and a
    compact line of changed files (`progsum.judge._pathlist`) last (5), since it holds many files
    fitted to the trail's share of the header.
    """
    if _LOOKED_UP.search(text):
        return 0
    if _LISTED_CHANGES.match(text):
        return 5
    if essential(text):
        return 4
    return 2 if expendable(text) else 3
