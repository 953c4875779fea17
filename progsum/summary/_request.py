"""The summarizer protocol: one method from a request (prior summary + segment) to an update.

A summarizer is anything with ``summarize(request) -> SummaryUpdate`` (sync), and optionally
``asummarize(request)`` (async; without it the async engine runs ``summarize`` in a thread). The
fakes in `progsum.testing` implement it for tests; the Anthropic summarizer calls a model.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any, Generic, Protocol, TypeAlias, cast, runtime_checkable

from progsum.errors import ConfigError, SummarizerError
from progsum.judge._dates import carried_days
from progsum.judge._extract import Extraction, extract
from progsum.judge._provenance import Author, classify
from progsum.messages._formats import Format, Message, MessageInfo
from progsum.summary._schema import SchemaSpec, SummaryT, spec_of
from progsum.summary._update import SummaryUpdate

__all__ = [
    "AsyncSummarizer",
    "ConsolidateCall",
    "ConsolidationRequest",
    "Consolidator",
    "Segment",
    "Summarizer",
    "SummaryRequest",
    "async_consolidator",
    "call_async",
    "checked_update",
    "require_summarizer",
]


@dataclass(frozen=True, slots=True)
class Segment:
    """The messages to fold, with their log indices.

    Iterating yields ``(log_index, message)`` pairs.
    """

    start: int
    """Log index of the first message."""
    messages: tuple[Message, ...]
    """The caller's message objects, unchanged."""
    infos: tuple[MessageInfo, ...]
    """What progsum read from each message (role, tool calls)."""
    format: Format | None
    """The conversation's format, or None while either fits."""
    authors: tuple[Author, ...] = ()
    """Who wrote each message (`progsum.judge._provenance`); decided by `classify` if not given."""
    days: tuple[date | None, ...] = ()
    """Each message's day (`progsum.judge._dates.carried_days`): its own, else the latest one
    before it; read off the segment alone when not given."""
    previous: str = ""
    """The prose said just before the segment (`progsum.judge._extract.preceding_prose`): the
    context in which the judge reads the segment's first message."""

    def __post_init__(self) -> None:
        if len(self.authors) != len(self.messages):
            if self.authors:
                raise ConfigError(
                    f"the segment has {len(self.messages)} messages but {len(self.authors)} "
                    "authors; give one author class per message, or none"
                )
            authors = tuple(classify(m, i) for m, i in zip(self.messages, self.infos, strict=True))
            object.__setattr__(self, "authors", authors)
        if len(self.days) != len(self.messages):
            if self.days:
                raise ConfigError(
                    f"the segment has {len(self.messages)} messages but {len(self.days)} days; "
                    "give one day (or None) per message, or none"
                )
            object.__setattr__(self, "days", carried_days(self.messages))

    def author(self, at: int) -> Author | None:
        """Who wrote log message ``at``, or None when it is outside the segment."""
        offset = at - self.start
        return self.authors[offset] if 0 <= offset < len(self.authors) else None

    @property
    def end(self) -> int:
        """Log index after the last message."""
        return self.start + len(self.messages)

    def __iter__(self) -> Iterator[tuple[int, Message]]:
        return iter(enumerate(self.messages, self.start))

    def __len__(self) -> int:
        return len(self.messages)


@dataclass(frozen=True, slots=True)
class SummaryRequest(Generic[SummaryT]):
    """What a summarizer receives: the prior summary, the segment to fold, and the schema."""

    prior: SummaryT
    """The current summary (empty before the first compaction), with item ids."""
    segment: Segment
    schema: type[SummaryT]
    extraction: Extraction
    """Must-keep candidates the judge found in the segment: prohibitions, obligations, questions,
    the user's exact values."""
    head: Segment | None = None
    """The kept head (leading system messages and the first task message), which stays verbatim
    in front of the context: a binding item may restate what the user wrote there."""

    @classmethod
    def for_segment(
        cls,
        *,
        prior: SummaryT,
        segment: Segment,
        schema: type[SummaryT],
        head: Segment | None = None,
    ) -> SummaryRequest[SummaryT]:
        """The request for ``segment``, with the extractive pass run over it."""
        extraction = extract(
            segment.messages,
            segment.infos,
            start=segment.start,
            authors=segment.authors,
            days=segment.days,
            previous=segment.previous,
        )
        return cls(prior=prior, segment=segment, schema=schema, extraction=extraction, head=head)

    @property
    def spec(self) -> SchemaSpec:
        """The schema's fields: labels, descriptions, binding flags."""
        return spec_of(self.schema)


@dataclass(frozen=True, slots=True)
class ConsolidationRequest(Generic[SummaryT]):
    """The rendered summary outgrew its budget: what a consolidating summarizer receives.

    The answer is a `SummaryUpdate` that retires near-duplicate and verbose items of non-binding
    fields (each with a reason) and adds condensed replacements that keep every exact value of
    what they replace. The engine refuses retirements of binding items, and of items whose exact
    values would then appear nowhere in the summary.
    """

    summary: SummaryT
    """The current summary, with item ids."""
    schema: type[SummaryT]
    budget: int
    """Tokens the rendered header may take (the policy's ``header_budget``)."""
    tokens: int
    """Tokens it takes now."""

    @property
    def spec(self) -> SchemaSpec:
        """The schema's fields: labels, descriptions, binding flags."""
        return spec_of(self.schema)


@runtime_checkable
class Consolidator(Protocol):
    """A summarizer that can also condense a summary that outgrew its budget (optional)."""

    def consolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
        """Merge near-duplicates and condense non-binding items; see `ConsolidationRequest`."""
        ...


@runtime_checkable
class Summarizer(Protocol):
    """Turns a segment into an update of the summary."""

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Propose new items, retirements and possibly a new objective for ``request.segment``."""
        ...


@runtime_checkable
class AsyncSummarizer(Protocol):
    """The async twin of `Summarizer`."""

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Async version of `Summarizer.summarize`."""
        ...


async def call_async(
    summarizer: Summarizer | AsyncSummarizer, request: SummaryRequest[Any]
) -> SummaryUpdate:
    """Await the summarizer's ``asummarize`` if it has one, else run ``summarize`` in a thread."""
    asummarize = getattr(summarizer, "asummarize", None)
    if asummarize is not None and inspect.iscoroutinefunction(asummarize):
        return await cast("AsyncSummarizer", summarizer).asummarize(request)
    summarize = getattr(summarizer, "summarize", None)
    if not callable(summarize):
        raise ConfigError(f"{type(summarizer).__name__} has neither summarize nor asummarize")
    return await asyncio.to_thread(cast("Summarizer", summarizer).summarize, request)


def require_summarizer(summarizer: object, name: str = "summarizer") -> None:
    """Check that ``summarizer`` has ``summarize`` or ``asummarize``.

    Raises:
        ConfigError: it has neither.
    """
    if not (
        callable(getattr(summarizer, "summarize", None))
        or callable(getattr(summarizer, "asummarize", None))
    ):
        raise ConfigError(
            f"{name}={summarizer!r} has no summarize(request) method; pass a progsum summarizer "
            "or a progsum.testing fake"
        )


def checked_update(summarizer: object, update: object, method: str = "summarize") -> SummaryUpdate:
    """``update`` if it is a `SummaryUpdate`.

    Args:
        summarizer: Who returned it.
        update: What it returned.
        method: The method that returned it (``summarize`` or ``consolidate``), for the message.

    Raises:
        SummarizerError: the summarizer returned something else.
    """
    if not isinstance(update, SummaryUpdate):
        raise SummarizerError(
            f"{type(summarizer).__name__}.{method} returned {type(update).__name__}; return a "
            "progsum.SummaryUpdate"
        )
    return update


ConsolidateCall: TypeAlias = Callable[[ConsolidationRequest[Any]], Awaitable[SummaryUpdate]]
"""An awaitable consolidation: ``await call(request)``."""


def async_consolidator(summarizer: object) -> ConsolidateCall | None:
    """``summarizer``'s ``aconsolidate``, else its ``consolidate`` in a thread, else None."""
    acall = getattr(summarizer, "aconsolidate", None)
    if acall is not None and inspect.iscoroutinefunction(acall):
        return cast("ConsolidateCall", acall)
    call = getattr(summarizer, "consolidate", None)
    if not callable(call):
        return None

    async def in_thread(request: ConsolidationRequest[Any]) -> SummaryUpdate:
        return cast("SummaryUpdate", await asyncio.to_thread(call, request))

    return in_thread
