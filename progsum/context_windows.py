"""Context windows and tokenizer densities of Claude and OpenAI models, looked up by name.

Names resolve by longest prefix, so dated ids (``claude-haiku-4-5-20251001``,
``gpt-4o-2024-08-06``) and provider prefixes (``anthropic/``, ``openai/``) work. Windows are the
tokens a request may send (read off the vendors' model pages, November 2026).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from progsum.errors import ConfigError

__all__ = ["MODELS", "ModelProfile", "context_window", "profile", "token_factor"]


class ModelProfile(NamedTuple):
    """What progsum needs to know about a model."""

    window: int
    """Tokens a request may send."""
    token_factor: float = 1.0
    """Tokens per token of the reference tokenizer: Claude 4.7 and later count ~30% more."""


_NEW_CLAUDE_TOKENIZER = 1.3
"""Claude Opus 4.7 and later use a tokenizer that counts ~30% more tokens for the same text."""

MODELS: Mapping[str, ModelProfile] = {
    # Anthropic: the 5.x generation has a native 1M window; 4.x stays at 200k.
    "claude-fable-5": ModelProfile(1_000_000, _NEW_CLAUDE_TOKENIZER),
    "claude-mythos-5": ModelProfile(1_000_000, _NEW_CLAUDE_TOKENIZER),
    "claude-opus-5": ModelProfile(1_000_000, _NEW_CLAUDE_TOKENIZER),
    "claude-sonnet-5": ModelProfile(1_000_000, _NEW_CLAUDE_TOKENIZER),
    "claude-haiku-5": ModelProfile(1_000_000, _NEW_CLAUDE_TOKENIZER),
    "claude-opus-4-8": ModelProfile(200_000, _NEW_CLAUDE_TOKENIZER),
    "claude-opus-4-7": ModelProfile(200_000, _NEW_CLAUDE_TOKENIZER),
    "claude-opus-4": ModelProfile(200_000),
    "claude-sonnet-4": ModelProfile(200_000),
    "claude-haiku-4": ModelProfile(200_000),
    "claude-3": ModelProfile(200_000),
    # OpenAI.
    "gpt-5.6": ModelProfile(1_050_000),
    "gpt-5.5": ModelProfile(1_050_000),
    "gpt-5.4": ModelProfile(1_050_000),
    "gpt-5": ModelProfile(272_000),  # 400k in total for 5.0-5.2, of which at most 272k input
    "gpt-4.1": ModelProfile(1_047_576),
    "gpt-4o": ModelProfile(128_000),
    "gpt-4-turbo": ModelProfile(128_000),
    "o4-mini": ModelProfile(200_000),
    "o3": ModelProfile(200_000),
    "o1": ModelProfile(200_000),
}


def profile(model: str) -> ModelProfile:
    """The profile of ``model``, resolved by longest matching prefix.

    Raises:
        ConfigError: the model is not in the table.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    best = max((prefix for prefix in MODELS if name.startswith(prefix)), key=len, default="")
    if not best:
        known = ", ".join(sorted(MODELS))
        raise ConfigError(
            f"model={model!r} is not in progsum's table of context windows ({known}); "
            "pass Policy(context_window=...) with the window in tokens"
        )
    return MODELS[best]


def context_window(model: str) -> int:
    """The input window of ``model`` in tokens (see `profile`)."""
    return profile(model).window


def token_factor(model: str) -> float:
    """How many more tokens ``model`` counts than the reference tokenizer (see `profile`)."""
    return profile(model).token_factor
