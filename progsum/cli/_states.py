"""Saved states the command line reads: ``compact --save`` files and the Claude Code hook's.

A state file is what `ConversationState.to_json` writes (``progsum compact --save``). The Claude
Code hook (`progsum.integrations.claude_code`) writes ``<transcript>.progsum.json`` instead: the
state without its log, which stays in the transcript beside it, with the saved header, the
session id and a digest per message. `read_state` reads both; for the hook's it reads the
messages back from the transcript.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progsum.cli._options import schema_named
from progsum.cli._status import UsageError
from progsum.errors import ConfigError
from progsum.replay._importers import read_conversations
from progsum.state._conversation import ConversationState
from progsum.summary._files import load_schema, schemas
from progsum.summary._schema import BaseSummary, Summary

__all__ = ["HOOK_SUFFIX", "SavedState", "read_state", "schema_flag", "schema_of_state"]

HOOK_SUFFIX = ".progsum.json"
"""What the Claude Code hook appends to the transcript's name for its state file."""


@dataclass(frozen=True)
class SavedState:
    """A state read from a file, and where its messages came from."""

    state: ConversationState[Any]
    transcript: Path | None = None
    """The Claude Code transcript the messages were read from (a hook's state), else None."""


def read_state(path: Path, schema_name: str | None) -> SavedState:
    """The state saved in ``path``; ``schema_name`` is ``--schema`` (None: the state's own).

    Raises:
        ConfigError: the file is missing, unreadable, not JSON or not a saved state.
        UsageError: ``--schema`` names another schema than the state's.
    """
    data = _json(path)
    if isinstance(data, dict) and isinstance(data.get("state"), dict) and "digests" in data:
        return _hook_state(path, data, schema_name)
    if not isinstance(data, dict) or "progsum_state" not in data:
        raise ConfigError(
            f"{path}: not a progsum state; pass a file written by 'progsum compact --save' or "
            "the Claude Code hook (a conversation file goes to 'progsum compact' instead)"
        )
    return SavedState(_state(path, data, schema_name))


def _json(path: Path) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such state file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read ({error})") from error
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path}: is not valid JSON ({error.msg} at line {error.lineno}); pass a file "
            "written by 'progsum compact --save' or ConversationState.to_json()"
        ) from error


def _hook_state(path: Path, saved: dict[str, Any], schema_name: str | None) -> SavedState:
    """A Claude Code hook's state, its log read back from the transcript beside it."""
    data = dict(saved["state"])
    length = data.pop("length", None)
    transcript = path.with_name(path.name.removesuffix(HOOK_SUFFIX))
    if not path.name.endswith(HOOK_SUFFIX) or not transcript.is_file():
        raise ConfigError(
            f"{path}: a Claude Code hook's state, but {transcript.name}, the Claude Code "
            "transcript it was saved beside, is not there; render it where the hook wrote it"
        )
    if not isinstance(length, int) or length < 0:
        raise ConfigError(f"{path}: the hook's state has no message count; the file is damaged")
    conversations = read_conversations(transcript)
    messages = list(conversations[0].messages)
    if len(messages) < length:
        raise ConfigError(
            f"{path}: saved over {length} messages, but {transcript.name} holds {len(messages)}; "
            "the transcript was rewound or replaced, so this state no longer describes it"
        )
    data["log"] = messages[:length]
    return SavedState(_state(path, data, schema_name), transcript)


def _state(path: Path, data: dict[str, Any], schema_name: str | None) -> ConversationState[Any]:
    """The state of ``data`` (a `ConversationState.to_dict`), under the right schema."""
    schema = schema_named(schema_name) if schema_name else schema_of_state(data)
    written = data.get("schema")
    if schema_name and written is not None and written != schema.__name__:
        raise UsageError(
            f"{path} was summarized with schema class {written!r}, not --schema "
            f"{schema_name}; {schema_flag(written)}"
        )
    try:
        return ConversationState.from_dict(data, schema=schema)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from error


def schema_of_state(data: object) -> type[BaseSummary]:
    """The shipped schema whose class wrote a saved state (default when it has no summary)."""
    written = data.get("schema") if isinstance(data, dict) else None
    if written is None or written == Summary.__name__:
        return Summary
    for info in schemas():
        schema = load_schema(info.name)
        if schema.__name__ == written:
            return schema
    raise UsageError(
        f"the state was summarized with schema class {written!r}, which no shipped schema "
        "defines; pass --schema PATH of its .toml file"
    )


def schema_flag(written: str) -> str:
    """The flag that reads a state written with schema class ``written``."""
    if written == Summary.__name__:
        return "leave --schema out (the default schema)"
    for info in schemas():
        if load_schema(info.name).__name__ == written:
            return f"pass --schema {info.name}, or leave --schema out"
    return "pass --schema PATH of its .toml file"
