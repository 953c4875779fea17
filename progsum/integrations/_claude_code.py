"""The implementation of `progsum.integrations.claude_code` (see its docstring)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from progsum.engine._compactor import Compactor
from progsum.errors import ProgsumError
from progsum.judge._provenance import Author
from progsum.policy._policy import Policy
from progsum.replay._importers import from_claude_code
from progsum.state._conversation import ConversationState
from progsum.summarizers._fallback import AnySummarizer, default_summarizer
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summary._files import load_schema

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
    return _rows(path)[0]


def _rows(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int]:
    """`read_transcript`'s rows, and how many JSON values that are not objects it skipped."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    rows: list[dict[str, Any]] = []
    skipped = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            if number == len(lines):  # no newline after it yet: Claude Code is still writing it
                break
            raise ProgsumError(
                f"{path}: line {number} is not JSON ({exc}); only the last line of a live "
                "transcript may be incomplete"
            ) from exc
        if isinstance(row, dict):
            rows.append(row)
        else:
            skipped += 1
    return rows, skipped


def state_path(transcript: str | os.PathLike[str]) -> Path:
    """Where progsum's state for a transcript is saved."""
    path = Path(transcript)
    return path.with_name(path.name + ".progsum.json")


CompactorSource = Compactor[Any] | Callable[[], Compactor[Any]]
"""A compactor, or a function that builds one when an event first needs it."""


Warn = Callable[[str], None]
"""Where the hook says what it did instead of the obvious (one line each): stderr in `main`."""


def hook(
    payload: object, compactor: CompactorSource, *, warn: Warn | None = None
) -> dict[str, Any] | None:
    """Handle one hook event; the JSON to print, or None to print nothing.

    ``compactor`` may be a function building the `Compactor`: it is then called only when the
    event folds the transcript, so a ``SessionStart`` that prints a saved header never builds a
    summarizer (nor imports a provider SDK, which takes seconds). Build it with
    ``Policy(keep_first=False)``, as `main` does: Claude Code drops the first message when it
    compacts, so only the header carries what it said. A saved state is used only for the
    session and transcript it was saved from (`resume`); ``warn`` hears why it was not.

    Raises:
        ProgsumError: the input is not a hook event, or the transcript cannot be read or compacted.
    """
    if not isinstance(payload, Mapping):
        raise ProgsumError(
            f"the hook input must be a JSON object with transcript_path and hook_event_name, not "
            f"{type(payload).__name__}"
        )
    event = payload.get("hook_event_name")
    transcript = payload.get("transcript_path")
    session = payload.get("session_id")
    session = session if isinstance(session, str) else None
    say = warn or (lambda _: None)
    if not isinstance(transcript, str):
        raise ProgsumError(f"the hook input has no transcript_path ({sorted(payload)})")
    if event == "PreCompact":
        state = compact(transcript, _built(compactor), session=session, warn=say)
        save(state, transcript, session=session)
        return None
    if event == "SessionStart" and payload.get("source", "compact") == "compact":
        header = _saved_header(transcript, session)
        if header is None:
            header = compact(transcript, _built(compactor), session=session, warn=say).header
        if not header:
            return None
        return {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": header}
        }
    return None


def _built(compactor: CompactorSource) -> Compactor[Any]:
    return compactor if isinstance(compactor, Compactor) else compactor()


def _messages(transcript: str, warn: Warn) -> tuple[list[dict[str, Any]], list[Author | None]]:
    """The main conversation's messages of a transcript, and who wrote each one.

    The authors are the importer's (`progsum.replay._importers.from_claude_code`): a run of a
    user turn that Claude Code wrote itself (an ``isMeta`` row: a loaded skill, a caveat) is
    ``tool``, so it never binds as the person's words.
    """
    rows, skipped = _rows(transcript)
    if skipped:
        warn(f"skipped {skipped} line(s) of {transcript} that are JSON but not objects")
    imported = from_claude_code(rows, name=Path(transcript).stem)
    if not imported:
        return [], []
    main = imported[0]
    authors = list(main.authors or (None,) * len(main.messages))
    return list(main.messages), authors


def compact(
    transcript: str,
    compactor: Compactor[Any],
    *,
    session: str | None = None,
    warn: Warn | None = None,
) -> ConversationState[Any]:
    """Fold the transcript's main conversation, resuming from the saved state when it is its own."""
    say = warn or (lambda _: None)
    messages, authors = _messages(transcript, say)
    state = resume(transcript, messages, compactor.schema, session=session, warn=say)
    known = len(state.log)
    state = state.extend(messages[known:], authors=authors[known:])
    return compactor.compact(state, force=True) if len(state.log) > 1 else state


def resume(
    transcript: str,
    messages: Sequence[Mapping[str, Any]],
    schema: type[Any],
    *,
    session: str | None,
    warn: Warn,
) -> ConversationState[Any]:
    """The saved state of ``transcript`` over the messages it shares with it, or a fresh state.

    The saved state records its session and a digest of every message it holds. A state of
    another session is not used; a transcript that diverges from it (a rewound branch, a
    shorter transcript) keeps the saved summary when every message the summary folded is shared,
    and starts a fresh one otherwise. Each case is one line to ``warn``.
    """
    saved = _load(transcript)
    if saved is None:
        return ConversationState()
    data = saved["state"]
    length = int(data.pop("length"))
    owner = saved.get("session_id")
    where = state_path(transcript).name
    if owner is not None and session is not None and owner != session:
        warn(f"{where} was saved by session {owner!r}, not {session!r}: starting a fresh summary")
        return ConversationState()
    known = saved.get("digests")
    digests = [_digest(m) for m in messages[:length]]
    shared = _shared(known, digests) if isinstance(known, list) else min(length, len(messages))
    if shared == length:
        data["log"] = list(messages[:length])
        return ConversationState.from_dict(data, schema=schema)
    cutoff = int(data.get("cutoff", 0))
    how = (
        f"is shorter than {where} ({len(messages)} of {length} messages)"
        if shared == len(messages)
        else f"diverges from {where} at message {shared + 1}"
    )
    if shared < cutoff:
        warn(f"the transcript {how}, inside the {cutoff} the summary folded: starting a fresh one")
        return ConversationState()
    warn(f"the transcript {how}, after the {cutoff} the summary folded: kept the summary")
    return ConversationState.from_dict(_cut(data, list(messages[:shared])), schema=schema)


def _shared(known: Sequence[object], digests: Sequence[str]) -> int:
    """How many leading messages the saved digests and the transcript's have in common."""
    count = 0
    for saved, current in zip(known, digests, strict=False):
        if saved != current:
            break
        count += 1
    return count


def _cut(data: dict[str, Any], log: list[Any]) -> dict[str, Any]:
    """A saved state's data over the first ``len(log)`` of its messages (all it folded)."""
    end = len(log)
    cut = dict(data)
    cut["log"] = log
    cut["cleared"] = [c for c in data.get("cleared") or [] if c[0] < end]
    cut["ledger"] = [e for e in data.get("ledger") or [] if e[1] < end]
    authors = data.get("authors") or {}
    cut["authors"] = {at: who for at, who in authors.items() if int(at) < end}
    cut["attempted_at"] = None
    return cut


def _digest(message: Mapping[str, Any]) -> str:
    """A short fingerprint of one message, to tell a transcript's own messages from others."""
    text = json.dumps(message, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _load(transcript: str) -> dict[str, Any] | None:
    """The saved state file of ``transcript``, or None when there is none."""
    saved = state_path(transcript)
    if not saved.exists():
        return None
    data = json.loads(saved.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("state"), dict):
        raise ProgsumError(f"{saved} is not a progsum hook state; delete it to start afresh")
    return data


def _saved_header(transcript: str, session: str | None) -> str | None:
    """The saved header, when the saved state is this session's and its transcript's."""
    saved = _load(transcript)
    if saved is None:
        return None
    owner = saved.get("session_id")
    if owner is not None and session is not None and owner != session:
        return None
    known = saved.get("digests")
    length = int(saved["state"].get("length", 0))
    if isinstance(known, list):
        digests = [_digest(m) for m in _messages(transcript, lambda _: None)[0][:length]]
        if _shared(known, digests) != length:
            return None
    header = saved.get("header")
    return header if isinstance(header, str) else None


def save(state: ConversationState[Any], transcript: str, *, session: str | None = None) -> None:
    """Write progsum's state next to the transcript, bound to its session and messages.

    The messages themselves stay out (the transcript has them); the session id and a digest of
    each message let `resume` tell this transcript from another or a rewound one.
    """
    data = state.to_dict(log=False)
    data["length"] = len(state.log)
    path = state_path(transcript)
    temporary = path.with_name(path.name + ".tmp")
    saved = {
        "header": state.header,
        "session_id": session,
        "digests": [_digest(m) for m in state.log],
        "state": data,
    }
    temporary.write_text(json.dumps(saved, ensure_ascii=False), encoding="utf-8")
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
    summarizers: dict[str, Callable[[], AnySummarizer]] = {
        "auto": default_summarizer,
        "anthropic": _anthropic,
        "extractive": ExtractiveSummarizer,
    }

    def build() -> Compactor[Any]:
        # Claude Code drops the first message when it compacts, so it is folded with the rest:
        # the task and the rules stated in it reach Claude Code in the header.
        return Compactor(
            policy=Policy(context_window=WINDOW, keep=("messages", args.keep), keep_first=False),
            summarizer=summarizers[args.summarizer](),
            schema=load_schema(args.schema),
        )

    def warn(line: str) -> None:
        sys.stderr.write(f"progsum hook: {line}\n")

    try:
        output = hook(json.load(stdin), build, warn=warn)
    except Exception as error:  # noqa: BLE001 - a hook must never block Claude Code
        warn(
            f"{type(error).__name__}: {error}"
            if not isinstance(error, ProgsumError)
            else str(error)
        )
        return 0
    if output is not None:
        json.dump(output, stdout, ensure_ascii=False)
        stdout.write("\n")
    return 0


def _anthropic() -> AnySummarizer:
    """Claude as the summarizer; the Anthropic SDK is imported here, when it is chosen."""
    from progsum.summarizers.anthropic._summarizer import AnthropicSummarizer  # noqa: PLC0415 - heavy, lazy

    return AnthropicSummarizer()


if __name__ == "__main__":
    raise SystemExit(main())
