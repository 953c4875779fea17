"""progsum.summarizers._steps: one method body, made in line by `run` and awaited by `arun`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from progsum.summarizers._steps import Asks, arun, run


def sync_and_async(make: Callable[[], Asks[Any]], *, awaited: bool) -> Any:
    """The answer of the body ``make`` builds, run in line or awaited."""
    if not awaited:
        return run(make())
    return asyncio.run(arun(make()))


def call(value: object, *, awaited: bool) -> Callable[[], Any]:
    """A call giving ``value``: a plain function, or a coroutine function for `arun`."""

    async def later() -> object:
        return value

    return later if awaited else lambda: value


def failing(error: BaseException, *, awaited: bool) -> Callable[[], Any]:
    """A call raising ``error``, in the form each driver makes."""

    def now() -> object:
        raise error

    async def later() -> object:
        raise error

    return later if awaited else now


@pytest.mark.parametrize("awaited", [False, True], ids=["run", "arun"])
def test_each_call_s_result_is_sent_back_and_the_body_s_return_is_the_answer(
    awaited: bool,
) -> None:
    """Results come back in the order asked; what the body returns is what the driver returns."""

    def body() -> Asks[list[object]]:
        first = yield call(1, awaited=awaited)
        second = yield call(first + 1, awaited=awaited)
        return [first, second]

    assert sync_and_async(body, awaited=awaited) == [1, 2]


@pytest.mark.parametrize("awaited", [False, True], ids=["run", "arun"])
def test_a_body_without_calls_returns_at_once(awaited: bool) -> None:
    """A body that returns before asking anything gives its answer, no call made."""

    def body(*, asked: bool = False) -> Asks[str]:
        if not asked:
            return "nothing to ask"
        yield call(0, awaited=awaited)
        return "asked"

    assert sync_and_async(body, awaited=awaited) == "nothing to ask"


@pytest.mark.parametrize("awaited", [False, True], ids=["run", "arun"])
def test_a_call_s_error_is_thrown_in_where_the_body_asked(awaited: bool) -> None:
    """The body catches a failed call at its yield and goes on; the next call is made."""

    def body() -> Asks[str]:
        try:
            yield failing(ValueError("rate limited"), awaited=awaited)
        except ValueError as exc:
            noted = str(exc)
        after = yield call("fallback", awaited=awaited)
        return f"{noted}; {after}"

    assert sync_and_async(body, awaited=awaited) == "rate limited; fallback"


@pytest.mark.parametrize("awaited", [False, True], ids=["run", "arun"])
def test_an_error_the_body_does_not_catch_leaves_the_driver_as_it_was_raised(
    awaited: bool,
) -> None:
    """An uncaught call error reaches the caller itself; one the body raises has no context."""
    error = KeyError("model")

    def passes() -> Asks[None]:
        yield failing(error, awaited=awaited)

    with pytest.raises(KeyError) as raised:
        sync_and_async(passes, awaited=awaited)
    assert raised.value is error

    def gives_up() -> Asks[None]:
        failures = []
        try:
            yield failing(ValueError("first"), awaited=awaited)
        except ValueError as exc:
            failures.append(str(exc))
        raise RuntimeError(f"every member failed: {failures}")

    with pytest.raises(RuntimeError) as gave_up:
        sync_and_async(gives_up, awaited=awaited)
    assert gave_up.value.__context__ is None


@pytest.mark.parametrize("awaited", [False, True], ids=["run", "arun"])
def test_cancellation_leaves_at_once_without_resuming_the_body(awaited: bool) -> None:
    """A call's BaseException (cancellation, an interrupt) is not thrown into the body."""
    resumed: list[str] = []

    def body() -> Asks[None]:
        try:
            yield failing(asyncio.CancelledError(), awaited=awaited)
        except asyncio.CancelledError:
            resumed.append("caught")  # the driver must not let the body see it
            raise

    with pytest.raises(asyncio.CancelledError):
        sync_and_async(body, awaited=awaited)
    assert resumed == []
