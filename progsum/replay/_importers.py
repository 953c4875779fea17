"""Reading conversations from files: provider message lists, agent logs and benchmark records.

`read_conversations(path)` detects the kind of file and returns one `Imported` per conversation
in it, with messages that `ConversationState` accepts. Detected kinds (``Imported.source``):

* ``anthropic-json``: a JSON list of Anthropic messages, or a request body with ``messages`` (and
  ``system``, a string or text blocks, which becomes `Imported.system`);
* ``openai-json``: a JSON list of OpenAI chat messages, or ``{"messages": [...]}``; a leading
  ``system``/``developer`` message becomes `Imported.system`;
* ``anthropic-jsonl`` / ``openai-jsonl``: the same with one message per line;
* ``claude-code``: a Claude Code session log (``.jsonl``, one row per content block; see
  `from_claude_code`); sidechains (subagent runs) come after the main conversation;
* ``tau-bench``: a τ-bench record list ``[{task_id, trial, traj: [openai messages]}]``, one
  conversation per record;
* ``swe-agent``: a SWE-agent ``.traj`` file (its ``history``; see `from_swe_agent`).

A list of plain string messages fits both providers; it is read as Anthropic unless a message
shows otherwise. Everything but `read_conversations` and `claude_code_summaries` is pure.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from progsum.errors import ConfigError, MessageFormatError
from progsum.judge._provenance import Author, user_prose
from progsum.state._conversation import ConversationState

__all__ = [
    "CompactSummary",
    "Imported",
    "claude_code_summaries",
    "from_claude_code",
    "from_messages",
    "from_swe_agent",
    "read_conversations",
]

Source: TypeAlias = Literal[
    "anthropic-json",
    "openai-json",
    "anthropic-jsonl",
    "openai-jsonl",
    "claude-code",
    "tau-bench",
    "swe-agent",
]
Json: TypeAlias = Any
"""A decoded JSON value."""

_FORMATS = (
    "an Anthropic or OpenAI message list (JSON, or JSON Lines with one message per line), an "
    "Anthropic request body with 'messages', a Claude Code session log (.jsonl), a tau-bench "
    "record list or a SWE-agent .traj file"
)
_OPENAI_SYSTEM = frozenset({"system", "developer"})


@dataclass(frozen=True)
class Imported:
    """One conversation read from a file.

    Attributes:
        name: The file's stem, with ``#n`` (records) or ``:sidechain:<agent>`` when a file holds
            several conversations.
        messages: Provider-shaped message dicts, accepted by `ConversationState`.
        format: ``anthropic``, ``openai`` or ``responses`` (Anthropic when the messages fit all).
        system: The system prompt taken off the front (a request body's ``system`` or a leading
            OpenAI system message), else None.
        source: The detected kind of input (see the module docstring).
        authors: Who wrote each message, where the file tells (a SWE-agent observation and a
            Claude Code meta row are ``tool`` although their role is ``user``); None for a
            message leaves it to `progsum.judge._provenance.classify`.
    """

    name: str
    messages: list[dict[str, Any]]
    format: Literal["anthropic", "openai", "responses"]
    system: str | None
    source: str
    authors: tuple[Author | None, ...] | None = None

    def state(self, *, thread_id: str | None = None) -> ConversationState[Any]:
        """The conversation as a `ConversationState`, with the authors the file told."""
        return ConversationState(self.messages, thread_id=thread_id, authors=self.authors)


@dataclass(frozen=True)
class CompactSummary:
    """Claude Code's own compaction summary, found in a session log.

    Attributes:
        at: Index in the main conversation's messages where the compact boundary sits:
            ``messages[:at]`` is what Claude Code compacted.
        text: The summary as Claude Code sent it to the model afterwards (the ``isCompactSummary``
            user message; it is not among the imported messages).
        pre_tokens: The context size Claude Code reported at the boundary, if any.
        trigger: ``auto`` or ``manual``, if reported.
    """

    at: int
    text: str
    pre_tokens: int | None = None
    trigger: str | None = None


# -- reading files ---------------------------------------------------------------------------------


def read_conversations(path: str | os.PathLike[str]) -> list[Imported]:
    """Read every conversation in a file, detecting its kind (see the module docstring).

    Args:
        path: A ``.json``, ``.jsonl`` or ``.traj`` file.

    Raises:
        ConfigError: the file cannot be read, is not JSON, is of no known kind, or a message in
            it is malformed; the message names the file, what was expected and the fix.
    """
    file = Path(path)
    data, lines = _load(file)
    try:
        conversations = _detect(file, data, lines)
    except MessageFormatError as error:
        raise ConfigError(f"{file}: {error}") from error
    if not conversations:
        raise ConfigError(f"{file}: holds no conversation; expected {_FORMATS}")
    for conversation in conversations:
        try:
            ConversationState(conversation.messages)
        except MessageFormatError as error:
            raise ConfigError(
                f"{file}: conversation {conversation.name!r} ({conversation.source}): {error}"
            ) from error
    return conversations


def claude_code_summaries(path: str | os.PathLike[str]) -> list[CompactSummary]:
    """Claude Code's own compaction summaries in a session log, oldest first.

    Raises:
        ConfigError: the file cannot be read or is not a Claude Code session log.
    """
    file = Path(path)
    _, lines = _load(file)
    if lines is None or not _is_claude_code(lines):
        raise ConfigError(
            f"{file}: not a Claude Code session log; expected a .jsonl file with one "
            "{'type': 'user'|'assistant'|..., 'message': ...} row per line"
        )
    builder = _ClaudeCode()
    for row in lines:
        if not row.get("isSidechain"):
            builder.add(row)
    builder.flush()
    return builder.summaries


def _load(file: Path) -> tuple[Json, list[Json] | None]:
    """The file's JSON value, or its JSON Lines rows (then the value is None)."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such file; pass the path of a conversation file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{file}: cannot be read ({error}); pass a UTF-8 JSON file") from error
    if not text.strip():
        raise ConfigError(f"{file}: is empty; expected {_FORMATS}")
    if file.suffix != ".jsonl":
        try:
            return json.loads(text), None
        except json.JSONDecodeError as error:
            if error.msg != "Extra data":  # several values: try JSON Lines below
                raise ConfigError(
                    f"{file}: is not valid JSON ({error.msg} at line {error.lineno}, column "
                    f"{error.colno}); fix the file or export it as JSON"
                ) from error
    rows: list[Json] = []
    lines = text.splitlines()
    last = max((n for n, line in enumerate(lines, start=1) if line.strip()), default=0)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as error:
            if number == last and not text.endswith("\n") and rows and _is_claude_code(rows):
                break  # a Claude Code log still being written: its last row is torn
            raise ConfigError(
                f"{file}: line {number} is not valid JSON ({error.msg}); JSON Lines files hold "
                "one JSON object per line"
            ) from error
    return None, rows


def _detect(file: Path, data: Json, lines: list[Json] | None) -> list[Imported]:
    name = file.stem
    if lines is not None:
        if _is_claude_code(lines):
            return from_claude_code(lines, name=name)
        if all(isinstance(row, dict) and "role" in row for row in lines):
            return [from_messages(lines, name=name, lines=True)]
        raise ConfigError(
            f"{file}: JSON Lines rows are neither messages (with 'role') nor Claude Code rows "
            f"(with 'type' and 'message'); expected {_FORMATS}"
        )
    if isinstance(data, list) and data and all(isinstance(r, dict) and "traj" in r for r in data):
        return [
            from_messages(
                record["traj"], name=f"{name}#{_record_id(record, n)}", source="tau-bench"
            )
            for n, record in enumerate(data)
        ]
    if isinstance(data, dict) and isinstance(data.get("history"), list):
        return [from_swe_agent(data, name=name)]
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return [from_messages(data["messages"], name=name, system=data.get("system"))]
    if isinstance(data, list) and all(isinstance(m, dict) and "role" in m for m in data):
        return [from_messages(data, name=name)]
    raise ConfigError(f"{file}: is JSON of no known kind; expected {_FORMATS}")


def _record_id(record: Mapping[str, Any], n: int) -> str:
    task, trial = record.get("task_id"), record.get("trial")
    return f"{task}.{trial}" if task is not None and trial is not None else str(n)


# -- provider message lists ------------------------------------------------------------------------


def from_messages(
    messages: Sequence[Json],
    *,
    name: str,
    system: Json = None,
    lines: bool = False,
    source: str | None = None,
) -> Imported:
    """A provider message list as an `Imported` conversation.

    Args:
        messages: Anthropic or OpenAI message dicts.
        name: The conversation's name.
        system: A request body's ``system`` (a string or a list of text blocks).
        lines: The messages came one per line (the source is then ``*-jsonl``).
        source: Override the detected source name (e.g. ``tau-bench``).

    Raises:
        MessageFormatError: a message is not a dict with a role.
    """
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message:
            raise MessageFormatError(
                index,
                "is not a message dict with a 'role'; messages look like "
                "{'role': 'user', 'content': '...'}",
            )
    rest = list(messages)
    prompts: list[str] = []
    if system is not None:
        prompts.append(_system_text(system))
    leading_system = False
    while (
        rest and rest[0].get("role") in _OPENAI_SYSTEM and isinstance(rest[0].get("content"), str)
    ):
        prompts.append(rest.pop(0)["content"])
        leading_system = True
    fmt = ConversationState(rest).format or ("openai" if leading_system else "anthropic")
    kind = source or f"{fmt}-{'jsonl' if lines else 'json'}"
    return Imported(name, rest, fmt, "\n\n".join(prompts) if prompts else None, kind)


def _system_text(system: Json) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n\n".join(
            str(block.get("text", "")) for block in system if isinstance(block, dict)
        )
    raise MessageFormatError(
        0,
        f"the request's 'system' is a {type(system).__name__}; give a "
        "string or a list of text blocks",
    )


# -- SWE-agent -------------------------------------------------------------------------------------


def from_swe_agent(trajectory: Mapping[str, Any], *, name: str) -> Imported:
    """A SWE-agent ``.traj`` file's ``history`` as an OpenAI conversation.

    Only ``role``, ``content``, ``tool_calls`` and ``tool_call_id`` are kept (SWE-agent adds
    ``agent``, ``thought``, ``action``, ...). A ``tool`` message answering several calls at once
    (``tool_call_ids``) becomes one ``tool`` message per id, each with the same content.
    """
    messages: list[dict[str, Any]] = []
    authors: list[Author | None] = []
    task_seen = False
    for entry in trajectory["history"]:
        message = {key: entry[key] for key in ("role", "content", "tool_calls") if key in entry}
        if entry.get("role") == "tool":
            ids = entry.get("tool_call_ids") or [entry.get("tool_call_id")]
            messages.extend({**message, "tool_call_id": call_id} for call_id in ids)
            authors.extend("tool" for _ in ids)
            continue
        messages.append(message)
        author: Author | None = None
        if entry.get("role") == "user":  # the task, then observations in the user role
            author = "tool" if task_seen or entry.get("is_demo") else "user"
            task_seen = task_seen or author == "user"
        authors.append(author)
    imported = from_messages(messages, name=name, source="swe-agent")
    skipped = len(messages) - len(imported.messages)  # leading system messages became .system
    return dataclasses.replace(imported, authors=tuple(authors[skipped:]))


# -- Claude Code -----------------------------------------------------------------------------------


def _is_claude_code(rows: Sequence[Json]) -> bool:
    """Rows of a Claude Code log: objects with a ``type`` (no ``role``), some carrying a message.

    Row types other than ``user`` and ``assistant`` (including ones newer Claude Code versions may
    add) are accepted and skipped.
    """
    if not all(isinstance(row, dict) and "type" in row and "role" not in row for row in rows):
        return False
    return any(
        row["type"] in ("user", "assistant") and isinstance(row.get("message"), dict)
        for row in rows
    )


def from_claude_code(rows: Iterable[Json], *, name: str) -> list[Imported]:
    """The conversations of a Claude Code session log: the main one, then each sidechain.

    Claude Code writes one row per content block, and parallel tool calls are interleaved with
    their results (``tool_use₁, tool_result₁, tool_use₂, tool_result₂``). Assistant rows are
    grouped by ``message.id`` into one message, and every row in between (tool results, user text)
    is collected into the one user message that follows it, tool results first. Rows other than
    ``user`` and ``assistant`` (progress, file-history snapshots, system notes, summaries, queue
    operations) are skipped, and so is the ``isCompactSummary`` message that Claude Code writes
    after a compaction (see `claude_code_summaries`). Whitespace-only text blocks, which the API
    rejects, are dropped. Rows with ``isSidechain`` (subagent runs) are collected apart, one
    conversation per ``agentId``, named ``<name>:sidechain:<agentId>``.
    """
    main = _ClaudeCode()
    sidechains: dict[str, _ClaudeCode] = {}
    for row in rows:
        if row.get("isSidechain"):
            sidechains.setdefault(str(row.get("agentId") or "sidechain"), _ClaudeCode()).add(row)
        else:
            main.add(row)
    found = [(name, main)] + [(f"{name}:sidechain:{a}", b) for a, b in sidechains.items()]
    conversations = []
    for label, builder in found:
        builder.flush()
        if builder.messages:
            conversations.append(
                Imported(
                    label,
                    builder.messages,
                    "anthropic",
                    None,
                    "claude-code",
                    tuple(builder.authors),
                )
            )
    return conversations


@dataclass
class _ClaudeCode:
    """Rebuilds API messages from Claude Code rows, one row at a time."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    authors: list[Author | None] = field(default_factory=list)
    summaries: list[CompactSummary] = field(default_factory=list)
    assistant_id: str | None = None
    assistant: list[Json] = field(default_factory=list)
    user: list[Json] = field(default_factory=list)
    meta: list[bool] = field(default_factory=list)
    """For each block of ``user``: it came from a row Claude Code marks ``isMeta`` (text the
    harness wrote into the user turn: a loaded skill, a caveat, a reminder)."""
    user_text: str | None = None
    """The pending user message's content while it is a single string."""
    typed: bool = False
    """A row of the pending user message is a prompt the person typed (not meta, not output)."""
    boundary: Mapping[str, Any] | None = None

    def add(self, row: Mapping[str, Any]) -> None:
        kind = row.get("type")
        if kind == "system" and row.get("subtype") == "compact_boundary":
            self.flush()
            self.boundary = row.get("compactMetadata") or {}
            return
        message = row.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            return
        if row.get("isCompactSummary"):
            self.flush()
            metadata = self.boundary or {}
            self.summaries.append(
                CompactSummary(
                    at=len(self.messages),
                    text=_text_of(message.get("content")),
                    pre_tokens=metadata.get("preTokens"),
                    trigger=metadata.get("trigger"),
                )
            )
            self.boundary = None
            return
        content = message.get("content")
        if kind == "assistant":
            message_id = message.get("id")
            if self.assistant_id is None or message_id != self.assistant_id:
                self.flush()
                self.assistant_id = message_id or f"row-{len(self.messages)}"
            self.assistant.extend(_blocks(content))
            return
        if self.assistant_id is None and not self.user and isinstance(content, str):
            self.user_text = content
        else:
            self.user_text = None
        if not row.get("isMeta") and user_prose({"content": content}).strip():
            self.typed = True
        blocks = _blocks(content)
        self.user.extend(blocks)
        self.meta.extend([bool(row.get("isMeta"))] * len(blocks))

    def flush(self) -> None:
        if self.assistant_id is not None:
            if self.assistant:
                self.messages.append({"role": "assistant", "content": self.assistant})
                self.authors.append("assistant")
            self.assistant_id, self.assistant = None, []
        if self.user and self.typed and any(self.meta):
            self._split_user_turn()
        elif self.user:
            results = [b for b in self.user if b.get("type") == "tool_result"]
            rest = [b for b in self.user if b.get("type") != "tool_result"]
            content: Json = self.user_text if self.user_text is not None else results + rest
            self.messages.append({"role": "user", "content": content})
            self.authors.append("user" if self.typed else "tool")
        self.user, self.meta, self.user_text, self.typed = [], [], None, False

    def _split_user_turn(self) -> None:
        """A user turn the person typed into and the harness wrote into, as one message per run.

        Runs of blocks from the person's rows and from ``isMeta`` rows alternate in their order,
        tool results first; a harness run is authored ``tool``, so what the harness loaded (a
        skill document, a caveat) never counts as the user's words. Consecutive user messages are
        one turn to the provider.
        """
        blocks = sorted(
            zip(self.user, self.meta, strict=True),
            key=lambda pair: pair[0].get("type") != "tool_result",
        )
        for meta, run in itertools.groupby(blocks, key=lambda pair: pair[1]):
            content = [block for block, _ in run]
            self.messages.append({"role": "user", "content": content})
            self.authors.append("tool" if meta else "user")


def _blocks(content: Json) -> list[dict[str, Any]]:
    """Content as a list of blocks, without whitespace-only text blocks."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [
        block
        for block in content
        if isinstance(block, dict)
        and not (block.get("type") == "text" and not str(block.get("text", "")).strip())
    ]


def _text_of(content: Json) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(str(b.get("text", "")) for b in _blocks(content) if b.get("type") == "text")
