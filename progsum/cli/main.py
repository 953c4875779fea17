"""The ``progsum`` command line: compact, replay and render conversations from files.

Commands (``progsum COMMAND --help`` for every option):

* ``progsum compact FILE``: compact a conversation under a token budget and print what a model
  would be sent: the summary header and the verbatim messages (``--json``: the provider-ready
  request fields). A report goes to stderr: tokens before and after, items per field, model
  calls and cost.
* ``progsum replay FILE``: feed the conversation turn by turn through ``maybe_compact``, as an
  agent would, printing one line per compaction; ``--probes probes.json`` checks which facts
  survive to the end, beside plain truncation at the same budget (`progsum.replay.probes`).
* ``progsum render STATE.json``: a state saved by ``compact --save`` or
  ``ConversationState.to_json()``, as the header and the view.
* ``progsum schemas [NAME]``: the summary schemas and their fields.
* ``progsum store init URL``: create or upgrade a store's tables (`progsum.cli.store`).

Messages are numbered from 1, as in the summary header and in the placeholders of cleared tool
output. Input files are read by `progsum.replay.importers` (Anthropic or OpenAI JSON and JSON Lines,
Claude Code session logs, τ-bench records, SWE-agent trajectories). Without
``ANTHROPIC_API_KEY`` the extractive summarizer runs offline. Bad input is one line on stderr and
exit status 1 (bad file) or 2 (bad usage), never a traceback. When ``compact`` prints a context
that is still over the model's input window, the report says why in one line and the exit status
is 3 (``--allow-overflow`` accepts it: status 0).

`main` is the console entry point. Each command is a module of `progsum.cli` (``compact``,
``replay``, ``render``, ``schemas``, ``store``) whose options `progsum.cli.parser` declares;
`progsum.cli.options` turns them into values, `progsum.cli.summarizer` picks the summarizer and
`progsum.cli.output` prints. `budget_policy`, `DEFAULT_BUDGET` and `PRICES` are re-exported for
scripts (``bench/``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from progsum.cli.parser import build_parser
from progsum.cli.status import EXIT_INPUT, EXIT_USAGE, UsageError
from progsum.errors import ProgsumError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 bad input, 2 bad usage)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    command: Callable[[argparse.Namespace], int] = args.run
    try:
        with _verbose(args.verbose):
            return command(args)
    except UsageError as error:
        sys.stderr.write(f"progsum {args.command}: {error}\n")
        return EXIT_USAGE
    except ProgsumError as error:
        sys.stderr.write(f"progsum {args.command}: {error}\n")
        return EXIT_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("progsum: interrupted\n")
        return 130


LOG_FORMAT = "%(name)s %(levelname)s: %(message)s"
"""How ``-v`` prints progsum's log lines on stderr."""


class _verbose:  # noqa: N801 - used as a context manager, like contextlib's lowercase ones
    """With ``-v``, progsum's INFO lines (``-vv``: DEBUG) on stderr for the command's run."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.handler: logging.Handler | None = None
        self.previous = logging.NOTSET

    def __enter__(self) -> None:
        if not self.level:
            return
        logger = logging.getLogger("progsum")
        self.handler = logging.StreamHandler(sys.stderr)
        self.handler.setFormatter(logging.Formatter(LOG_FORMAT))
        self.previous = logger.level
        logger.addHandler(self.handler)
        logger.setLevel(logging.INFO if self.level == 1 else logging.DEBUG)

    def __exit__(self, *_: object) -> None:
        if self.handler is not None:
            logger = logging.getLogger("progsum")
            logger.removeHandler(self.handler)
            logger.setLevel(self.previous)
