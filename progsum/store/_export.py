"""A conversation as Markdown, for humans: what `SQLiteStore.export_markdown` writes.

Pure: it takes what the store read (the saved state, the archived messages and events) and returns
text, deterministic for the same input. Headings follow the log: the summary header, the messages
kept in front, each compaction with the messages it folded, then the live tail.
"""

from __future__ import annotations

import json
from typing import Any

from progsum.messages._formats import to_record
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.store._archive import ArchivedMessage

__all__ = ["markdown"]


def markdown(
    thread_id: str,
    stored: tuple[ConversationState[Any], int] | None,
    archived: list[ArchivedMessage],
    events: list[CompactionEvent],
) -> str:
    """A thread as Markdown: summary header, kept head, each compaction with its messages, tail.

    Args:
        thread_id: The conversation's thread id.
        stored: The saved state and its version, or None when only archived messages exist.
        archived: The thread's archived messages.
        events: The thread's archived compaction events.
    """
    by_index = {entry.index: entry for entry in archived}
    out = [f"# Conversation `{thread_id}`", ""]
    if stored is None:
        out += [
            f"No saved state: {len(archived)} archived messages, {len(events)} events.",
            "",
        ]
        for event in events:
            entries = [entry for entry in archived if entry.event == event.number]
            out += _event_section(event, [(e.index, e.message) for e in entries], entries)
        loose = [entry for entry in archived if entry.event not in {e.number for e in events}]
        if loose:
            out += ["## Archived without a recorded event", ""]
            out += _messages([(entry.index, entry.message) for entry in loose])
        return "\n".join(out)

    state, version = stored
    log = state.log
    compactions = sum(1 for e in state.events if e.outcome == "compacted")
    out += [
        f"Saved version {version}: {len(log)} messages, {compactions} compaction"
        + ("" if compactions == 1 else "s")
        + (
            f"; messages {_span(state.head_end, state.cutoff)} are folded into the summary."
            if state.cutoff
            else "; nothing is folded yet."
        ),
        "",
    ]
    if state.header:
        out += ["#" + line if line.startswith("#") else line for line in state.header.splitlines()]
        out.append("")
    if state.head_end:
        out += [f"## Kept in front (messages {_span(0, state.head_end)})", ""]
        out += _messages([(i, log[i]) for i in range(state.head_end)])
    for event in state.events:
        start, end = event.folded if event.outcome == "compacted" and event.folded else (0, 0)
        entries = [by_index[i] for i in range(start, end) if i in by_index]
        out += _event_section(event, [(i, log[i]) for i in range(start, end)], entries)
    if state.cutoff < len(log):
        tail_start = max(state.cutoff, state.head_end)
        out += [f"## Live tail (messages {_span(tail_start, len(log))})", ""]
        out += _messages([(i, log[i]) for i in range(tail_start, len(log))])
    return "\n".join(out)


def _event_section(
    event: CompactionEvent, messages: list[tuple[int, Any]], entries: list[ArchivedMessage]
) -> list[str]:
    title = f"## Compaction {event.number}: {event.outcome}"
    if event.outcome == "compacted" and event.folded is not None:
        title += f", messages {_span(*event.folded)}"
    elif event.repairs is not None:
        title += f" compaction {event.repairs}"
    facts = [
        f"at {event.at.isoformat()}",
        f"{event.tokens_before:,} → {event.tokens_after:,} tokens ({event.method})",
    ]
    if event.degraded:
        facts.append("degraded")
    if entries:
        facts.append(f"archived at {min(entry.archived_at for entry in entries).isoformat()}")
    out = [title, "", f"*{'; '.join(facts)}.* {event.reason}", ""]
    return out + _messages(messages)


def _messages(messages: list[tuple[int, Any]]) -> list[str]:
    out: list[str] = []
    for index, message in messages:
        record = to_record(message)
        role = record.get("role", "message") if isinstance(record, dict) else "message"
        out += [f"### Message {index + 1} · {role}", ""]
        content = record.get("content") if isinstance(record, dict) else None
        if isinstance(content, str) and set(record) <= {"role", "content"}:
            out += [content, ""]
        else:
            text = json.dumps(record, ensure_ascii=False, indent=2)
            fence = "`" * max(3, _longest_backtick_run(text) + 1)
            out += [f"{fence}json", text, fence, ""]
    return out


def _span(start: int, end: int) -> str:
    """A log range ``[start, end)`` as 1-based message numbers, as the header writes them."""
    return f"{start + 1}\N{EN DASH}{end}" if end - start > 1 else str(end)


def _longest_backtick_run(text: str) -> int:
    run = longest = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest
