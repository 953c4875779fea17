"""The clients `AnthropicSummarizer` accepts, and the Instructor clients it calls through."""

from __future__ import annotations

import anthropic
import instructor

from progsum.errors import ConfigError

__all__ = [
    "AnthropicClient",
    "AsyncAnthropicClient",
    "Client",
    "provider",
    "provider_name",
    "wrap",
]

AnthropicClient = anthropic.Anthropic | anthropic.AnthropicBedrock | anthropic.AnthropicVertex
"""Sync Anthropic SDK clients, wrapped with ``instructor.from_anthropic``."""
AsyncAnthropicClient = (
    anthropic.AsyncAnthropic | anthropic.AsyncAnthropicBedrock | anthropic.AsyncAnthropicVertex
)
"""Async Anthropic SDK clients, wrapped with ``instructor.from_anthropic``."""
Client = AnthropicClient | AsyncAnthropicClient | instructor.Instructor | instructor.AsyncInstructor
"""Every client `AnthropicSummarizer` accepts."""


def wrap(
    client: Client | None,
) -> tuple[instructor.Instructor | None, instructor.AsyncInstructor | None]:
    """Sync and async Instructor clients for ``client`` (only the matching one is set).

    Raises:
        ConfigError: ``client`` is neither an Anthropic nor an Instructor client.
    """
    if client is None:
        return None, None
    if isinstance(client, instructor.AsyncInstructor):
        return None, client
    if isinstance(client, instructor.Instructor):
        return client, None
    if isinstance(client, AsyncAnthropicClient):
        return None, instructor.from_anthropic(client)
    if isinstance(client, AnthropicClient):
        return instructor.from_anthropic(client), None
    raise ConfigError(
        f"client={type(client).__name__} is neither an Anthropic nor an Instructor client; pass "
        "anthropic.Anthropic(), anthropic.AsyncAnthropic(), an Instructor client such as "
        "instructor.from_provider('openai/gpt-5-mini'), or None to use ANTHROPIC_API_KEY"
    )


def provider(client: object) -> str:
    """The Instructor provider of ``client`` (``anthropic`` for Anthropic SDK clients)."""
    if isinstance(client, instructor.Instructor):
        return str(getattr(client.provider, "value", client.provider))
    return "anthropic"


def provider_name(client: object) -> str:
    """The provider as error messages name it: ``Anthropic``, else Instructor's name."""
    found = provider(client)
    return "Anthropic" if found == "anthropic" else found
