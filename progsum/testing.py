"""Fakes for testing code that uses progsum, without a model or a network.

Both fakes record every request they receive (``.requests``), work sync and async, and implement the
`progsum.summarizer.Summarizer` protocol::

    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": ["Never touch the prod DB."]}))
    state = Compactor(policy=policy, summarizer=fake).compact(state, force=True)
    assert fake.requests[0].segment.start == 1
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from progsum.messages import Message
from progsum.schema import Summary, SummaryT
from progsum.state import ConversationState
from progsum.summarizer import Segment, SummaryRequest
from progsum.update import SummaryUpdate

__all__ = ["FunctionSummarizer", "QueuedSummarizer", "summary_request"]

SummarizeFunction = Callable[[SummaryRequest[Any]], SummaryUpdate | Awaitable[SummaryUpdate]]


class FunctionSummarizer:
    """A summarizer backed by a function of the request (sync or async).

    Example:
        ``FunctionSummarizer(lambda request: SummaryUpdate(add={"decisions": ["Use Postgres."]}))``
    """

    def __init__(self, function: SummarizeFunction) -> None:
        self.function = function
        self.requests: list[SummaryRequest[Any]] = []

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Record the request and return the function's update."""
        self.requests.append(request)
        result = self.function(request)
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if callable(close):
                close()
            raise TypeError(
                "FunctionSummarizer wraps an async function; call it through the async engine "
                "(await compactor.amaybe_compact(state))"
            )
        return result

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Record the request and return (awaiting if needed) the function's update."""
        self.requests.append(request)
        result = self.function(request)
        if inspect.isawaitable(result):
            return await result
        return result


class QueuedSummarizer:
    """A summarizer that returns queued updates in order, or raises queued exceptions.

    Example:
        ``QueuedSummarizer(SummaryUpdate(...)).enqueue(TimeoutError())``
    """

    def __init__(self, *responses: SummaryUpdate | BaseException) -> None:
        self.queue: deque[SummaryUpdate | BaseException] = deque(responses)
        self.requests: list[SummaryRequest[Any]] = []

    def enqueue(self, *responses: SummaryUpdate | BaseException) -> QueuedSummarizer:
        """Add responses to the end of the queue; returns self for chaining."""
        self.queue.extend(responses)
        return self

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Record the request and return (or raise) the next queued response."""
        self.requests.append(request)
        if not self.queue:
            raise LookupError(
                f"QueuedSummarizer got request {len(self.requests)} but its queue is empty; "
                "enqueue() one SummaryUpdate per expected compaction"
            )
        response = self.queue.popleft()
        if isinstance(response, BaseException):
            raise response
        return response

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Async `summarize`."""
        return self.summarize(request)


def summary_request(
    messages: Sequence[Message],
    *,
    prior: SummaryT | None = None,
    schema: type[SummaryT] = Summary,  # type: ignore[assignment]  # mypy cannot default a TypeVar-typed parameter
    start: int = 0,
) -> SummaryRequest[SummaryT]:
    """The request the engine would send a summarizer for ``messages`` as one segment.

    For testing a summarizer directly: ``my_summarizer.summarize(summary_request(messages))``.

    Args:
        messages: The segment; validated like a conversation of its own.
        prior: The summary before this segment (default: an empty one of ``schema``).
        schema: The summary schema.
        start: Log index of the first message.
    """
    state = ConversationState(messages)
    infos = tuple(state.infos)
    segment = Segment(start=start, messages=tuple(messages), infos=infos, format=state.format)
    return SummaryRequest.for_segment(
        prior=prior if prior is not None else schema(), segment=segment, schema=schema
    )
