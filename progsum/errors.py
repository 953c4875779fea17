"""The exceptions progsum raises.

Caller mistakes are separated from run-time faults::

    ProgsumError
    ├── ConfigError          a bad Policy, schema or argument (ValueError)
    ├── MessageFormatError   a malformed or mixed-format message (ValueError)
    └── SummarizerError      a summarizer failed at run time (RuntimeError)

Every message names the offending value and says what to do instead.
"""

from __future__ import annotations

__all__ = ["ConfigError", "MessageFormatError", "ProgsumError", "SummarizerError"]


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
    """The summarizer failed; the state passed to the engine is still valid and unchanged."""
