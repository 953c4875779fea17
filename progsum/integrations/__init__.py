"""Drop-in adapters for agent frameworks, one module per framework, each behind an extra.

=====================================  ================================  =========================
module                                 what it gives                     install
=====================================  ================================  =========================
`progsum.integrations.langchain`       ``ProgsumMiddleware`` for         ``progsum[langchain]``
                                       ``create_agent`` (LangGraph)
`progsum.integrations.pydantic_ai`     ``ProgsumCapability`` for         ``progsum[pydantic-ai]``
                                       ``Agent(capabilities=[...])``
`progsum.integrations.openai_agents`   ``ProgsumSession``, an Agents     ``progsum[openai-agents]``
                                       SDK ``Session``
`progsum.integrations.claude_code`     a ``PreCompact``/``SessionStart`` (none)
                                       hook command
=====================================  ================================  =========================

Importing an adapter without its framework raises `ImportError` naming the extra to install.
progsum itself never imports this package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from progsum.state.conversation import ConversationState

__all__ = ["missing", "quoted_at", "usage_report"]


def missing(framework: str, extra: str) -> str:
    """The error message for an adapter whose framework is not installed."""
    return (
        f"this progsum integration needs {framework}, which is not installed; install it with "
        f"python -m pip install 'progsum[{extra}]'"
    )


def usage_report(
    input_tokens: int, output_tokens: int, *, cache_read: int = 0, cache_write: int = 0
) -> dict[str, int] | None:
    """One model call's usage as progsum reads it, from a framework's per-call figures.

    pydantic-ai, the Agents SDK and LangChain count cache reads and writes inside
    ``input_tokens``; progsum's usage fields are Anthropic's, where they are apart, so the
    uncached input is what remains. The total, which anchors the token count, is unchanged.
    None when the call reported nothing (a fake or a provider without usage).
    """
    input_tokens, output_tokens = max(0, input_tokens), max(0, output_tokens)
    if input_tokens + output_tokens == 0:
        return None
    read = min(max(0, cache_read), input_tokens)
    written = min(max(0, cache_write), input_tokens - read)
    return {
        "input_tokens": input_tokens - read - written,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
    }


def quoted_at(state: ConversationState[Any], indices: Sequence[int]) -> tuple[int, str] | None:
    """Where the recall block goes among kept log ``indices``, and the block; None without one.

    The position is that of the message the recall answers (`progsum.recall`); each adapter
    quotes the block there in its framework's own message type.
    """
    block, recall = state.recall_block, state.recall
    if not block or recall is None or recall.at not in indices:
        return None
    return indices.index(recall.at), block
