"""What the command line returns: its exit statuses, and the error for a bad use of it."""

from __future__ import annotations

__all__ = ["EXIT_INPUT", "EXIT_OVERFLOW", "EXIT_USAGE", "UsageError"]

EXIT_INPUT = 1
"""A bad input file, or a run-time failure."""
EXIT_USAGE = 2
"""Bad arguments (argparse's own convention)."""
EXIT_OVERFLOW = 3
"""``compact`` printed a context over the input window (without ``--allow-overflow``)."""


class UsageError(Exception):
    """A bad combination of arguments: exit status 2."""
