"""The argument parser: the commands, their options, and usage errors as one line on stderr."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

from progsum._version import __version__
from progsum.cli._compact import run_compact
from progsum.cli._options import DEFAULT_BUDGET
from progsum.cli._render import run_render
from progsum.cli._replay import run_replay
from progsum.cli._schemas import run_schemas
from progsum.cli._show import run_show
from progsum.cli._status import EXIT_USAGE
from progsum.cli._store import add_store_command

__all__ = ["build_parser"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The ``progsum`` parser: each command sets ``run``, the function that runs it."""
    parser = _Parser(
        prog="progsum",
        description="Schema-driven progressive summarization of long LLM-agent conversations.",
        epilog="Run 'progsum COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"progsum {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="print progsum's log lines on stderr: one per compaction event (-vv: also each "
        "model call)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    compact = commands.add_parser(
        "compact",
        help="compact a conversation file and print the context a model would be sent",
        description="Compact a conversation under a token budget; print the summary header and "
        "the verbatim messages (stdout) and a report (stderr).",
    )
    _conversation_options(compact)
    compact.add_argument(
        "--json", action="store_true", help="print the provider-ready request fields as JSON"
    )
    compact.add_argument(
        "--save", metavar="STATE.json", type=Path, help="also write the state, for 'render'"
    )
    compact.add_argument(
        "--allow-overflow",
        action="store_true",
        help="exit 0 even when the printed context is over the model's input window",
    )
    compact.set_defaults(run=run_compact)

    replayed = commands.add_parser(
        "replay",
        help="feed a conversation turn by turn through maybe_compact and report each compaction",
        description="Replay a conversation as an agent would, one message at a time, compacting "
        "whenever the budget is reached; print one line per compaction.",
    )
    _conversation_options(replayed)
    replayed.add_argument(
        "--probes",
        metavar="PROBES.json",
        type=Path,
        help="check which facts survive to the end, beside truncation at the same budget",
    )
    replayed.set_defaults(run=run_replay)

    render = commands.add_parser(
        "render",
        help="print a saved state as the summary header and the view",
        description="Print a state saved by 'compact --save' or ConversationState.to_json().",
    )
    render.add_argument("state", metavar="STATE.json", type=Path)
    render.add_argument("--schema", metavar="NAME|PATH", help="the state's summary schema")
    render.add_argument("--json", action="store_true", help="print the request fields as JSON")
    render.set_defaults(run=run_render)

    _show_command(commands)

    schemas = commands.add_parser(
        "schemas",
        help="list the summary schemas, or show the fields of one",
        description="List the summary schemas, or show the fields of NAME.",
    )
    schemas.add_argument("name", nargs="?", metavar="NAME|PATH")
    schemas.set_defaults(run=run_schemas)
    add_store_command(commands)
    return parser


def _show_command(commands: Any) -> None:  # noqa: ANN401 - argparse's subparsers action
    """``progsum show``: a saved state or a stored thread, readable in a terminal."""
    show = commands.add_parser(
        "show",
        help="show what a saved state or a stored thread holds: summary, values, recall, events",
        description="Show a state file (compact --save, ConversationState.to_json(), the Claude "
        "Code hook's <transcript>.progsum.json), or a thread of a store: every field of the "
        "summary with its items, the exact values the user stated, the recall index's size and "
        "the last compactions with their reasons.",
    )
    show.add_argument(
        "target",
        metavar="STATE.json|STORE",
        help="a state file, a SQLite store file or a postgresql:// URL",
    )
    show.add_argument(
        "--thread", metavar="ID", help="the thread of the store to show (without: list them)"
    )
    show.add_argument("--schema", metavar="NAME|PATH", help="the state's summary schema")
    show.add_argument(
        "--events", metavar="N", type=int, default=10, help="compaction events shown (default: 10)"
    )
    show.add_argument(
        "--values", metavar="N", type=int, default=30, help="ledger values shown (default: 30)"
    )
    show.set_defaults(run=run_show)


def _conversation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", type=Path, help="a conversation file")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="print progsum's log lines on stderr (-vv: also each model call)",
    )
    parser.add_argument(
        "--conversation",
        metavar="N|NAME",
        default="0",
        help="which conversation of a file that holds several (default: the first)",
    )
    parser.add_argument(
        "--schema", metavar="NAME|PATH", default="default", help="summary schema (default: default)"
    )
    parser.add_argument(
        "--budget",
        metavar="TOKENS",
        type=int,
        help="compact when the estimated context reaches this many tokens, without a safety "
        f"margin (default: {DEFAULT_BUDGET:,}; with --model alone: 90%% of its window, "
        "estimates x1.3)",
    )
    parser.add_argument(
        "--header-budget",
        metavar="TOKENS",
        type=int,
        help="consolidate the summary when its header exceeds this many tokens (default with "
        "--budget: 15%% of the window the budget is 90%% of, at least 500 where the window "
        "allows; with --model alone: 15%% of its window)",
    )
    parser.add_argument(
        "--model", help="the agent's model: its context window and tokenizer density"
    )
    parser.add_argument(
        "--keep",
        metavar="N",
        type=int,
        default=None,
        help="messages kept verbatim after a compaction (default: as many as fit the target)",
    )
    parser.add_argument(
        "--no-recall",
        action="store_true",
        help="quote no excerpts of folded messages before the newest user message (default: "
        "the most relevant ones, within 10%% of the window)",
    )
    parser.add_argument(
        "--summarizer",
        choices=("anthropic", "extractive"),
        help="who writes the summary (default: anthropic when ANTHROPIC_API_KEY is set, else "
        "extractive, offline)",
    )
