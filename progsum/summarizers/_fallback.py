"""Never block the agent: try summarizers in order, and say so when the preferred one failed.

`FallbackSummarizer(primary, *fallbacks)` returns the first valid update it gets: a member that
raises, returns something other than a `SummaryUpdate`, or adds to a field the request's schema
does not have has failed, and the next one is tried. When the primary failed, the update is
marked ``degraded`` with the reason; the engine records that on the event and remembers the
segment, so `Compactor.repair` can re-summarize it later. A failure never empties or replaces the
prior summary: the fallback's update is merged like any other.

It consolidates too (`progsum.summary._request.Consolidator`): `FallbackSummarizer.consolidate`
tries
the members that can, in order, and raises `SummarizerError` when none can or all failed, so the
engine falls back to dropping the least salient non-binding items.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, Literal, TypeAlias, cast

from progsum.errors import ConfigError, MessageFormatError, SummarizerError
from progsum.summarizers._steps import Asks, arun, run
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summary._request import (
    AsyncSummarizer,
    ConsolidationRequest,
    Summarizer,
    SummaryRequest,
    async_consolidator,
    call_async,
    checked_update,
    require_summarizer,
)
from progsum.summary._update import SummaryUpdate

__all__ = ["FallbackSummarizer", "default_summarizer"]

AnySummarizer = Summarizer | AsyncSummarizer

Task = Literal["summarize", "consolidate"]
"""What the chain is asked to do."""
_MAX_PROBLEM_CHARS = 400
"""The longest failure a degraded reason quotes per member."""
_CALLER_MISTAKES = (ConfigError, MessageFormatError)
"""Raised as they are: a fallback would hide a bug in the caller's set-up."""
Method: TypeAlias = Callable[[object, Task, list[str]], Callable[[Any], object] | None]
"""How a driver finds a member's method for a task (`_sync_method`, `_async_method`)."""


class FallbackSummarizer:
    """Try ``primary``, then each fallback in order, until one returns a valid update.

    Provider errors, exhausted validation, unexpected exceptions and invalid answers (not a
    `SummaryUpdate`, or adding to a field the schema does not have) move on to the next
    summarizer; configuration mistakes are raised as they are. If every summarizer fails, the
    last error is raised as a `SummarizerError`.

    Example:
        ``FallbackSummarizer(AnthropicSummarizer(), ExtractiveSummarizer())``
    """

    def __init__(self, primary: AnySummarizer, *fallbacks: AnySummarizer) -> None:
        for k, summarizer in enumerate((primary, *fallbacks)):
            require_summarizer(summarizer, "primary" if k == 0 else f"fallbacks[{k - 1}]")
        if not fallbacks:
            raise ConfigError(
                "FallbackSummarizer needs at least one fallback; e.g. "
                "FallbackSummarizer(AnthropicSummarizer(), ExtractiveSummarizer())"
            )
        self.primary = primary
        self.fallbacks = fallbacks

    @property
    def chain(self) -> tuple[AnySummarizer, ...]:
        """The summarizers in the order they are tried."""
        return (self.primary, *self.fallbacks)

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """The first update the chain produces, marked degraded if the primary failed."""
        return self._first(request, "summarize")

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Async `summarize`: awaits ``asummarize`` where a summarizer has it."""
        return await self._afirst(request, "summarize")

    def consolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
        """The first consolidation of a chain member that has ``consolidate``.

        Members without it are skipped (the extractive summarizer does not consolidate); the
        update is marked degraded when a member that has it failed first.

        Raises:
            SummarizerError: no member consolidates, or every one that does failed; the engine
                then drops the least salient non-binding items instead.
        """
        return self._first(request, "consolidate")

    async def aconsolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
        """Async `consolidate`: awaits ``aconsolidate`` where a member has it.

        A member with only a sync ``consolidate`` runs in a worker thread.

        Raises:
            SummarizerError: see `consolidate`.
        """
        return await self._afirst(request, "consolidate")

    def _first(self, request: Any, task: Task) -> SummaryUpdate:  # noqa: ANN401 - either request
        """Try each member's sync ``task`` in order; the first update, marked if others failed."""
        return run(self._trying(request, task, _sync_method))

    async def _afirst(self, request: Any, task: Task) -> SummaryUpdate:  # noqa: ANN401 - either
        """Async `_first`: awaits each member's async ``task``, or runs its sync one in a thread."""
        return await arun(self._trying(request, task, _async_method))

    def _trying(
        self,
        request: Any,  # noqa: ANN401 - either request
        task: Task,
        method: Method,
    ) -> Asks[SummaryUpdate]:
        """`_first`'s body: each member's ``task`` (found by ``method``) asked in turn."""
        failures: list[str] = []
        for summarizer in self.chain:
            call = method(summarizer, task, failures)
            if call is None:
                continue
            try:
                answer = yield functools.partial(call, request)
                update = _valid(summarizer, answer, request, task)
            except _CALLER_MISTAKES:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure moves on to the next summarizer
                failures.append(_failure(summarizer, exc, task))
                continue
            return _marked(update, failures, summarizer)
        raise SummarizerError(self._none_succeeded(failures, task))

    def _none_succeeded(self, failures: list[str], task: Task) -> str:
        if task == "summarize":
            return "every summarizer failed: " + "; ".join(failures)
        return self._none_consolidated(failures)

    def _none_consolidated(self, failures: list[str]) -> str:
        if failures:
            return "every summarizer that consolidates failed: " + "; ".join(failures)
        names = ", ".join(_name(s) for s in self.chain)
        return (
            f"no summarizer of the chain ({names}) can consolidate a summary; give one with a "
            "consolidate(request) method, such as AnthropicSummarizer, or let the engine drop "
            "the least salient non-binding items"
        )


def _name(summarizer: object) -> str:
    return type(summarizer).__name__


def _sync_method(
    summarizer: object, task: Task, failures: list[str]
) -> Callable[[Any], object] | None:
    """``summarizer``'s sync ``task``, or None: skipped (an async-only one noted as failed)."""
    call = getattr(summarizer, task, None)
    if callable(call):
        return cast("Callable[[Any], object]", call)
    if task == "summarize":
        failures.append(f"{_name(summarizer)} is async-only")
    return None


def _async_method(
    summarizer: object, task: Task, failures: list[str]
) -> Callable[[Any], object] | None:
    """``summarizer``'s async ``task`` (its sync one in a worker thread), or None: skipped."""
    del failures  # every summarizer can be awaited; one that cannot consolidate is just skipped
    if task == "summarize":
        return functools.partial(call_async, cast("AnySummarizer", summarizer))
    return async_consolidator(summarizer)


def _failure(summarizer: object, exc: BaseException, task: Task) -> str:
    """What failed and why, without the remedy: the chain already took the fallback's way."""
    what = _name(summarizer) if task == "summarize" else f"{_name(summarizer)}.{task}"
    problem = exc.problem if isinstance(exc, SummarizerError) else str(exc)
    text = " ".join(problem.split())
    if len(text) > _MAX_PROBLEM_CHARS:
        text = text[: _MAX_PROBLEM_CHARS - 1] + "…"
    return f"{what} failed ({type(exc).__name__}: {text})"


def _valid(
    summarizer: object,
    answer: object,
    request: SummaryRequest[Any] | ConsolidationRequest[Any],
    task: Task,
) -> SummaryUpdate:
    """``answer`` if it is a `SummaryUpdate` that adds only to the schema's list fields.

    Raises:
        SummarizerError: it is not, so the chain moves on to the next member.
    """
    update = checked_update(summarizer, answer, task)
    spec = request.spec
    names = [f.name for f in spec.lists]
    unknown = [name for name in update.add if name not in names]
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        raise SummarizerError(
            f"{_name(summarizer)}.{task} added to {listed}, which the {spec.name} schema does not "
            f"have; its list fields are: {', '.join(names)}"
        )
    return update


def _marked(update: SummaryUpdate, failures: list[str], used: object) -> SummaryUpdate:
    if not failures:
        return update
    reason = "; ".join(failures) + f"; used {_name(used)}"
    if update.degraded:
        reason += f" ({update.degraded})"
    return update.model_copy(update={"degraded": reason})


def default_summarizer() -> AnySummarizer:
    """The summarizer used when none is given.

    With ``ANTHROPIC_API_KEY`` set: Claude through `AnthropicSummarizer`, falling back to
    `ExtractiveSummarizer` so the agent loop never sees a summarizer failure. Without it: the
    offline `ExtractiveSummarizer` alone.
    """
    if not os.environ.get("ANTHROPIC_API_KEY"):
        return ExtractiveSummarizer()
    from progsum.summarizers.anthropic._summarizer import AnthropicSummarizer  # noqa: PLC0415 - heavy, lazy

    return FallbackSummarizer(AnthropicSummarizer(), ExtractiveSummarizer())
