"""What the reduction stage cleared: one `Cleared` mark per block, as the state records it.

The placeholder text is decided once, when the block is cleared, so every later render of the
same state is byte-identical. `progsum.render.view` applies the marks to the model view.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CLEARED_KEY", "OPENAI_CONTENT", "Cleared"]

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
