"""What the framework adapters share: the missing-extra message, usage, what a request shows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from progsum.state._cleared import Cleared

if TYPE_CHECKING:
    from progsum.state._conversation import ConversationState

__all__ = ["Shown", "missing", "shown", "usage_report"]


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


class Shown(NamedTuple):
    """What a request shows of one log message the model view keeps.

    Each adapter applies it to its framework's own message, in a copy: the cleared blocks'
    placeholders, then the recall block quoted first, and without its thinking when stale.
    """

    at: int
    """Log index of the message."""
    cleared: tuple[Cleared, ...]
    """Its blocks the cheap reduction cleared (`Cleared.block`, `Cleared.placeholder`)."""
    block: str
    """The recall block quoted before it ('' for none)."""
    stale: bool
    """Its thinking goes: it was produced under a prefix progsum has since changed, and the
    request goes to a model that binds thinking to its prefix
    (`progsum.render._view.strips`)."""


def shown(state: ConversationState[Any], *, strip: bool) -> list[Shown]:
    """Per message of the model view (`ConversationState.view`), what a request shows of it.

    The messages are the kept first task message, the pinned opening round and the verbatim
    tail, in log order. Every recall block in view is quoted with its message (`state.quotes`),
    not only the newest: a message is sent as it was first sent until the next fold (append-only
    requests, docs/architecture.md). With ``strip``, the messages `progsum.state._edits` calls
    stale lose their thinking (docs/thinking-rules.md, T7).
    """
    blocks = dict(state.quotes)
    marks: dict[int, list[Cleared]] = {}
    for mark in state.cleared_in_view:
        marks.setdefault(mark.at, []).append(mark)
    edits = state.edits
    return [
        Shown(at, tuple(marks.get(at, ())), blocks.get(at, ""), strip and edits.stale(at))
        for at in state.view.at
    ]
