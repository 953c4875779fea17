"""Instructor's log records, kept at most at WARNING: progsum raises (or falls back) on them."""

from __future__ import annotations

import functools
import logging

__all__ = ["quiet_instructor"]


class _AtMostWarning(logging.Filter):
    """Lowers Instructor's ERROR records to WARNING: progsum raises (or falls back) on them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


@functools.cache
def quiet_instructor() -> None:
    """Keep Instructor's loggers at most at WARNING and off stderr unless logging is configured.

    Instructor logs each failed attempt at ERROR, with the rejected output, although progsum
    translates the failure into its own error or a fallback. A logger a user set a level on
    (``logging.getLogger("instructor").setLevel(logging.DEBUG)``) is left alone; a NullHandler
    keeps Python's last-resort handler from printing records nobody configured logging for.
    """
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] == "instructor"]
    root = logging.getLogger("instructor")
    if root.level != logging.NOTSET:
        return
    root.addHandler(logging.NullHandler())
    for name in {"instructor", *names}:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.addFilter(_AtMostWarning())
