"""One body for a summarizer's sync and async method: a generator that yields each call it makes.

A method's decisions are written once, as a generator (`Asks`) that yields a zero-argument call
for each piece of I/O it needs (a model request, a chain member's answer) and is sent back what
the call returned, or has its error thrown in where it asked. `run` makes each call in line and
`arun` awaits it, so the await is the only difference between a method and its async twin. This
is what `progsum.engine._effects` does for the pipeline, here below the engine (which this layer may
not import) and for one kind of effect only: a call.

Only an `Exception` is thrown back into the body; anything else (cancellation, an interrupt)
leaves the driver at once, as it would leave a method written out in full.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Generic, TypeAlias, TypeVar, cast

__all__ = ["Asks", "arun", "run"]

T = TypeVar("T")

Asks: TypeAlias = Generator[Callable[[], Any], Any, T]
"""A method's body: yields the calls it makes, is sent their results, returns its answer."""


def run(asks: Asks[T]) -> T:
    """Run ``asks`` to its end, making each call in line (the sync method)."""
    body = _Body(asks)
    while body.resume():
        with body:
            body.sent = body.call()
    return body.answer


async def arun(asks: Asks[T]) -> T:
    """Run ``asks`` to its end, awaiting each call (the async method)."""
    body = _Body(asks)
    while body.resume():
        with body:
            body.sent = await body.call()
    return body.answer


class _Body(Generic[T]):
    """A body being run: the call it asks for now, and what the last call gave or raised."""

    __slots__ = ("_asks", "_raised", "answer", "call", "sent")

    def __init__(self, asks: Asks[T]) -> None:
        self._asks = asks
        self._raised: Exception | None = None
        self.sent: object = None
        self.call: Callable[[], Any] = _nothing
        self.answer: T

    def resume(self) -> bool:
        """Send the last result in (or throw its error); False once the body has returned."""
        try:
            self.call = self._next()
        except StopIteration as returned:
            self.answer = cast("T", returned.value)
            return False
        return True

    def _next(self) -> Callable[[], Any]:
        """The body's next call, given the last call's result or error (each used once)."""
        raised, self._raised = self._raised, None
        sent, self.sent = self.sent, None
        return self._asks.throw(raised) if raised is not None else self._asks.send(sent)

    def __enter__(self) -> None:
        """Make the call inside the block."""

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> bool:
        """Keep an `Exception` to throw into the body; let anything else through."""
        if isinstance(error, Exception):
            self._raised = error
            return True
        return False


def _nothing() -> None:
    """No call: what a body asks for before it has started."""
