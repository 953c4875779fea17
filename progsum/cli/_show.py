"""``progsum show``: what a saved state or a stored thread holds, readable in a terminal.

The summary is shown field by field, generically: the objective, then each list field of the
schema as a table of its items (id, text, the messages it came from, who wrote what it cites),
then any other field the summary model has (a section a schema or a later progsum adds appears
as its value, without changes here), then the tombstones. After it: the exact values the user
stated (the ledger), the recall index's size (the folded messages and their distinct terms),
and the last compaction events with their reasons. Tables are drawn by ``rich``; in a pipe they
are plain text.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.pretty import Pretty
from rich.table import Table
from rich.text import Text

from progsum.cli._options import schema_named
from progsum.cli._states import read_state
from progsum.errors import ConfigError
from progsum.recall._terms import document, terms
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.store._sqlite import SQLiteStore
from progsum.summary._schema import RESERVED_FIELDS, BaseSummary, FieldSpec, Item, spec_of

__all__ = ["run_show", "show_state"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file."""


def run_show(args: argparse.Namespace) -> int:
    """Show a state file, or a thread of a store (``--thread``), or a store's threads."""
    console = Console(soft_wrap=False)
    target: str = args.target
    store = _open_store(target)
    if store is None:
        if args.thread is not None:
            raise ConfigError(
                f"--thread {args.thread!r}: {target} is a state file, not a store; leave "
                "--thread out, or give a SQLite store or a postgresql:// URL"
            )
        saved = read_state(Path(target), args.schema)
        source = f"{target} (messages from {saved.transcript.name})" if saved.transcript else target
        console.print(show_state(saved.state, source, events=args.events, values=args.values))
        return 0
    with store:
        if args.thread is None:
            console.print(_threads(target, store.threads()))
            return 0
        schema = schema_named(args.schema) if args.schema else None
        stored = store.load(args.thread, schema=schema) if schema else store.load(args.thread)
        where = f"thread {args.thread!r} of {target}, version {stored.version}"
        console.print(show_state(stored.state, where, events=args.events, values=args.values))
    return 0


def _open_store(target: str) -> Any:  # noqa: ANN401 - a SQLiteStore or a PostgresStore
    """The store ``target`` names (a SQLite file or a PostgreSQL URL), or None for a state file."""
    if target.startswith(("postgresql://", "postgres://")):
        from progsum.store._postgres import PostgresStore  # noqa: PLC0415 - the postgres extra

        return PostgresStore(target, migrate=False, max_size=1)
    path = Path(target)
    try:
        with path.open("rb") as file:
            magic = file.read(len(_SQLITE_MAGIC))
    except OSError:
        return None  # read_state names what is wrong with the path
    return SQLiteStore(path) if magic == _SQLITE_MAGIC else None


def _threads(target: str, threads: Sequence[str]) -> RenderableType:
    table = Table(title=f"Threads in {target}", title_justify="left")
    table.add_column("thread id")
    for thread in threads:
        table.add_row(thread)
    hint = Text(f"show one with: progsum show {target} --thread THREAD_ID", style="dim")
    return Group(table, hint)


def show_state(
    state: ConversationState[Any], source: str, *, events: int = 10, values: int = 30
) -> RenderableType:
    """Everything `run_show` prints about ``state`` (``source`` names where it was read)."""
    parts: list[RenderableType] = [_overview(state, source)]
    summary = state.summary
    if summary is None:
        parts.append(Text("No summary yet: nothing has been folded.", style="italic"))
    else:
        parts.extend(_summary(summary))
    parts.append(_values(state, values))
    parts.append(_recall(state))
    parts.append(_events(state.events, events))
    return Group(*parts)


def _overview(state: ConversationState[Any], source: str) -> RenderableType:
    compactions = sum(e.outcome == "compacted" for e in state.events)
    folded = f"messages {state.head_end + 1}-{state.cutoff}" if state.cutoff else "none"
    logged = (
        f"{len(state)} messages logged, {state.effective_length} in the context "
        f"({len(state.kept)} kept verbatim), {compactions} compaction(s)"
    )
    lines = [logged, f"folded: {folded}; format: {state.format or 'not yet known'}"]
    if state.pending_repairs:
        lines.append(f"{len(state.pending_repairs)} degraded compaction(s) awaiting repair")
    return Panel("\n".join(lines), title=source, title_align="left")


def _summary(summary: BaseSummary) -> list[RenderableType]:
    """The summary's fields, as its schema declares them, then whatever else it holds."""
    spec = spec_of(type(summary))
    parts: list[RenderableType] = []
    if spec.objective is not None:
        objective = getattr(summary, spec.objective.name) or "(none yet)"
        parts.append(Panel(objective, title=spec.objective.label, title_align="left"))
    parts.extend(_field(field, getattr(summary, field.name)) for field in spec.lists)
    known = {f.name for f in spec.lists} | RESERVED_FIELDS
    if spec.objective is not None:
        known.add(spec.objective.name)
    parts.extend(  # a section this command does not know: shown as its value
        Panel(Pretty(getattr(summary, name)), title=name, title_align="left")
        for name in type(summary).model_fields
        if name not in known
    )
    if summary.retired:
        parts.append(_tombstones(summary))
    return parts


def _field(field: FieldSpec, items: Sequence[Item]) -> RenderableType:
    title = field.label + (" (binding)" if field.binding else "")
    if not items:
        return Text(f"{title}: none", style="bold")
    table = Table(title=f"{title}: {len(items)}", title_justify="left", expand=False)
    table.add_column("id", no_wrap=True)
    table.add_column("text")
    table.add_column("from", no_wrap=True)
    table.add_column("by", no_wrap=True)
    for item in items:
        start, end = item.source
        where = f"{start + 1}-{end}" if end - start > 1 else str(end)
        if item.cites:
            where += " (cites " + ", ".join(str(at + 1) for at in item.cites) + ")"
        by = (item.author or "?") + (", extracted" if item.origin == "extracted" else "")
        table.add_row(item.id, item.text, where, by)
    return table


def _tombstones(summary: BaseSummary, shown: int = 10) -> Table:
    retired = summary.retired
    table = Table(
        title=f"Retired items: {len(retired)} (the last {min(shown, len(retired))})",
        title_justify="left",
    )
    table.add_column("id", no_wrap=True)
    table.add_column("text")
    table.add_column("compaction", no_wrap=True)
    table.add_column("reason")
    for tomb in retired[-shown:]:
        table.add_row(tomb.item.id, tomb.item.text, str(tomb.compaction), tomb.reason)
    return table


def _values(state: ConversationState[Any], shown: int) -> RenderableType:
    ledger = state.ledger
    if not ledger:
        return Text("Exact values the user stated: none on the ledger.", style="italic")
    table = Table(
        title=f"Exact values the user stated: {len(ledger)}"
        + (f" (the last {shown})" if len(ledger) > shown else ""),
        title_justify="left",
    )
    table.add_column("value", no_wrap=True)
    table.add_column("message", no_wrap=True)
    table.add_column("the user's sentence")
    for entry in ledger[-shown:]:
        table.add_row(
            entry.value, str(entry.at + 1), entry.sentence + (" (rule)" if entry.rule else "")
        )
    return table


def _recall(state: ConversationState[Any]) -> RenderableType:
    """The size of what recall searches: the folded messages and their distinct terms."""
    folded = range(state.head_end, state.cutoff)
    found: set[str] = set()
    occurrences = 0
    log = state.log
    for at in folded:
        words = terms(document(log[at]))
        occurrences += len(words)
        found.update(words)
    lines = f"{len(folded)} folded messages, {len(found):,} distinct terms ({occurrences:,} in all)"
    recall = state.recall
    if recall is not None and recall.excerpts:
        numbers = ", ".join(str(e.index + 1) for e in recall.excerpts)
        which = "message" if len(recall.excerpts) == 1 else "messages"
        lines += f"\nquoted now before message {recall.at + 1}: {which} {numbers}"
    return Panel(lines, title="Recall index", title_align="left")


def _events(events: Sequence[CompactionEvent], shown: int) -> RenderableType:
    if not events:
        return Text("Last compactions: none yet.", style="italic")
    table = Table(
        title=f"Last compactions: {len(events)} event(s)"
        + (f", the last {shown}" if len(events) > shown else ""),
        title_justify="left",
    )
    for column in ("#", "outcome", "at", "tokens", "folded"):
        table.add_column(column, no_wrap=True)
    table.add_column("reason")
    for event in events[-shown:]:
        folded = f"{event.folded[0] + 1}-{event.folded[1]}" if event.folded else ""
        reason = event.reason
        if event.degraded_reason:
            reason += f" (degraded: {event.degraded_reason})"
        if event.stall:
            reason = f"{event.stall}: {reason}"
        table.add_row(
            str(event.number),
            event.outcome,
            event.at.strftime("%Y-%m-%d %H:%M:%S"),
            f"{event.tokens_before:,} -> {event.tokens_after:,}",
            folded,
            reason,
        )
    return table
