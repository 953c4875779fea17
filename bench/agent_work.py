"""What a coding agent can continue from after compaction: files, values, open threads and tasks.

    python bench/agent_work.py /work/shared/data /work/shared/data-extra
    python bench/agent_work.py DATA [DATA ...] --windows 8000 32000 --tau 200

Data, read in place and never copied (sources and licences: bench/agent_work.sources.md): every
conversation of every Claude Code log under ``DATA/claude_code`` (main conversations and subagent
sidechains; Claude Code's own compaction calls, ``agent-acompact-*``, are not agent work), the
SWE-agent trajectories under ``DATA/swe_agent`` and the first ``--tau`` τ-bench airline records
under ``DATA/tau_bench``. Any number of data folders may be given; a missing subfolder is skipped.

Three measures, all deterministic (the offline `ExtractiveSummarizer`, the shipped coding-agent
schema, customer-support for τ-bench; each assistant message reported with the size of the request
that produced it, as `usage_reports` does):

* **Real compaction boundaries.** Where a Claude Code log carries Claude Code's own compaction
  (`progsum.replay._importers.claude_code_summaries`), the prefix it replaced is replayed in the
  smallest window whose input part holds Claude Code's summary (`retention_agents.summary_window`),
  so progsum's whole request is no larger than that summary alone. Both sides are scored on the
  files an Edit/Write/MultiEdit/NotebookEdit call changed before the boundary and the paths and
  ids the session's tool calls reuse after it (`retention_agents._reused`).
* **Every compaction at 8k and 32k windows.** Each conversation is replayed a message at a time
  with ``maybe_compact``; at every compaction the request the engine then sends is checked: the
  files changed before the boundary it names, and the open threads of the summary that are an
  assistant's narration ("Let me check …"): taken from a message the assistant wrote (the log's
  own author, else the role), read here, not from progsum's bookkeeping, and not a question (an
  assistant's question waits for the user's answer).
* **Planning-tool fixtures** (bench/planning_sessions.py, built from the tools' documented
  inputs because no available transcript carries a planning tool): at every compaction in 4k
  and 8k windows, each task of the work ledger must have the status the fixture's story gives it
  as of the boundary.

A file is *named* when the request holds its path verbatim, its path under the session's project
root (the log's ``cwd``), or a compact line from which a reader recovers it
(`retention_agents.recovered`). Values are credited the same way on both sides. A request over
the policy's input window names nothing. Written for this benchmark, not taken from progsum.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from planning_sessions import CHECKLIST_SCHEMA, Session, sessions
from retention_agents import (
    _reused,
    boundaries,
    recovered,
    request,
    request_size,
    request_tokens,
    sent,
    summary_window,
)
from shared_data import agent_files, agent_logs, present
from usage_reports import appended

from progsum import Compactor, ConversationState, Policy, load_schema
from progsum.errors import ConfigError
from progsum.messages._transcript import source_text
from progsum.policy._tokens import HeuristicCounter
from progsum.replay._importers import Imported, read_conversations
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summary._schema import BaseSummary, spec_of

WINDOWS = (8_000, 32_000)
"""Windows of the replay of real transcripts, in tokens."""
FIXTURE_WINDOWS = (4_000, 8_000)
"""Windows of the planning-tool fixtures: small, so each compacts several times."""
DEFAULT_TAU = 200
"""τ-bench records read per file by default (all of the airline set)."""
_CHANGES = {"edit", "write", "multiedit", "notebookedit"}
_EDITOR_CHANGES = {"create", "str_replace", "insert"}


@dataclass(frozen=True, slots=True)
class Conversation:
    """One real agent conversation, with its kind, project root and schema."""

    set: str
    imported: Imported
    root: str
    schema: str


def conversations(folders: Sequence[Path], tau: int) -> Iterator[Conversation]:
    """Every agent conversation under ``folders`` (see the module docstring)."""
    for data in folders:
        sets = present(data, ("claude_code", "swe_agent", "tau_bench"))
        for file in agent_files(data, "claude_code") if "claude_code" in sets else []:
            if file.name.startswith("agent-acompact"):
                continue
            root = _cwd(file)
            for imported in read_conversations(file):
                yield Conversation("claude-code", imported, root, "coding-agent")
        for log in agent_logs(data, "swe_agent") if "swe_agent" in sets else []:
            for imported in log.conversations:
                yield Conversation("swe-agent", imported, "", "coding-agent")
        for log in agent_logs(data, "tau_bench") if "tau_bench" in sets else []:
            for imported in log.conversations[:tau]:
                yield Conversation("tau-bench", imported, "", "customer-support")


def _cwd(file: Path) -> str:
    """The project root a Claude Code log names (its first ``cwd``), or ''."""
    with file.open(encoding="utf-8") as rows:
        for line in rows:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("cwd"), str):
                return str(row["cwd"]).rstrip("/")
    return ""


def changed_files(messages: Sequence[Any]) -> list[str]:
    """Files a structured call of ``messages`` changed, in order, each once.

    Claude Code's Edit/Write/MultiEdit/NotebookEdit and the editor's create/str_replace/insert
    (SWE-agent, OpenHands), with their ``file_path``/``notebook_path``/``path`` argument.
    """
    found: dict[str, None] = {}
    for name, args in _calls(messages):
        folded = name.casefold()
        path = args.get("file_path") or args.get("notebook_path") or args.get("path")
        if not isinstance(path, str) or not path.strip():
            continue
        if folded in _CHANGES or (
            folded == "str_replace_editor" and args.get("command") in _EDITOR_CHANGES
        ):
            found[path.strip()] = None
    return list(found)


def _calls(messages: Sequence[Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(tool name, arguments)`` of every Anthropic ``tool_use`` and OpenAI tool call."""
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    args = block.get("input")
                    yield str(block.get("name")), args if isinstance(args, Mapping) else {}
        for tool_call in message.get("tool_calls") or ():
            function = tool_call.get("function") or {}
            try:
                args = json.loads(function.get("arguments") or "{}")
            except ValueError:
                args = {}
            yield str(function.get("name")), args if isinstance(args, Mapping) else {}


def named(text: str, wanted: Sequence[str], root: str) -> set[str]:
    """The paths or values of ``wanted`` a reader of ``text`` recovers (the module docstring)."""
    found = recovered(text, wanted)
    prefix = root + "/"
    for value in wanted:
        if value in found or not root or not value.startswith(prefix):
            continue
        relative = value[len(prefix) :]
        alone = re.search(rf"(?<![\w./-]){re.escape(relative)}(?![\w/-])", text)
        if relative in text and ("/" in relative or alone):
            found.add(value)
    return found


@dataclass
class Tally:
    """Counts of one set at one window."""

    conversations: int = 0
    boundaries: int = 0
    files: int = 0
    files_named: int = 0
    open_items: int = 0
    narrations: int = 0
    over: int = 0
    tokens: list[int] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)


def _compactor(schema: type[BaseSummary], window: int, counter: HeuristicCounter) -> Compactor[Any]:
    return Compactor(
        policy=Policy(context_window=window),
        summarizer=ExtractiveSummarizer(),
        schema=schema,
        counter=counter,
    )


def replay(conversation: Conversation, window: int, tally: Tally) -> None:
    """Replay one conversation, checking the request at every compaction (module docstring)."""
    imported = conversation.imported
    counter = HeuristicCounter()
    compactor = _compactor(load_schema(conversation.schema), window, counter)
    authors = imported.authors
    state: ConversationState[Any] = ConversationState()
    seen: set[str] = set()
    tally.conversations += 1
    for index, message in enumerate(imported.messages):
        author = authors[index] if authors else None
        events = len(state.events)
        state = appended(
            compactor, state, message, author=author, measure=lambda s: request_size(s, counter)
        )
        if not any(e.outcome == "compacted" for e in state.events[events:]):
            continue
        tally.boundaries += 1
        system, rendered = request(state)
        text = system + "\n" + source_text(rendered)
        tokens = request_tokens(system, rendered, counter)
        over = tokens > (compactor.policy.input_window or 0)
        tally.over += over
        tally.tokens.append(tokens)
        files = changed_files(imported.messages[: state.cutoff])
        tally.files += len(files)
        tally.files_named += 0 if over else len(named(text, files, conversation.root))
        _open_threads(state, imported, tally, seen)


def _open_threads(
    state: ConversationState[Any], imported: Imported, tally: Tally, seen: set[str]
) -> None:
    """Count the summary's open threads, and those an assistant wrote (each item once)."""
    summary = state.summary
    if summary is None:
        return
    target = spec_of(cast("type[BaseSummary]", type(summary))).extracting("questions")
    if target is None:
        return
    for item in getattr(summary, target.name):
        if item.id in seen:
            continue
        seen.add(item.id)
        tally.open_items += 1
        if not item.text.rstrip().endswith("?") and _assistants(item.text, item.source, imported):
            tally.narrations += 1
            if len(tally.examples) < 3:  # noqa: PLR2004 - a few to read
                tally.examples.append(item.text[:120])


def _assistants(text: str, source: tuple[int, int], imported: Imported) -> bool:
    """Whether the message an item was taken from is the assistant's (its text is there)."""
    start, end = max(0, source[0]), min(source[1], len(imported.messages))

    def role(at: int) -> object:
        author = imported.authors[at] if imported.authors else None
        return author or imported.messages[at].get("role")

    if end - start == 1:
        return role(start) == "assistant"
    holders = [at for at in range(start, end) if text in source_text([imported.messages[at]])]
    return bool(holders) and all(role(at) == "assistant" for at in holders)


def native(folders: Sequence[Path]) -> list[dict[str, Any]]:
    """Claude Code's own compactions beside progsum's at no larger size (module docstring)."""
    counter = HeuristicCounter()
    rows = []
    for data in folders:
        for file, conversation, summary, before, after in boundaries(data):
            root = _cwd(file)
            values, files = _reused(before, after), changed_files(before)
            size = counter.count_text(summary.text)
            ours = sent(conversation, summary.at, "coding-agent", summary_window(size))
            text = "" if ours.over else ours.text
            rows.append(
                {
                    "name": f"{conversation.name} @{summary.at}",
                    "summary_tokens": size,
                    "tokens": ours.tokens,
                    "over": ours.over,
                    "values": len(values),
                    "values_claude": len(named(summary.text, values, root)),
                    "values_progsum": len(named(text, values, root)),
                    "files": len(files),
                    "files_claude": len(named(summary.text, files, root)),
                    "files_progsum": len(named(text, files, root)),
                }
            )
    return rows


def fixtures(windows: Sequence[int]) -> list[dict[str, Any]]:
    """Every planning-tool fixture's ledger checked at every compaction (module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checklist-agent.toml"
        path.write_text(CHECKLIST_SCHEMA, encoding="utf-8")
        checklist: type[BaseSummary] | None
        try:
            checklist = load_schema(path)
        except ConfigError as error:  # a progsum that reads no planning tools (the "before" run)
            if "planning_tools" not in str(error):
                raise
            checklist = None
        coding = load_schema("coding-agent")
        return [
            _fixture(session, window, coding)
            for window in windows
            for session in sessions()
            if session.tool != "set_checklist"
        ] + [
            _fixture(session, window, checklist)
            for window in windows
            for session in sessions()
            if session.tool == "set_checklist" and checklist is not None
        ]


def _fixture(session: Session, window: int, schema: type[BaseSummary]) -> dict[str, Any]:
    counter = HeuristicCounter()
    compactor = _compactor(schema, window, counter)
    state: ConversationState[Any] = ConversationState()
    row: dict[str, Any] = {"tool": session.tool, "window": window}
    row.update(boundaries=0, tasks=0, right=0)
    wrong: list[str] = []
    for message in session.messages:
        events = len(state.events)
        state = appended(compactor, state, message, measure=lambda s: request_size(s, counter))
        if not any(e.outcome == "compacted" for e in state.events[events:]):
            continue
        truth = [session.truth[i] for i in sorted(session.truth) if i < state.cutoff]
        if not truth:
            continue
        row["boundaries"] += 1
        work = getattr(state.summary, "work", None)
        ledger = {t.text: t.status for t in work.tasks} if work is not None else {}
        for task, status in truth[-1].items():
            row["tasks"] += 1
            if ledger.get(task) == status:
                row["right"] += 1
            elif len(wrong) < 2:  # noqa: PLR2004 - a few to read
                wrong.append(f"@{state.cutoff} {task}: {ledger.get(task)} (want {status})")
    row["wrong"] = "; ".join(wrong)
    return row


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "-"


def print_tables(
    tallies: Mapping[tuple[str, int], Tally],
    natives: Sequence[Mapping[str, Any]],
    fixture_rows: Sequence[Mapping[str, Any]],
) -> None:
    """The three tables of the module docstring."""
    print("Every compaction of real agent transcripts (the request right after it):\n")
    print(
        "| set | window | convs | compactions | files changed before, named after | "
        "open threads | assistant narrations among them | requests over | mean request tokens |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, window), t in sorted(tallies.items()):
        mean = sum(t.tokens) / len(t.tokens) if t.tokens else 0
        print(
            f"| {name} | {window:,} | {t.conversations} | {t.boundaries} | {t.files_named} of "
            f"{t.files} ({_share(t.files_named, t.files)}) | {t.open_items} | {t.narrations} | "
            f"{t.over} | {mean:,.0f} |"
        )
    for (name, window), t in sorted(tallies.items()):
        for example in t.examples:
            print(f"  narration ({name}, {window:,}): {example}")
    print("\nClaude Code's own compaction boundaries (progsum's whole request within its size):\n")
    print(
        "| session @ boundary | its summary, tokens | progsum's request, tokens | over | values "
        "reused after: Claude Code | progsum | files changed before: Claude Code | progsum |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in natives:
        print(
            f"| {r['name']} | {r['summary_tokens']:,} | {r['tokens']:,} | {int(r['over'])} | "
            f"{r['values_claude']} of {r['values']} | {r['values_progsum']} of {r['values']} | "
            f"{r['files_claude']} of {r['files']} | {r['files_progsum']} of {r['files']} |"
        )
    print("\nPlanning-tool fixtures (tasks in the right status at every compaction):\n")
    print("| tool | window | compactions | tasks checked | right | wrong (first) |")
    print("|---|---:|---:|---:|---:|---|")
    for r in fixture_rows:
        print(
            f"| {r['tool']} | {r['window']:,} | {r['boundaries']} | {r['tasks']} | "
            f"{r['right']} ({_share(r['right'], r['tasks'])}) | {r['wrong']} |"
        )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the tables for the data folders given."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("data", type=Path, nargs="+", help="data folders (the shared data, ...)")
    parser.add_argument("--windows", type=int, nargs="+", default=list(WINDOWS))
    parser.add_argument("--tau", type=int, default=DEFAULT_TAU, help="τ-bench records per file")
    parser.add_argument("--no-fixtures", action="store_true", help="skip the planning fixtures")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    found = list(conversations(args.data, args.tau))
    tallies: dict[tuple[str, int], Tally] = {}
    for window in args.windows:
        for conversation in found:
            tally = tallies.setdefault((conversation.set, window), Tally())
            replay(conversation, window, tally)
    natives = native(args.data)
    rows = [] if args.no_fixtures else fixtures(FIXTURE_WINDOWS)
    print_tables(tallies, natives, rows)
    print(f"ran in {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
