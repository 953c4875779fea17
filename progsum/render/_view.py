"""The model view of kept messages: what a renderer sends, with or without stale reasoning.

The state builds the view of its kept messages once per change (`progsum.state._shown`: cleared
tool data as placeholders, each recall block quoted before the message it answers) and, for
models whose reasoning is bound to its prefix, the same view without the thinking produced under
a prefix progsum has since changed (`ConversationState.fresh_view`, `progsum.state._edits`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from progsum.errors import ConfigError
from progsum.policy._windows import preserves_reasoning
from progsum.state._conversation import ConversationState

__all__ = [
    "DROP_BLOCK_BETA",
    "Thinking",
    "drop_block_thinking",
    "strips",
    "visible",
]

Thinking = Literal["auto", "strip", "keep", "drop_block"]
"""What a renderer does with thinking produced under a prefix progsum changed:

* ``auto``: ``strip`` on a model whose reasoning is bound to its prefix (and on a model the
  table does not know, or none), ``keep`` on an older one (`progsum.policy._windows`);
* ``strip``: leave it out (the documented alternative to a refused request);
* ``keep``: send every block as logged (older models: thinking kept whole, rules T1-T6);
* ``drop_block``: send every block and let the API drop the invalid ones: the request must carry
  `drop_block_thinking` and the `DROP_BLOCK_BETA` header (Anthropic only).
"""
_MODES = ("auto", "strip", "keep", "drop_block")

DROP_BLOCK_BETA = "thinking-binding-controls-2026-08-01"
"""The beta header that lets a request choose what a failed prefix check does (Anthropic,
"Fix a thinking block bound to a different conversation")."""


def drop_block_thinking(thinking: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``thinking`` request field with the API asked to drop blocks whose prefix changed.

    ``thinking`` is the field the request would carry otherwise (default ``{"type":
    "adaptive"}``, what models with preserved thinking do when it is left out); send it with the
    `DROP_BLOCK_BETA` header, through the SDK's beta Messages method, on every request of the
    conversation.
    """
    field: dict[str, Any] = dict(thinking) if thinking is not None else {"type": "adaptive"}
    field["block_binding"] = {"prefix_mismatch_behavior": "drop_block"}
    return field


def strips(thinking: Thinking, model: str | None) -> bool:
    """Whether a request in ``thinking`` mode to ``model`` leaves stale thinking out.

    Raises:
        ConfigError: ``thinking`` is not one of the modes.
    """
    if thinking not in _MODES:
        raise ConfigError(
            f"thinking={thinking!r} is not a mode; use one of {', '.join(map(repr, _MODES))} "
            "('auto' decides by the model's family)"
        )
    if thinking == "auto":
        return preserves_reasoning(model)
    return thinking == "strip"


def visible(state: ConversationState[Any], *, strip: bool = False) -> list[Any]:
    """The effective messages as the model sees them, recall blocks quoted.

    Cleared blocks show their placeholders and a tool result repeated for one call is shown
    once; each message a recall answers opens with its block. With ``strip``, thinking produced
    under a prefix progsum has changed is left out (`ConversationState.fresh_view`).
    """
    if strip:
        return list(state.fresh_view.messages)
    return list(state.view.messages)
