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
import re
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
from progsum.messages._formats import field as read
from progsum.summarizers.anthropic._call import Task
from progsum.summarizers.anthropic._usage import Meter
from progsum.summary._validated import invalid_fields

__all__ = ["credentials", "no_credentials", "translate"]

_MAX_ERROR_CHARS = 300
"""The longest provider or exception text quoted in a message."""
_MAX_PROBLEM_CHARS = 240
"""The longest description of what was wrong with the model's output."""
_HELP_URL = re.compile(r"\s*For further information visit https?://\S+")
_INVALID_OUTPUT = (ValidationError, ResponseParsingError, InstructorValidationError)
"""Causes that mean the model's output (not the provider) was at fault."""
_TIMEOUTS = frozenset({"APITimeoutError", "TimeoutException", "ReadTimeout", "TimeoutError"})
_CONNECTION = frozenset({"APIConnectionError", "ConnectError", "ConnectionError"})


def translate(
    exc: Exception, meter: Meter, task: Task, *, who: str, max_tokens: int, max_retries: int
) -> ProgsumError:
    """The one place where provider and Instructor failures become progsum errors.

    ``who`` names the provider and the model (``Anthropic (claude-haiku-5-5)``); ``max_tokens``
    and ``max_retries`` are the summarizer's limits, named in the remedies. Each message is one
    sentence: what went wrong (the error's ``problem``, which a fallback quotes), what was left
    undone, and what to do.
    """
    if isinstance(exc, IncompleteOutputException):
        problem = f"{who} stopped at max_tokens={max_tokens} before finishing the {task.answer}"
        return SummaryValidationError(
            f"{problem}, so {task.nothing}; raise max_tokens (e.g. to {max_tokens * 2})"
            f"{task.smaller}",
            problem=problem,
        )
    cause = exc.__cause__ if isinstance(exc, InstructorRetryException) else exc
    cause = cause if isinstance(cause, BaseException) else exc
    if isinstance(cause, anthropic.CredentialsError):
        return no_credentials(cause)
    malformed = _malformed(cause, meter)
    if malformed:
        problem = f"{who} returned a response body that is not an API message ({malformed})"
        return ProviderError(
            f"{problem}, so {task.nothing}; this is a provider or proxy fault: try again later, "
            "and check the client's base_url and any proxy in between",
            problem=problem,
        )
    status = getattr(cause, "status_code", None)
    if isinstance(status, int):
        headers = getattr(getattr(cause, "response", None), "headers", None)
        problem, remedy = _status_message(who, status, cause)
        return ProviderError(
            f"{problem}, so {task.nothing}; {remedy}",
            status=status,
            retry_after=retry_after(headers),
            problem=problem,
        )
    names = {cls.__name__ for cls in type(cause).__mro__}
    if names & _TIMEOUTS:
        problem = f"{who} timed out"
        return ProviderError(
            f"{problem}, so {task.nothing}; try again later, or give the client a longer "
            "timeout (anthropic.Anthropic(timeout=...))",
            problem=problem,
        )
    if names & _CONNECTION:
        problem = f"{who} could not be reached ({_short(cause)})"
        return ProviderError(
            f"{problem}, so {task.nothing}; check the network and the client's base_url, then "
            "try again",
            problem=problem,
        )
    if isinstance(cause, _INVALID_OUTPUT):
        attempts = getattr(exc, "n_attempts", max_retries + 1)
        problem = f"{who} {_output_fault(cause, meter, task)} {_on_attempts(attempts)}"
        return SummaryValidationError(
            f"{problem} (max_retries={max_retries}), so {task.nothing}; raise max_retries, use a "
            "stronger model, or wrap the summarizer in a fallback",
            problem=problem,
        )
    problem = f"{who} failed: {type(cause).__name__}: {_short(cause)}"
    return SummarizerError(
        f"{problem}; check the client's configuration (credentials such as ANTHROPIC_API_KEY, "
        "model name)",
        problem=problem,
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


def _status_message(who: str, status: int, cause: BaseException) -> tuple[str, str]:
    """What an HTTP error status says went wrong, and what to do about it."""
    detail = _api_message(cause)
    if status == 429:  # noqa: PLR2004 - HTTP status
        response = getattr(cause, "response", None)
        after = read(getattr(response, "headers", None), "retry-after")
        unit = "s" if str(after).replace(".", "", 1).isdigit() else ""
        wait = f" (retry-after: {after}{unit})" if after else ""
        return (
            f"{who} is rate-limited: HTTP 429{wait}: {detail}",
            "try again later, compact less often, or raise the account's rate limit",
        )
    if status == 529:  # noqa: PLR2004 - HTTP status
        return (
            f"{who} is overloaded: HTTP 529: {detail}",
            "try again later or use a fallback summarizer",
        )
    if status >= 500:  # noqa: PLR2004 - HTTP status
        return (
            f"{who} had a server error: HTTP {status}: {detail}",
            "try again later or use a fallback summarizer",
        )
    return (
        f"{who} refused the request: HTTP {status}: {detail}",
        "retrying will not help: check the API key, the model name and max_tokens",
    )


def _api_message(cause: BaseException) -> str:
    body = getattr(cause, "body", None)
    error = read(body, "error") if isinstance(body, Mapping) else None
    message = read(error, "message") if isinstance(error, Mapping) else None
    return _short(str(message)) if message else _short(cause)


def _output_fault(cause: BaseException, meter: Meter, task: Task) -> str:
    """What the model did wrong, after ``who``: "answered in text without calling the ... tool"."""
    if meter.tool is not None and _text_only(meter.last):
        return f"answered in text without calling the {meter.tool} tool"
    if isinstance(cause, ValidationError):
        return f"wrote an invalid {task.answer} ({_validation_problems(cause)})"
    return f"wrote an invalid {task.answer} ({_short(cause, _MAX_PROBLEM_CHARS)})"


def _text_only(response: object) -> bool:
    """Whether a reply (an Anthropic message, an OpenAI completion) has text but no tool call."""
    content = read(response, "content")
    if isinstance(content, list):
        return bool(content) and not any(read(b, "type") == "tool_use" for b in content)
    choices = read(response, "choices")
    if isinstance(choices, list) and choices:
        message = read(choices[0], "message")
        return not read(message, "tool_calls") and bool(read(message, "content"))
    return False


def _validation_problems(error: ValidationError) -> str:
    """The first problems of a validation error, each as ``where: what, got value``."""
    return _short(invalid_fields(error.errors()), _MAX_PROBLEM_CHARS)


def _on_attempts(attempts: object) -> str:
    if attempts == 1:
        return "on its only attempt"
    if attempts == 2:  # noqa: PLR2004 - a count in words
        return "on both attempts"
    return f"on all {attempts} attempts"


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


def _short(exc: object, limit: int = _MAX_ERROR_CHARS) -> str:
    """``exc`` as one line of at most ``limit`` characters, without pydantic's help URLs."""
    text = " ".join(_HELP_URL.sub("", str(exc)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
