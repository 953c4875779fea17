"""One body for a summarizer's sync and async method: a generator that yields each call it makes.

A method's decisions are written once, as a generator (`Asks`) that yields a zero-argument call
for each piece of I/O it needs (a model request, a chain member's answer) and is sent back what
the call returned, or has its error thrown in where it asked. `run` makes each call in line and
`arun` awaits it, so the await is the only difference between a method and its async twin. This
is what `progsum.engine._effects` does for the pipeline, for one kind of effect only (a call); both
are stepped by `progsum._driving`.

Only an `Exception` is thrown back into the body; anything else (cancellation, an interrupt)
leaves the driver at once, as it would leave a method written out in full.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, TypeAlias, TypeVar

from progsum._driving import adrive, drive

__all__ = ["Asks", "arun", "run"]

T = TypeVar("T")

Asks: TypeAlias = Generator[Callable[[], Any], Any, T]
"""A method's body: yields the calls it makes, is sent their results, returns its answer."""


def run(asks: Asks[T]) -> T:
    """Run ``asks`` to its end, making each call in line (the sync method)."""
    return drive(asks, _call, Exception)


async def arun(asks: Asks[T]) -> T:
    """Run ``asks`` to its end, awaiting each call (the async method)."""
    return await adrive(asks, _acall, Exception)


def _call(call: Callable[[], Any]) -> object:
    """Make ``call`` in line."""
    return call()


async def _acall(call: Callable[[], Any]) -> object:
    """Await what ``call`` returns."""
    return await call()
