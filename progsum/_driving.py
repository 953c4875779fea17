"""One way to run a generator of effects: performed in line, or awaited (the bottom layer).

A sequence written once as a generator yields each piece of I/O it needs as an effect and is
sent back what performing it returned, or has its error thrown in where it asked. `drive`
performs each effect in line and `adrive` awaits it, so the await is the only difference between
a sync method and its async twin. The pipeline's stage sequence (`progsum.engine._effects`), a
summarizer's methods (`progsum.summarizers._steps`) and the store's update
(`progsum.store._updating`) each say what their effects are and how to perform them; this
module steps them.

``thrown`` names the errors a sequence is given back: `BaseException` (cancellation included)
where the sequence names and records every outcome, `Exception` where anything else must leave
at once, as it would leave a method written out in full.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar, cast

__all__ = ["adrive", "drive"]

E = TypeVar("E")
T = TypeVar("T")


def drive(
    steps: Generator[E, Any, T],
    perform: Callable[[E], object],
    thrown: type[BaseException] = BaseException,
) -> T:
    """Run ``steps`` to its end, performing each effect in line."""
    sent: object = None
    failure: BaseException | None = None
    while True:
        try:
            effect = steps.throw(failure) if failure is not None else steps.send(sent)
        except StopIteration as stop:
            return cast("T", stop.value)
        sent = failure = None
        try:
            sent = perform(effect)
        except thrown as error:
            failure = error


async def adrive(
    steps: Generator[E, Any, T],
    perform: Callable[[E], Awaitable[object]],
    thrown: type[BaseException] = BaseException,
) -> T:
    """Run ``steps`` to its end, awaiting each effect."""
    sent: object = None
    failure: BaseException | None = None
    while True:
        try:
            effect = steps.throw(failure) if failure is not None else steps.send(sent)
        except StopIteration as stop:
            return cast("T", stop.value)
        sent = failure = None
        try:
            sent = await perform(effect)
        except thrown as error:
            failure = error
