"""Agent transcripts: exact values reused after the compaction boundary, and the artifact trail.

    python bench/retention_agents.py /work/shared/data
    python bench/retention_agents.py DATA --windows 2000 4000 8000 --limit 50

Data (read in place, never copied): ``DATA/tau_bench/*.json`` (τ-bench records) and the long Claude
Code sessions ``DATA/claude_code/*.jsonl`` (main conversations with at least 100 messages; the
small fixtures and subagent sidechains are left out). A folder of test fixtures with the same layout
works too (tests/fixtures/bench).

For each conversation a boundary is chosen: τ-bench, the assistant message of the last gold write
action (``info.task.actions``); Claude Code, the first assistant message from the middle on. The
messages before it (the request that produced it) are appended one at a time and
``Compactor.maybe_compact`` runs after each, with the `ExtractiveSummarizer`, the header budget at
its default (``Policy(context_window=W)``) and the shipped schema of the domain (customer-support,
coding-agent); each assistant message comes with a usage report in this script's measure of tokens,
`request_size` of the rendered request (`usage_reports.replayed`; ``--no-usage``: none, the safety
margin in force throughout). The context is what the engine sends:
``render_openai``/``render_anthropic`` of the final state (cleared tool results are placeholders).
Then, against truncation at the same final size (the first message and the newest messages whose
estimated tokens fit):

* **values**: τ-bench, every scalar argument of the gold actions that occurs before the boundary;
  Claude Code, every path or bead id in a tool call after the boundary that also occurs before it.
  A value counts when it is a substring of the request's text (header and rendered messages), or
  a path recovered from it as below.
* **files**: Claude Code, every file an Edit/Write/MultiEdit call changed before the boundary
  (read from the raw tool calls here, not by progsum's trail); present when a reader can recover
  its full path from the text (`recovered`: verbatim, or a compact ``modified under /root/:
  dir/{a,b}`` line).
* **over budget**: requests whose tokens (`request_size`: the header once and each rendered
  message, counted here) exceed the policy's input window score 0. *engine: over* counts the
  states the engine itself reports over the window (`Compactor.overflow`, its own measure with
  margins).

`rows(data)` returns the same figures as dicts, for other benchmarks (bench/retention.py) to call.
`malformed(data)` counts trail items over all conversations of DATA that span lines, carry
markup, or are over-long. Everything is deterministic; the run time goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared_data import agent_conversations, agent_files, agent_logs, present, raw_records
from usage_reports import replayed

from progsum import (
    Compactor,
    ConversationState,
    Policy,
    load_schema,
    render_anthropic,
    render_openai,
)
from progsum.contract._artifacts import trail
from progsum.messages._formats import field as read
from progsum.messages._transcript import source_text
from progsum.policy._policy import MIN_WINDOW
from progsum.policy._tokens import HeuristicCounter, TokenCounter
from progsum.replay._importers import (
    CompactSummary,
    Imported,
    claude_code_summaries,
    read_conversations,
)
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.testing import segment_of

WINDOWS = (2_000, 4_000, 8_000)
"""Context windows measured, in tokens."""
LONG_SESSION = 100
"""Claude Code conversations with fewer messages are fixtures, not sessions."""
MAX_ITEM_CHARS = 400
"""A trail item longer than this is over-long (malformed)."""

_PATH = re.compile(r"(?<![\w/])(?:/|[\w.-]+/)[\w./-]*\w\.\w{1,6}\b")
_BEAD = re.compile(r"\b[a-z]{3,}-[a-z0-9]{3}(?:\.\d+)?\b")
_MARKUP = re.compile(r"</?[A-Za-z_][\w-]*>|```")
_CHANGES = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})


@dataclass(frozen=True, slots=True)
class Case:
    """One conversation cut at a boundary, with what must survive it."""

    name: str
    kind: str
    imported: Imported
    boundary: int
    values: tuple[str, ...]
    files: tuple[str, ...]


def cases(data: Path, limit: int | None = None) -> Iterator[Case]:
    """The τ-bench records and long Claude Code sessions under ``data``."""
    sets = present(data, ("tau_bench", "claude_code"))
    for log in agent_logs(data, "tau_bench") if "tau_bench" in sets else []:
        records = raw_records(log.file)
        for record, conversation in list(zip(records, log.conversations, strict=True))[:limit]:
            case = _tau(record, conversation)
            if case is not None:
                yield case
    for file in agent_files(data, "claude_code", sessions=True) if "claude_code" in sets else []:
        main = read_conversations(file)[0]
        if len(main.messages) >= LONG_SESSION or "fixtures" in str(data):
            yield _claude(main)


def _tau(record: Mapping[str, Any], imported: Imported) -> Case | None:
    actions = record["info"]["task"]["actions"]
    names = {a["name"] for a in actions}
    messages = imported.messages
    calls = [
        i
        for i, m in enumerate(messages)
        if any(c["function"]["name"] in names for c in m.get("tool_calls") or ())
    ]
    if not actions or not calls:
        return None
    boundary = calls[-1]
    before = source_text(messages[:boundary])
    values = sorted({v for a in actions for v in _scalars(a["kwargs"]) if v in before})
    return Case(imported.name, "tau-bench", imported, boundary, tuple(values), ())


def _claude(imported: Imported) -> Case:
    messages = imported.messages
    boundary = next(
        (
            i
            for i in range(len(messages) // 2, len(messages))
            if read(messages[i], "role") == "assistant"
        ),
        len(messages) // 2,
    )  # the prefix is the request that produced an assistant message: what the engine sends
    before, after = messages[:boundary], messages[boundary:]
    values, files = _reused(before, after), _changed(before)
    return Case(imported.name, "claude-code", imported, boundary, values, files)


def _reused(before: Sequence[Any], after: Sequence[Any]) -> tuple[str, ...]:
    """Paths and bead ids in the tool calls of ``after`` that ``before`` holds too."""
    early = source_text(before)
    later = "\n".join(_call_inputs(after))
    found = (*_PATH.findall(later), *_BEAD.findall(later))
    return tuple(sorted({v for v in found if v in early and len(v) > 4}))  # noqa: PLR2004


def _changed(before: Sequence[Any]) -> tuple[str, ...]:
    """The files an Edit/Write/MultiEdit/NotebookEdit call of ``before`` changed."""
    return tuple(
        sorted(
            {
                str(block["input"].get("file_path") or block["input"].get("notebook_path"))
                for m in before
                for block in _blocks(m)
                if block.get("type") == "tool_use" and block.get("name") in _CHANGES
            }
        )
    )


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _call_inputs(messages: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    for m in messages:
        for block in _blocks(m):
            if block.get("type") == "tool_use":
                yield json.dumps(block.get("input"), ensure_ascii=False)


def _scalars(value: object) -> Iterator[str]:
    if isinstance(value, Mapping):
        for inner in value.values():
            yield from _scalars(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _scalars(inner)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, str | int | float) and len(str(value)) >= 3:  # noqa: PLR2004
        yield str(value)


def _state(imported: Imported, messages: Sequence[Any]) -> ConversationState[Any]:
    authors = imported.authors[: len(messages)] if imported.authors else None
    return ConversationState().extend(messages, authors=authors)


@dataclass(frozen=True, slots=True)
class Sent:
    """progsum's side of a case: the final state, the request's text and its size."""

    compactor: Compactor[Any]
    state: ConversationState[Any]
    text: str
    tokens: int

    @property
    def over(self) -> bool:
        """The request is over the policy's input window (it then scores 0)."""
        return self.tokens > (self.compactor.policy.input_window or 0)

    def kept(self, wanted: Sequence[str]) -> int:
        """How many of ``wanted`` a reader recovers from the request (`recovered`); 0 when over."""
        return 0 if self.over else len(recovered(self.text, wanted))


def sent(imported: Imported, end: int, schema: str, window: int, *, usage: bool = True) -> Sent:
    """The request progsum sends after ``imported.messages[:end]``, replayed with the defaults.

    ``Policy(context_window=window)``, the `ExtractiveSummarizer` and the shipped ``schema``;
    with ``usage``, each assistant message comes with a usage report of `request_size`
    (`usage_reports.replayed`).
    """
    counter = HeuristicCounter()
    compactor: Compactor[Any] = Compactor(
        policy=Policy(context_window=window),
        summarizer=ExtractiveSummarizer(),
        schema=load_schema(schema),
        counter=counter,
    )
    prefix = imported.messages[:end]
    authors = imported.authors[:end] if imported.authors else None
    measure = (lambda s: request_size(s, counter)) if usage else None
    state = replayed(prefix, compactor, authors=authors, measure=measure)
    system, messages = request(state)
    tokens = request_tokens(system, messages, counter)
    return Sent(compactor, state, system + "\n" + source_text(messages), tokens)


def measure(case: Case, window: int, *, usage: bool = True) -> dict[str, object]:
    """Progsum and truncation on one case at one window, as the rendered requests."""
    schema = "customer-support" if case.kind == "tau-bench" else "coding-agent"
    ours = sent(case.imported, case.boundary, schema, window, usage=usage)
    prefix = case.imported.messages[: case.boundary]
    theirs = _truncated(prefix, ours.tokens, ours.compactor.counter)
    engine, _ = ours.compactor.count(ours.state)
    return {
        "name": case.name,
        "kind": case.kind,
        "window": window,
        "tokens": ours.tokens,
        "engine_tokens": engine,
        "over_budget": ours.over,
        "engine_over": ours.compactor.overflow(ours.state) is not None,
        "values": len(case.values),
        "values_progsum": ours.kept(case.values),
        "values_truncation": len(recovered(theirs, case.values)),
        "files": len(case.files),
        "files_progsum": ours.kept(case.files),
        "files_truncation": len(recovered(theirs, case.files)),
        "compactions": _compactions(ours.state),
    }


def _compactions(state: ConversationState[Any]) -> int:
    return sum(e.outcome == "compacted" for e in state.events)


def request(state: ConversationState[Any]) -> tuple[str, list[Any]]:
    """What ``state`` sends, rendered for its format: the system text apart, and the messages.

    Anthropic's request carries the header as its system text; OpenAI's chat carries it as a
    system message among the messages, so its system text apart is empty.
    """
    if state.format == "openai":
        return "", render_openai(state)
    return state.header, render_anthropic(state)[1]


def request_size(state: ConversationState[Any], counter: HeuristicCounter) -> int:
    """Estimated tokens of the request ``state`` sends (`request`, `request_tokens`)."""
    return request_tokens(*request(state), counter)


def request_tokens(header: str, messages: Sequence[Any], counter: HeuristicCounter) -> int:
    """Estimated tokens of a rendered request: its system text apart and every message as sent.

    Counted here from the rendered copy (cleared results show as placeholders), not from the
    state's bookkeeping, and checked against the policy's input window, the part of the window
    the engine budgets (the rest is reserved for the reply).
    """
    head = counter.count_text(header) + counter.message_tokens if header else 0
    return head + sum(counter.count_message(m) for m in messages)


_LISTED = re.compile(
    r"^(?:- \[\w+\] )?(?:created|modified|deleted|read)(?: under (/\S*/))?(?: \(part \d+\))?: "
    r"(\S.*)$",
    re.MULTILINE,
)


def recovered(text: str, files: Sequence[str]) -> set[str]:
    """The ``files`` (or values) whose full path a reader of ``text`` can recover.

    A file counts when its path is in the text verbatim, or when one header line lists it in
    the compact form: ``modified under /root/: dir/{a.ex,b.ex}, c.ex`` stands for
    ``/root/dir/a.ex``, ``/root/dir/b.ex`` and ``/root/c.ex`` (the root and the relative path in
    the same line; braces as in shell brace expansion). A relative path counts when a recovered
    full path ends with it, as a verbatim one counts when it is a substring. Written for this
    benchmark, not taken from progsum.
    """
    found = {f for f in files if f in text}
    for match in _LISTED.finditer(text):
        root = match.group(1) or ""
        depth, entry, entries = 0, "", []
        for char in match.group(2) + ",":
            if char == "," and depth == 0:
                entries.append(entry.strip())
                entry = ""
                continue
            depth += {"{": 1, "}": -1}.get(char, 0)
            entry += char
        for item in entries:
            stem, brace, names = item.partition("{")
            for name in names.rstrip("}").split(",") if brace else [""]:
                path = root + stem + name
                found.update(f for f in files if path == f or path.endswith("/" + f))
    return found


def _truncated(messages: Sequence[Any], size: int, counter: TokenCounter) -> str:
    """The first message and the newest ones whose estimated tokens fit in ``size``."""
    first = source_text(messages[:1])
    used = sum(counter.count_message(m) for m in messages[:1])
    tail: list[str] = []
    for message in reversed(messages[1:]):
        cost = counter.count_message(message)
        if used + cost > size:
            break
        used += cost
        tail.append(source_text([message]))
    return "\n".join([first, *reversed(tail)])


def rows(
    data: Path, windows: Sequence[int] = WINDOWS, limit: int | None = None, *, usage: bool = True
) -> list[dict[str, object]]:
    """One row per conversation and window: sizes, values and files kept by progsum/truncation."""
    found = list(cases(data, limit))
    return [measure(case, window, usage=usage) for window in windows for case in found]


def malformed(data: Path) -> dict[str, int]:
    """Trail items of every conversation under ``data``, and how many are malformed.

    Each conversation is folded whole; an item is malformed when it spans lines, carries markup
    or is over-long.
    """
    counts = {"conversations": 0, "items": 0, "multi_line": 0, "markup": 0, "over_long": 0}
    for _, imported in agent_conversations(data):
        state = _state(imported, imported.messages)
        segment = segment_of(state)
        counts["conversations"] += 1
        for artifact in trail(segment):
            text = artifact.text
            counts["items"] += 1
            counts["multi_line"] += "\n" in text or "\r" in text
            counts["markup"] += bool(_MARKUP.search(text))
            counts["over_long"] += len(text) > MAX_ITEM_CHARS
    return counts


def table(results: Sequence[Mapping[str, Any]]) -> str:
    """Per set and window: values and files kept (progsum vs truncation), tokens, over budget."""
    head = (
        "| set | window | convs | avg tokens | over budget | engine: over | values progsum "
        "| values truncation | files progsum | files truncation |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for row in results:
        groups.setdefault((row["kind"], row["window"]), []).append(row)
    for (kind, window), group in sorted(groups.items()):

        def share(key: str, total: str, group: Sequence[Mapping[str, Any]] = group) -> str:
            whole = sum(r[total] for r in group)
            return f"{sum(r[key] for r in group) / whole:.1%}" if whole else "-"

        tokens = sum(r["tokens"] for r in group) / len(group)
        over = sum(bool(r["over_budget"]) for r in group)
        engine = sum(bool(r["engine_over"]) for r in group)
        lines.append(
            f"| {kind} | {window:,} | {len(group)} | {tokens:,.0f} | {over} | {engine} "
            f"| {share('values_progsum', 'values')} | {share('values_truncation', 'values')} "
            f"| {share('files_progsum', 'files')} | {share('files_truncation', 'files')} |"
        )
    return "\n".join(lines)


def native(data: Path, *, usage: bool = True) -> list[dict[str, object]]:
    """Claude Code's own compactions beside progsum's at no larger size, one row each.

    For each compaction summary a long Claude Code session log holds
    (`progsum.replay._importers.claude_code_summaries`), the messages it replaced are the prefix
    and the messages up to the next summary are *after*. Values are read as for `_claude`:
    paths and bead ids in tool calls after that also occur in the prefix; files are those an
    Edit/Write call changed in the prefix. Claude Code's side is its summary's text, sized by
    the same counter; progsum's is the request it sends after replaying the prefix with the
    defaults (`measure`'s way) in the smallest window whose input part holds that summary
    (`summary_window`), so its request is no larger. A request over that window scores 0.
    """
    counter = HeuristicCounter()
    found: list[dict[str, object]] = []
    for _, conversation, summary, before, after in boundaries(data):
        values, files = _reused(before, after), _changed(before)
        size = counter.count_text(summary.text)
        window = summary_window(size)
        ours = sent(conversation, summary.at, "coding-agent", window, usage=usage)
        found.append(
            {
                "name": f"{conversation.name} @{summary.at}",
                "folded": summary.at,
                "summary_tokens": size,
                "tokens": ours.tokens,
                "over_budget": ours.over,
                "values": len(values),
                "values_claude": len(recovered(summary.text, values)),
                "values_progsum": ours.kept(values),
                "files": len(files),
                "files_claude": len(recovered(summary.text, files)),
                "files_progsum": ours.kept(files),
                "compactions": _compactions(ours.state),
            }
        )
    return found


def boundaries(
    data: Path,
) -> Iterator[tuple[Path, Imported, CompactSummary, list[Any], list[Any]]]:
    """Each Claude Code compaction a session log under ``data`` holds, with what it split.

    ``(file, main conversation, Claude Code's summary, the messages it replaced, the messages up
    to the next summary)``.
    """
    sessions = present(data, ["claude_code"], some=False)
    for file in agent_files(data, "claude_code", sessions=True) if sessions else []:
        summaries = claude_code_summaries(file)
        if not summaries:
            continue
        conversation = read_conversations(file)[0]
        messages = conversation.messages
        for k, summary in enumerate(summaries):
            end = summaries[k + 1].at if k + 1 < len(summaries) else len(messages)
            yield file, conversation, summary, messages[: summary.at], messages[summary.at : end]


def summary_window(tokens: int) -> int:
    """The smallest context window (at least `MIN_WINDOW`) whose input part holds ``tokens``."""
    window = max(MIN_WINDOW, tokens)
    while (Policy(context_window=window).input_window or 0) < tokens:
        window += 1
    return window


def native_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Claude Code's own summary beside progsum's request at no larger size (`native`)."""
    head = (
        "| session @ messages folded | its summary, tokens | progsum's request, tokens | over "
        "| values reused after: Claude Code | progsum | files changed before: Claude Code "
        "| progsum | compactions |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines.extend(
        f"| {r['name']} | {r['summary_tokens']:,} | {r['tokens']:,} | {int(r['over_budget'])} "
        f"| {r['values_claude']} of {r['values']} | {r['values_progsum']} of {r['values']} "
        f"| {r['files_claude']} of {r['files']} | {r['files_progsum']} of {r['files']} "
        f"| {r['compactions']} |"
        for r in rows
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table and the malformed-item counts for DATA."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder (or a fixture folder)")
    parser.add_argument("--windows", type=int, nargs="+", default=list(WINDOWS))
    parser.add_argument("--limit", type=int, default=None, help="τ-bench records per file")
    parser.add_argument(
        "--no-usage",
        action="store_true",
        help="report no usage with assistant messages: the safety margin stays in force",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print(table(rows(args.data, args.windows, args.limit, usage=not args.no_usage)))
    print()
    print(native_table(native(args.data, usage=not args.no_usage)))
    counts = malformed(args.data)
    print(
        f"\ntrail items over {counts['conversations']} conversations: {counts['items']}; "
        f"multi-line {counts['multi_line']}, markup {counts['markup']}, "
        f"over-long (> {MAX_ITEM_CHARS} chars) {counts['over_long']}"
    )
    print(f"ran in {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
