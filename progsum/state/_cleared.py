"""What the reduction stage cleared: one `Cleared` mark per block, as the state records it.

The placeholder text is decided once, when the block is cleared, so every later render of the
same state is byte-identical. `progsum.state._shown` applies the marks to the model view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

__all__ = ["CLEARED_KEY", "OPENAI_CONTENT", "Cleared", "still_in_view"]

CLEARED_KEY = "progsum_cleared"
"""Key of the placeholder in a cleared tool-call input (inputs must stay JSON objects)."""


OPENAI_CONTENT = -1
"""`Cleared.block` of a message's string content (an OpenAI tool message's, or a plain text)."""


class Cleared(NamedTuple):
    """One cleared block of a logged message, as the state records it."""

    at: int
    """Log index of the message."""
    block: int
    """Anthropic: the content block's position; OpenAI: ``tool_calls`` position, or -1 for the
    content of a ``tool`` message."""
    placeholder: str
    """What the model sees instead."""
    chars: int
    """Characters removed."""
    saved: int
    """Estimated tokens saved."""


def still_in_view(  # noqa: PLR0917 - the two views of a move, before and after
    in_view: tuple[Cleared, ...],
    every: tuple[Cleared, ...],
    new: tuple[Cleared, ...],
    is_kept: Callable[[int], bool],
    pinned: tuple[int, int] | None,
    was_pinned: tuple[int, int] | None,
) -> tuple[Cleared, ...]:
    """The cleared blocks of messages in view after a change of cutoff, pin or cleared marks.

    Blocks of messages that left the view go; a round folded before and pinned now brings its
    blocks back; ``new`` marks are added.
    """
    shown = tuple(c for c in in_view if is_kept(c.at))
    if pinned is not None and pinned != was_pinned:
        back = [c for c in every if pinned[0] <= c.at < pinned[1]]
        shown += tuple(c for c in back if c not in shown)
    return shown + new
