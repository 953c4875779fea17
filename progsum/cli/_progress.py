"""Progress bars on stderr for long runs: a replay, a conversation read into a state.

Drawn by ``rich`` when stderr is a terminal (rich's own ``TTY_COMPATIBLE`` and ``FORCE_COLOR``
decide, as for any rich program), else nothing, so a pipe or a log file gets no control codes.
Lines written to stdout while a bar is shown go above it when stdout is the same terminal.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bar

from progsum.replay._importers import Imported
from progsum.state._conversation import ConversationState

__all__ = ["CHUNK", "Progress", "imported_state"]

CHUNK = 500
"""Messages read into a state between two redraws of the import bar."""
_LONG = 2 * CHUNK
"""Conversations shorter than this are read at once, without a bar."""


class Progress:
    """A progress bar over ``total`` steps on stderr, while the ``with`` block runs."""

    def __init__(self, total: int, what: str, *, unit: str = "messages") -> None:
        self.total = max(1, total)
        self.step = max(1, total // 200)
        console = Console(stderr=True)
        self._bar: Bar | None = None
        if console.is_terminal:
            self._bar = Bar(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(unit + "{task.fields[note]}"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
                auto_refresh=False,
                redirect_stdout=sys.stdout.isatty(),
                redirect_stderr=False,
            )
            self._task = self._bar.add_task(what, total=self.total, note="")

    def __enter__(self) -> Self:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, done: int, note: str = "") -> None:
        """Redraw after ``done`` steps (every half percent, and at the end)."""
        if self._bar is None or (done % self.step and done < self.total):
            return
        suffix = f", {note}" if note else ""
        self._bar.update(self._task, completed=done, note=suffix)
        self._bar.refresh()


def imported_state(conversation: Imported) -> ConversationState[Any]:
    """``conversation`` as a state; a long one is read in chunks under a progress bar."""
    messages = conversation.messages
    if len(messages) < _LONG:
        return conversation.state()
    authors = conversation.authors
    state: ConversationState[Any] = ConversationState()
    with Progress(len(messages), f"reading {conversation.name}") as bar:
        for start in range(0, len(messages), CHUNK):
            chunk = messages[start : start + CHUNK]
            told = None if authors is None else authors[start : start + CHUNK]
            state = state.extend(chunk, authors=told)
            bar.update(len(state))
    return state
