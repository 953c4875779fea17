"""A provider's "prompt is too long" error: compact once, by force, and retry the request.

`on_prompt_too_long` and `retry_on_overflow` handle Anthropic's 400 ``prompt is too long: N tokens >
M maximum`` and OpenAI's 400 ``context_length_exceeded``: they anchor the count on the tokens the
provider reported, force one compaction and return the request to send again; a second overflow of
the same state re-raises the provider's error (with a note) instead of looping. Errors are
recognised by their shape (status code, body, message), so this module imports no provider SDK.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, NamedTuple, NoReturn, TypeVar, cast

from progsum.engine._compactor import Compactor
from progsum.engine._effects import Call, Steps, astep, step
from progsum.state._conversation import ConversationState
from progsum.summary._schema import SummaryT as S

__all__ = [
    "Overflow",
    "aon_prompt_too_long",
    "aretry_on_overflow",
    "on_prompt_too_long",
    "prompt_too_long",
    "retry_on_overflow",
]

R = TypeVar("R")
T = TypeVar("T")


class Overflow(NamedTuple):
    """A provider's "prompt is too long" error, read."""

    message: str
    """The provider's error message."""
    tokens: int | None
    """Tokens the provider counted in the prompt, when it said."""
    limit: int | None
    """The model's maximum, when the provider said."""


_OVERFLOW_TEXT = re.compile(
    r"prompt is too long|input length and .{0,3}max_tokens.{0,3} exceed context limit|"
    r"maximum context length|exceeds the context window|context_length_exceeded|"
    r"context ?window ?exceeded",
    re.IGNORECASE,
)
_COUNTS = (
    re.compile(r"(?P<tokens>\d+) tokens > (?P<limit>\d+) maximum"),
    re.compile(r"(?P<tokens>\d+) \+ \d+ > (?P<limit>\d+)"),
    re.compile(r"maximum context length is (?P<limit>\d+) tokens.*?resulted in (?P<tokens>\d+)"),
    re.compile(r"resulted in (?P<tokens>\d+) tokens"),
)
_OVERFLOW_STATUSES = frozenset({400, 413})


def prompt_too_long(error: BaseException) -> Overflow | None:
    """Read ``error`` as a "prompt is too long" error of the provider, or None if it is not one.

    Recognises the Anthropic SDK's ``BadRequestError`` (400, ``invalid_request_error``,
    "prompt is too long: N tokens > M maximum", or "input length and `max_tokens` exceed context
    limit"), the OpenAI SDK's (400, code ``context_length_exceeded``), and errors of the same
    shape (``status_code``, ``body``, ``code``, ``message``) anywhere in the ``__cause__`` chain.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = _overflow(current)
        if found is not None:
            return found
        current = current.__cause__
    return None


def _overflow(error: BaseException) -> Overflow | None:
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(error, "status", None)
    if status is not None and status not in _OVERFLOW_STATUSES:
        return None
    body = getattr(error, "body", None)
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    code = getattr(error, "code", None) or (
        inner.get("code") if isinstance(inner, Mapping) else None
    )
    message = inner.get("message") if isinstance(inner, Mapping) else None
    text = str(message or getattr(error, "message", None) or error)
    if code != "context_length_exceeded" and not _OVERFLOW_TEXT.search(text):
        return None
    for pattern in _COUNTS:
        match = pattern.search(text)
        if match:
            groups = match.groupdict()
            limit = groups.get("limit")
            return Overflow(text, int(groups["tokens"]), int(limit) if limit else None)
    return Overflow(text, None, None)


def on_prompt_too_long(
    error: BaseException,
    state: ConversationState[Any],
    compactor: Compactor[S],
    *,
    render: Callable[[ConversationState[S]], R],
) -> tuple[ConversationState[S], R]:
    """After a "prompt is too long" error: compact by force and return the request to retry.

    The token count the provider reported anchors the state's count first, so the compaction
    (and every later trigger) measures with the real figure. Only one forced compaction is made
    per state: if ``state`` was already compacted by force at its current length, or the
    compaction cannot fold anything, ``error`` is raised again with a note saying why.

    Args:
        error: What the provider raised.
        state: The conversation whose rendering was too long.
        compactor: The conversation's compactor.
        render: Builds the request from a state, e.g.
            ``lambda s: render_anthropic(s, system=SYSTEM)``.

    Returns:
        The compacted state and ``render`` of it.

    Raises:
        BaseException: ``error`` itself, when it is not a prompt-too-long error or when the
            state was already compacted once for it (see the exception's notes).
        SummarizerError: the summarizer failed; ``state`` is still valid.
    """
    return step(_compacting(error, state, compactor, render=render))


async def aon_prompt_too_long(
    error: BaseException,
    state: ConversationState[Any],
    compactor: Compactor[S],
    *,
    render: Callable[[ConversationState[S]], R],
) -> tuple[ConversationState[S], R]:
    """Async `on_prompt_too_long` (compacts through ``compactor.acompact``)."""
    return await astep(_compacting(error, state, compactor, render=render))


def retry_on_overflow(
    send: Callable[[R], T],
    state: ConversationState[Any],
    compactor: Compactor[S],
    *,
    render: Callable[[ConversationState[S]], R],
) -> tuple[ConversationState[S], T]:
    """``send(render(state))``; on a prompt-too-long error compact once and send again.

    Args:
        send: Makes the provider call from a rendered request and returns the response.
        state: The conversation.
        compactor: Its compactor.
        render: Builds the request from a state.

    Returns:
        The state the response answers (compacted if there was an overflow) and the response.

    Raises:
        BaseException: whatever ``send`` raised, other than a first prompt-too-long error;
            a second one carries a note saying the request was already compacted.
    """
    return step(_retrying(lambda r: Call(partial(send, r), None), state, compactor, render))


async def aretry_on_overflow(
    send: Callable[[R], Awaitable[T]],
    state: ConversationState[Any],
    compactor: Compactor[S],
    *,
    render: Callable[[ConversationState[S]], R],
) -> tuple[ConversationState[S], T]:
    """Async `retry_on_overflow`: ``send`` returns an awaitable."""
    return await astep(_retrying(lambda r: Call(None, partial(send, r)), state, compactor, render))


def _retrying(
    sending: Callable[[R], Call],
    state: ConversationState[Any],
    compactor: Compactor[S],
    render: Callable[[ConversationState[S]], R],
) -> Steps[tuple[ConversationState[S], T]]:
    """`retry_on_overflow`'s sequence: ``sending(request)`` is the provider call's effect."""
    typed: ConversationState[S] = state
    try:
        return typed, cast("T", (yield sending(render(typed))))
    except Exception as error:
        if prompt_too_long(error) is None:
            raise
        typed, request = yield from _compacting(error, typed, compactor, render=render)
    try:
        return typed, cast("T", (yield sending(request)))
    except Exception as error:
        if prompt_too_long(error) is not None:
            _refuse(error, "the request was compacted once after a first overflow")
        raise


def _compacting(
    error: BaseException,
    state: ConversationState[Any],
    compactor: Compactor[S],
    *,
    render: Callable[[ConversationState[S]], R],
) -> Steps[tuple[ConversationState[S], R]]:
    """`on_prompt_too_long`'s sequence: anchor the count, compact by force, check progress."""
    overflow, anchored = _prepare(error, state, compactor)
    compact = Call(
        partial(compactor.compact, anchored, force=True),
        partial(compactor.acompact, anchored, force=True),
    )
    compacted = cast("ConversationState[S]", (yield compact))
    _check_progress(error, overflow, anchored, compacted)
    return compacted, render(compacted)


def _prepare(
    error: BaseException, state: ConversationState[Any], compactor: Compactor[Any]
) -> tuple[Overflow, ConversationState[Any]]:
    """Check that ``error`` is an overflow this state may still compact for; anchor its count."""
    overflow = prompt_too_long(error)
    if overflow is None:
        raise error
    last = state.events[-1] if state.events else None
    if state.attempted_at == len(state) and last is not None and last.forced:
        _refuse(
            error,
            f"this state was already compacted by force at its current length ({len(state)} "
            "messages; compaction event "
            f"{last.number}: {last.outcome})",
        )
    if overflow.tokens is not None:
        state = state.record_usage(overflow.tokens, counter=compactor.counter, billed=False)
    return overflow, state


def _check_progress(
    error: BaseException,
    overflow: Overflow,
    before: ConversationState[Any],
    after: ConversationState[Any],
) -> None:
    if after.cutoff > before.cutoff:
        return
    event = after.events[-1] if len(after.events) > len(before.events) else None
    why = event.reason if event is not None else "nothing could be folded"
    _refuse(error, f"a forced compaction folded nothing: {why}", overflow)


def _refuse(error: BaseException, why: str, overflow: Overflow | None = None) -> NoReturn:
    """Raise the provider's ``error`` again, noting why progsum did not retry it."""
    counted = (
        f" (the provider counted {overflow.tokens:,} tokens)"
        if overflow is not None and overflow.tokens is not None
        else ""
    )
    error.add_note(
        f"progsum: the prompt is too long{counted} and was not retried: {why}. Lower the "
        "policy's keep or clear large tool results from the recent turns, then try again."
    )
    raise error
