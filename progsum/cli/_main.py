"""The implementation of `progsum.cli.main` (see its docstring)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from progsum.cli._parser import build_parser
from progsum.cli._status import EXIT_INPUT, EXIT_USAGE, UsageError
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
