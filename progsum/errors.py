"""The exceptions progsum raises.

Caller mistakes are separated from run-time faults::

    ProgsumError
    ├── ConfigError                  a bad Policy, schema or argument (ValueError)
    ├── MessageFormatError           a malformed or mixed-format message (ValueError)
    ├── SummarizerError              a summarizer failed at run time (RuntimeError)
    │   ├── ProviderError            the model provider failed: rate limit, overload, 5xx,
    │   │                            timeout, connection (``retryable`` says whether to retry)
    │   └── SummaryValidationError   the model's output failed validation after all re-asks
    └── ArchiveError                 the archive or state store failed (RuntimeError)
        └── ConflictError            a save raced another writer: reload and re-apply

Every message names the offending value and says what to do instead.
"""

from __future__ import annotations

__all__ = [
    "ArchiveError",
    "ConfigError",
    "ConflictError",
    "MessageFormatError",
    "ProgsumError",
    "ProviderError",
    "SummarizerError",
    "SummaryValidationError",
]


_RETRYABLE = frozenset({408, 409, 429})
"""Client-side statuses that mean "try again later": timeout, conflict, rate limit."""
_SERVER_ERRORS = 500
"""Every status from here up (500, 502, 503, 529, ...) is the provider's fault."""


class ProgsumError(Exception):
    """Base class of every exception progsum raises on purpose."""


class ConfigError(ProgsumError, ValueError):
    """A configuration value (policy, schema, argument) is invalid."""


class MessageFormatError(ProgsumError, ValueError):
    """A message is malformed, or its format differs from the rest of the conversation.

    Attributes:
        index: Position of the offending message in the conversation log.
    """

    def __init__(self, index: int, problem: str) -> None:
        self.index = index
        super().__init__(f"message {index}: {problem}")


class SummarizerError(ProgsumError, RuntimeError):
    """The summarizer failed; the state passed to the engine is still valid and unchanged.

    Attributes:
        problem: What went wrong, without the remedy (``Anthropic (claude-haiku-5-5) is
            overloaded (HTTP 529)``): what a fallback quotes when it took over. The whole
            message when the raiser gave no shorter one.
    """

    def __init__(self, message: str, *, problem: str | None = None) -> None:
        self.problem = problem or message
        super().__init__(message)


class ProviderError(SummarizerError):
    """The model provider failed (rate limit, overload, server error, timeout, connection).

    Attributes:
        status: The HTTP status when there was one (429, 500, 529, ...), else None.
        retry_after: Seconds the provider asked to wait before the next request (its
            ``retry-after`` header), else None.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        problem: str | None = None,
    ) -> None:
        self.status = status
        self.retry_after = retry_after
        super().__init__(message, problem=problem)

    @property
    def retryable(self) -> bool:
        """Whether trying again later may succeed.

        True for rate limits, overloads, server errors, timeouts and connection failures; false for
        a rejected request (400, 401, 403, 404, ...), which needs a fix first.
        """
        return self.status is None or self.status in _RETRYABLE or self.status >= _SERVER_ERRORS


class SummaryValidationError(SummarizerError):
    """The model's summary still failed validation after every re-ask."""


class ArchiveError(ProgsumError, RuntimeError):
    """The archive or the state store failed; what was stored before is intact and unchanged."""


class ConflictError(ArchiveError):
    """A state was saved against a stale version: another writer saved this thread first.

    Reload the thread and apply the change again (the store's retry helper does this).

    Attributes:
        thread_id: The conversation's thread id.
        expected: The version the writer loaded.
        actual: The version stored now.
    """

    def __init__(self, thread_id: str, *, expected: int, actual: int) -> None:
        self.thread_id, self.expected, self.actual = thread_id, expected, actual
        super().__init__(
            f"thread {thread_id!r} is at version {actual}, not {expected}: another writer saved "
            "it first; reload it and apply your change again"
        )
