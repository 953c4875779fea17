"""How a summary request is shaped for each Claude model family: tool choice, thinking, sampling.

A small table keyed by model id prefix (longest match wins). Anthropic documents, per family,
whether forcing a tool is allowed, what thinking does when the request leaves it out, which
``thinking`` values it accepts, and whether it refuses sampling parameters; ``docs/models.md``
cites the page of each rule. Every shape keeps Instructor's tool-based validation and re-ask:

* ``forced``: ``tool_choice`` names the update tool (Instructor's default). Only where thinking is
  off, since thinking is incompatible with forced tool use.
* ``auto``: ``tool_choice: auto`` with parallel tool use off. The model may think first; a reply
  without the tool call fails validation and is re-asked, like any invalid update.

Pure data and a lookup; no SDK import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SAMPLING_PARAMETERS", "SHAPES", "Shape", "shape_for"]

SAMPLING_PARAMETERS = ("temperature", "top_p", "top_k")
"""Request fields some families refuse with HTTP 400."""


@dataclass(frozen=True, slots=True)
class Shape:
    """The request fields that depend on the model family."""

    family: str
    """The family's name in messages and docs: "Claude Haiku 5.5"."""
    tool_choice: Literal["forced", "auto"]
    thinking: Mapping[str, Any] | None = None
    """The ``thinking`` field to send; None leaves it out (the family's default applies)."""
    sampling: bool = True
    """Whether ``temperature``, ``top_p`` and ``top_k`` are accepted."""

    def tool_choice_field(self, tool: str) -> dict[str, Any]:
        """The ``tool_choice`` request field for the update tool named ``tool``."""
        if self.tool_choice == "forced":
            return {"type": "tool", "name": tool, "disable_parallel_tool_use": True}
        return {"type": "auto", "disable_parallel_tool_use": True}


_DISABLED = {"type": "disabled"}
_BETWEEN_TOOLS = {"type": "between_tools"}

_CLAUDE_4 = Shape("Claude 4.x", "forced")
_UNKNOWN = Shape("an unknown model", "auto")
"""Never forces a tool and leaves thinking to the model: accepted by every documented family."""

SHAPES: Mapping[str, Shape] = {
    # Thinking is on by default; "disabled" is accepted at effort high or lower, and forcing the
    # tool is then allowed. Sampling parameters and assistant prefill return 400.
    "claude-haiku-5-5": Shape("Claude Haiku 5.5", "forced", _DISABLED, sampling=False),
    # Forced tool use returns 400; "between_tools" replaces "disabled" (no up-front thinking).
    "claude-sonnet-5-5": Shape("Claude Sonnet 5.5", "auto", _BETWEEN_TOOLS, sampling=False),
    # Forced tool use returns 400 and thinking cannot be disabled: leave it to the model.
    "claude-opus-5-5": Shape("Claude Opus 5.5", "auto"),
    "claude-fable-5-1": Shape("Claude Fable 5.1", "auto"),
    "claude-mythos-5-1": Shape("Claude Mythos 5.1", "auto"),
    # Claude 5: thinking is on by default. Opus 5 accepts "disabled" at effort high or lower.
    "claude-opus-5": Shape("Claude Opus 5", "forced", _DISABLED),
    # Sonnet 5 refuses sampling parameters; no page says it accepts "disabled", so it thinks.
    "claude-sonnet-5": Shape("Claude Sonnet 5", "auto", sampling=False),
    "claude-fable-5": Shape("Claude Fable 5", "auto"),
    "claude-mythos-5": Shape("Claude Mythos 5", "auto"),
    # Claude 4.x and 3.x: thinking is off unless asked for, so the tool may be forced.
    "claude-opus-4": _CLAUDE_4,
    "claude-sonnet-4": _CLAUDE_4,
    "claude-haiku-4": _CLAUDE_4,
    "claude-3": Shape("Claude 3.x", "forced"),
}


def shape_for(model: str | None) -> Shape:
    """The shape for ``model`` by longest prefix, or the one every family accepts.

    An unknown model gets ``tool_choice: auto`` with thinking left out.

    Bedrock (``anthropic.claude-...``, ``us.anthropic.claude-...``) and Vertex
    (``claude-...@date``) ids resolve by their ``claude-`` part.
    """
    if not model:
        return _UNKNOWN
    name = model.strip().lower()
    start = name.find("claude-")
    name = name[start:] if start >= 0 else name
    best = max((prefix for prefix in SHAPES if name.startswith(prefix)), key=len, default="")
    return SHAPES[best] if best else _UNKNOWN
