"""A Claude Code hook that hands progsum's binding summary back after Claude Code compacts.

Claude Code's own compaction replaces the conversation with a prose summary. Run this command on
two hook events (settings JSON in the README) and the typed, binding header survives it:

* ``PreCompact`` (matcher ``manual|auto``): reads the live transcript (``transcript_path``; its
  last line may be half written, and is then left for the next run), folds everything but the
  last few messages into progsum's summary, and saves progsum's state next to the transcript
  (``<transcript>.progsum.json``). A later compaction of the same session resumes from that
  state, so each one adds to the same summary instead of starting over.
* ``SessionStart`` with source ``compact``: prints the header as ``additionalContext``, which
  Claude Code adds to the context right after its own summary.

Hook protocol (Claude Code hooks reference): the event arrives as JSON on stdin with
``session_id``, ``transcript_path`` and ``hook_event_name``; a ``SessionStart`` hook adds context
by printing ``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext":
...}}``. The command never blocks Claude Code: any failure is one line on stderr and exit 0.

    python -m progsum.integrations.claude_code [--keep N] [--schema NAME] [--summarizer KIND]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from progsum.engine.compactor import Compactor
from progsum.errors import ProgsumError
from progsum.policy.policy import Policy
from progsum.replay.importers import from_claude_code
from progsum.state.conversation import ConversationState
from progsum.summarizers import AnthropicSummarizer, ExtractiveSummarizer, default_summarizer
from progsum.summary.files import load_schema

__all__ = ["hook", "main", "read_transcript", "state_path"]

DEFAULT_KEEP = 4
"""Messages left verbatim: Claude Code keeps its own recent turns after compacting."""
WINDOW = 200_000
"""Claude Code's context window (for the header budget)."""


def read_transcript(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a live Claude Code transcript; a torn (half-written) last line is skipped.

    Raises:
        ProgsumError: a line other than the last is not JSON (the file is damaged).
    """
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as exc:
            if number == len(lines):  # no newline after it yet: Claude Code is still writing it
                break
            raise ProgsumError(
                f"{path}: line {number} is not JSON ({exc}); only the last line of a live "
                "transcript may be incomplete"
            ) from exc
    return rows


def state_path(transcript: str | os.PathLike[str]) -> Path:
    """Where progsum's state for a transcript is saved."""
    path = Path(transcript)
    return path.with_name(path.name + ".progsum.json")


def hook(payload: Mapping[str, Any], compactor: Compactor[Any]) -> dict[str, Any] | None:
    """Handle one hook event; the JSON to print, or None to print nothing.

    Raises:
        ProgsumError: the transcript cannot be read or compacted.
    """
    event = payload.get("hook_event_name")
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str):
        raise ProgsumError(f"the hook input has no transcript_path ({sorted(payload)})")
    if event == "PreCompact":
        save(compact(transcript, compactor), transcript)
        return None
    if event == "SessionStart" and payload.get("source", "compact") == "compact":
        saved = state_path(transcript)
        if saved.exists():
            header = json.loads(saved.read_text(encoding="utf-8"))["header"]
        else:
            header = compact(transcript, compactor).header
        if not header:
            return None
        return {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": header}
        }
    return None


def compact(transcript: str, compactor: Compactor[Any]) -> ConversationState[Any]:
    """Fold the transcript's main conversation, resuming from the saved state when there is one."""
    imported = from_claude_code(read_transcript(transcript), name=Path(transcript).stem)
    messages = imported[0].messages if imported else []
    state: ConversationState[Any] = ConversationState()
    saved = state_path(transcript)
    if saved.exists():
        data = json.loads(saved.read_text(encoding="utf-8"))["state"]
        length = int(data.pop("length"))
        if length <= len(messages):
            data["log"] = messages[:length]
            state = ConversationState.from_dict(data, schema=compactor.schema)
            messages = messages[length:]
    state = state.extend(messages)
    return compactor.compact(state, force=True) if len(state.log) > 1 else state


def save(state: ConversationState[Any], transcript: str) -> None:
    """Write progsum's state (without the messages, which the transcript has) next to it."""
    data = state.to_dict(log=False)
    data["length"] = len(state.log)
    path = state_path(transcript)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(
        json.dumps({"header": state.header, "state": data}, ensure_ascii=False), encoding="utf-8"
    )
    temporary.replace(path)  # atomic: a crash leaves the previous state


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> int:
    """Run as a Claude Code hook command; always exits 0 so Claude Code is never blocked."""
    parser = argparse.ArgumentParser(prog="python -m progsum.integrations.claude_code")
    parser.add_argument("--keep", type=int, default=DEFAULT_KEEP, help="messages kept verbatim")
    parser.add_argument("--schema", default="coding-agent", help="summary schema name or path")
    parser.add_argument(
        "--summarizer",
        choices=("auto", "anthropic", "extractive"),
        default="auto",
        help="auto: Claude when ANTHROPIC_API_KEY is set, else extractive",
    )
    args = parser.parse_args(argv)
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    try:
        payload = json.load(stdin)
        summarizer = {
            "auto": default_summarizer,
            "anthropic": AnthropicSummarizer,
            "extractive": ExtractiveSummarizer,
        }[args.summarizer]()
        compactor: Compactor[Any] = Compactor(
            policy=Policy(context_window=WINDOW, keep=("messages", args.keep)),
            summarizer=summarizer,
            schema=load_schema(args.schema),
        )
        output = hook(payload, compactor)
    except (ProgsumError, OSError, ValueError, KeyError) as error:
        sys.stderr.write(f"progsum hook: {error}\n")
        return 0
    if output is not None:
        json.dump(output, stdout, ensure_ascii=False)
        stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
