"""``progsum render STATE.json``: a saved state as the summary header and the view."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from progsum.cli.options import schema_named
from progsum.cli.output import write_view
from progsum.cli.status import UsageError
from progsum.errors import ConfigError
from progsum.state.conversation import ConversationState
from progsum.summary.files import load_schema, schemas
from progsum.summary.schema import BaseSummary, Summary

__all__ = ["run_render"]


def run_render(args: argparse.Namespace) -> int:
    """Print the saved state ``STATE.json`` as the header and the view; exit status 0."""
    try:
        text = args.state.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{args.state}: no such state file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{args.state}: cannot be read ({error})") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{args.state}: is not valid JSON ({error.msg} at line {error.lineno}); pass a file "
            "written by 'progsum compact --save' or ConversationState.to_json()"
        ) from error
    if not isinstance(data, dict) or "progsum_state" not in data:
        raise ConfigError(
            f"{args.state}: not a progsum state; pass a file written by 'progsum compact --save' "
            "(a conversation file goes to 'progsum compact' instead)"
        )
    schema = schema_named(args.schema) if args.schema else schema_of_state(data)
    written = data.get("schema")
    if args.schema and written is not None and written != schema.__name__:
        raise UsageError(
            f"{args.state} was summarized with schema class {written!r}, not --schema "
            f"{args.schema}; {schema_flag(written)}"
        )
    try:
        state: ConversationState[Any] = ConversationState.from_dict(data, schema=schema)
    except ConfigError as error:
        raise ConfigError(f"{args.state}: {error}") from error
    write_view(sys.stdout, state, None, as_json=args.json)
    compactions = sum(e.outcome == "compacted" for e in state.events)
    sys.stderr.write(
        f"{len(state)} messages logged, {state.effective_length} verbatim, "
        f"{compactions} compaction(s)\n"
    )
    return 0


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
