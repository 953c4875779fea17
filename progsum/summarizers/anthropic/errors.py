"""Failures translated in one place: provider and Instructor errors become progsum errors.

Rate limits, overloads, server errors, timeouts, connection failures, other HTTP errors and
malformed response bodies become `progsum.errors.ProviderError`; output still invalid after every
re-ask (or cut off at ``max_tokens``) becomes `progsum.errors.SummaryValidationError`; missing
credentials a `progsum.errors.ConfigError`. Each message names the value and the remedy.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

import anthropic
from instructor.core import (
    IncompleteOutputException,
    InstructorRetryException,
    ResponseParsingError,
)
from instructor.core import ValidationError as InstructorValidationError
from pydantic import ValidationError

from progsum.errors import (
    ConfigError,
    ProgsumError,
    ProviderError,
    SummarizerError,
    SummaryValidationError,
)
from progsum.messages.formats import field as read
from progsum.summarizers.anthropic.call import Task
from progsum.summarizers.anthropic.usage import Meter

__all__ = ["credentials", "no_credentials", "translate"]

_MAX_ERROR_CHARS = 800
_INVALID_OUTPUT = (ValidationError, ResponseParsingError, InstructorValidationError)
"""Causes that mean the model's output (not the provider) was at fault."""
_TIMEOUTS = frozenset({"APITimeoutError", "TimeoutException", "ReadTimeout", "TimeoutError"})
_CONNECTION = frozenset({"APIConnectionError", "ConnectError", "ConnectionError"})


def translate(
    exc: Exception, meter: Meter, task: Task, *, who: str, max_tokens: int, max_retries: int
) -> ProgsumError:
    """The one place where provider and Instructor failures become progsum errors.

    ``who`` names the provider and the model (``Anthropic (claude-haiku-5-5)``); ``max_tokens``
    and ``max_retries`` are the summarizer's limits, named in the remedies.
    """
    if isinstance(exc, IncompleteOutputException):
        return SummaryValidationError(
            f"{who} stopped at max_tokens={max_tokens} before finishing the "
            f"{task.answer}; raise max_tokens (e.g. to {max_tokens * 2}){task.smaller}"
        )
    cause = exc.__cause__ if isinstance(exc, InstructorRetryException) else exc
    cause = cause if isinstance(cause, BaseException) else exc
    if isinstance(cause, anthropic.CredentialsError):
        return no_credentials(cause)
    malformed = _malformed(cause, meter)
    if malformed:
        return ProviderError(
            f"{who} returned a response body that is not an API message ({malformed}); "
            f"{task.nothing}. This is a provider or proxy fault: try again later, and check "
            "the client's base_url and any proxy in between"
        )
    status = getattr(cause, "status_code", None)
    if isinstance(status, int):
        headers = getattr(getattr(cause, "response", None), "headers", None)
        return ProviderError(
            _status_message(who, status, cause, task),
            status=status,
            retry_after=retry_after(headers),
        )
    names = {cls.__name__ for cls in type(cause).__mro__}
    if names & _TIMEOUTS:
        return ProviderError(
            f"{who} timed out; {task.nothing}. Try again later, or give the client a longer "
            "timeout (anthropic.Anthropic(timeout=...))"
        )
    if names & _CONNECTION:
        return ProviderError(
            f"{who} could not be reached ({cause}); {task.nothing}. Check the network and "
            "the client's base_url, then try again"
        )
    if isinstance(cause, _INVALID_OUTPUT):
        attempts = getattr(exc, "n_attempts", max_retries + 1)
        return SummaryValidationError(
            f"{who} returned an invalid {task.answer} {attempts} time(s) "
            f"(max_retries={max_retries}); last error: {_short(cause)}. The summary was "
            "not changed: raise max_retries, use a stronger model, or wrap the summarizer in "
            "a fallback"
        )
    return SummarizerError(
        f"{who} failed: {type(cause).__name__}: {_short(cause)}; check the client's "
        "configuration (credentials such as ANTHROPIC_API_KEY, model name)"
    )


@contextlib.contextmanager
def credentials() -> Iterator[None]:
    """Turn the SDK's failure to find credentials while building a client into a ConfigError."""
    try:
        yield
    except anthropic.CredentialsError as exc:
        raise no_credentials(exc) from exc


def no_credentials(exc: BaseException) -> ConfigError:
    """The error for a missing API key, naming the two ways to give one."""
    return ConfigError(
        f"no Anthropic credentials were found ({_short(exc)}); set ANTHROPIC_API_KEY, or pass "
        "AnthropicSummarizer(client=anthropic.Anthropic(api_key=...))"
    )


def _status_message(who: str, status: int, cause: BaseException, task: Task) -> str:
    detail = _api_message(cause)
    if status == 429:  # noqa: PLR2004 - HTTP status
        response = getattr(cause, "response", None)
        after = read(getattr(response, "headers", None), "retry-after")
        unit = "s" if str(after).replace(".", "", 1).isdigit() else ""
        wait = f" (retry-after: {after}{unit})" if after else ""
        return (
            f"{who} is rate-limited: HTTP 429{wait}: {detail}; {task.nothing}. Try again later, "
            "compact less often, or raise the account's rate limit"
        )
    if status == 529:  # noqa: PLR2004 - HTTP status
        return (
            f"{who} is overloaded: HTTP 529: {detail}; {task.nothing}. Try again later or use a "
            "fallback summarizer"
        )
    if status >= 500:  # noqa: PLR2004 - HTTP status
        return (
            f"{who} had a server error: HTTP {status}: {detail}; {task.nothing}. Try again "
            "later or use a fallback summarizer"
        )
    return (
        f"{who} refused the request: HTTP {status}: {detail}; retrying will not help. Check the "
        "API key, the model name and max_tokens"
    )


def _api_message(cause: BaseException) -> str:
    body = getattr(cause, "body", None)
    error = read(body, "error") if isinstance(body, Mapping) else None
    message = read(error, "message") if isinstance(error, Mapping) else None
    return str(message) if message else _short(cause)


def _malformed(cause: BaseException, meter: Meter) -> str:
    """Why the provider's response was not an API message, or "" when it was."""
    if isinstance(cause, json.JSONDecodeError):
        return f"invalid JSON: {cause.msg} at character {cause.pos}"
    if not meter.usages:
        return ""
    last = meter.last
    if last is None or isinstance(last, str | bytes):
        return f"a {type(last).__name__} instead of a message: {str(last)[:80]!r}"
    if isinstance(last, anthropic.types.Message) and not isinstance(last.content, list):
        return "a JSON object without 'content'"
    return ""


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


def retry_after(headers: object) -> float | None:
    """Seconds the provider asks to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` is a number of seconds or an HTTP date (RFC 9110, section 10.2.3); a date in
    the past, a negative or an unreadable value gives None.
    """
    millis = read(headers, "retry-after-ms")
    if millis:
        with contextlib.suppress(ValueError):
            return max(0.0, float(millis) / 1000)
    value = read(headers, "retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return seconds if seconds >= 0 else None
