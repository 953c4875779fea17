"""The I/O a stage sequence asks for, and the two ways to perform it: in line, or awaited.

A stage sequence (`progsum.engine._drivers`) is a generator: it decides over frozen values and
yields each piece of I/O it needs as an effect (a summarizer call, blocking archive work). `step`
performs each effect in line and `astep` awaits it (the summarizer's async method, the archive's
work in a worker thread, off the event loop); both send the result back into the sequence, or
throw the error in where it was asked, so spans, error naming and backoff live once, in the
sequence. As h11 is to httpcore: the decisions hold no I/O, the drivers hold no decisions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, cast

from progsum._driving import adrive, drive
from progsum.summary._request import (
    AsyncSummarizer,
    ConsolidationRequest,
    Consolidator,
    Summarizer,
    SummaryRequest,
    async_consolidator,
    call_async,
)

__all__ = [
    "Blocking",
    "Call",
    "Consolidate",
    "Effect",
    "Steps",
    "Summarize",
    "astep",
    "step",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Summarize:
    """Ask ``summarizer`` to summarize ``request``; the answer is sent back as it came."""

    summarizer: Summarizer | AsyncSummarizer
    request: SummaryRequest[Any]


@dataclass(frozen=True, slots=True)
class Consolidate:
    """Ask ``summarizer`` to consolidate ``request`` (the sequence checked that it can)."""

    summarizer: object
    request: ConsolidationRequest[Any]


@dataclass(frozen=True, slots=True)
class Blocking:
    """Blocking work (the archive's reads and writes): ``work()``'s result is sent back."""

    work: Callable[[], object]


@dataclass(frozen=True, slots=True)
class Call:
    """A call with a sync and an async form, for sequences above the engine.

    The sync driver calls ``blocking()``, the async one awaits ``awaiting()``; a caller that
    steps only one way leaves the other None.
    """

    blocking: Callable[[], object] | None
    awaiting: Callable[[], Awaitable[object]] | None


Effect: TypeAlias = Summarize | Consolidate | Blocking | Call
"""What a stage sequence yields."""

Steps: TypeAlias = Generator[Effect, object, T]
"""A stage sequence: yields effects, is sent their results, returns its outcome."""


def step(steps: Steps[T]) -> T:
    """Run ``steps`` to its end, performing each effect in line (the sync driver)."""
    return drive(steps, _perform)


async def astep(steps: Steps[T]) -> T:
    """Run ``steps`` to its end, awaiting each effect (the async driver)."""
    return await adrive(steps, _aperform)


def _perform(effect: Effect) -> object:
    """Do ``effect`` in line: the summarizer's sync method, the blocking work itself."""
    if isinstance(effect, Summarize):
        return cast("Summarizer", effect.summarizer).summarize(effect.request)
    if isinstance(effect, Consolidate):
        return cast("Consolidator", effect.summarizer).consolidate(effect.request)
    if isinstance(effect, Call):
        return _form(effect.blocking, "sync")()
    return effect.work()


async def _aperform(effect: Effect) -> object:
    """Await ``effect``: the async method (or the sync one in a thread), the work in a thread."""
    if isinstance(effect, Summarize):
        return await call_async(effect.summarizer, effect.request)
    if isinstance(effect, Consolidate):
        call = async_consolidator(effect.summarizer)
        if call is None:  # the sequence asks only a summarizer that can consolidate
            raise TypeError(f"{type(effect.summarizer).__name__} cannot consolidate")
        return await call(effect.request)
    if isinstance(effect, Call):
        return await _form(effect.awaiting, "async")()
    return await asyncio.to_thread(effect.work)


def _form(call: T | None, kind: str) -> T:
    """``call``, the form of a `Call` this driver performs; it must have been given."""
    if call is None:  # a caller that steps one way builds the Call with that form
        raise TypeError(f"this Call has no {kind} form; step it with the other driver")
    return call
