"""What a summarizer returns: new items per field, retirements with reasons, an optional objective.

The summarizer never rewrites the prior summary; it proposes a delta and `progsum.summary._merge`
applies it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from progsum.judge._provenance import Author
from progsum.summary._validated import Validated

__all__ = ["NewItem", "Retirement", "SummarizerUsage", "SummaryUpdate"]


class NewItem(BaseModel):
    """A new item, optionally with the log index of the message it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    at: int | None = None
    """Log index of the message that stated it; the whole segment when unknown."""
    origin: Literal["summarizer", "extracted"] = "summarizer"
    """``extracted`` when copied verbatim from the conversation rather than written."""
    cites: tuple[int, ...] = ()
    """Log indices of the messages that state it. A binding item must cite a message the user
    wrote; without citations the engine looks for one in the segment (`progsum.contract`)."""
    author: Author | None = None
    """Who wrote the cited messages; set by the engine's contract check, not by summarizers."""


class Retirement(BaseModel):
    """Retire a prior item by id.

    A binding item is retired only on the user's word: ``evidence`` names the message of the
    folded segment in which the user reopens, changes or lifts it, and the engine checks that the
    user wrote it and that it refers to the item (`progsum.contract`). Without ``evidence`` the
    engine looks for such a message in the segment; a reason alone never suffices.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    reason: str = ""
    evidence: int | None = None
    """Log index of the user's message that reopens the item (binding items)."""


class SummarizerUsage(BaseModel):
    """What one summarizer call cost, kept apart from the agent's own usage."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    latency_s: float = 0.0
    calls: int = 1
    chunks: tuple[tuple[int, int], ...] = ()
    """Log ranges summarized by separate calls because the whole segment's prompt would have
    passed the model's long-prompt price threshold; empty when one request covered it."""
    cache_note: str | None = None
    """Said once per summarizer when a prompt cache it asked for was never read (below the
    model's minimum, or rewritten on every call)."""

    def __add__(self, other: SummarizerUsage) -> SummarizerUsage:
        """Sum two usages field by field (chunks in order, the first cache note)."""
        return SummarizerUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            latency_s=self.latency_s + other.latency_s,
            calls=self.calls + other.calls,
            chunks=self.chunks + other.chunks,
            cache_note=self.cache_note or other.cache_note,
        )


class SummaryUpdate(Validated):
    """A summarizer's proposal for one segment.

    Example:
        ``SummaryUpdate(add={"constraints": ["Budget is at most $3,000."]},
        retire=[Retirement(id="O2", reason="answered: the flight is booked")])``
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    objective: str | None = None
    """A new objective, only when the goal itself changed; None keeps the current one."""
    add: Mapping[str, tuple[str | NewItem, ...]] = Field(default_factory=dict)
    """New items per list field name."""
    retire: tuple[Retirement, ...] = ()
    """Prior items that the segment superseded or resolved."""
    usage: SummarizerUsage | None = None
    """Tokens and latency of the call that produced this update, when a model was called."""
    degraded: str | None = None
    """Set by fallback summarizers: why the preferred summarizer was not used."""

    shape_hint: ClassVar[str] = (
        "add maps a field name to a list of item texts and retire is a list of Retirement, e.g. "
        "SummaryUpdate(add={'constraints': ['Budget: $3,000.']}, "
        "retire=[Retirement(id='O2', reason='answered in message 9')])"
    )
