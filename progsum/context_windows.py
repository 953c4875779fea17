"""Context windows of current Claude and OpenAI models, so a policy can be set by model name.

Names resolve by longest prefix, so dated ids (``claude-sonnet-4-5-20250929``,
``gpt-4o-2024-08-06``) and provider prefixes (``anthropic/``, ``openai/``) work. Figures are the
tokens a request may send.
"""

from __future__ import annotations

from collections.abc import Mapping

from progsum.errors import ConfigError

__all__ = ["CONTEXT_WINDOWS", "context_window"]

CONTEXT_WINDOWS: Mapping[str, int] = {
    # Anthropic: 200k for every current model (1M-token windows are an opt-in beta).
    "claude-opus-4-6": 200_000,
    "claude-opus-4-5": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4": 200_000,
    "claude-sonnet-4-6": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-haiku": 200_000,
    # OpenAI.
    "gpt-5": 272_000,  # 400k in total, of which at most 272k input
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "o4-mini": 200_000,
    "o3": 200_000,
    "o1": 200_000,
}


def context_window(model: str) -> int:
    """The input window of ``model``, resolved by longest matching prefix.

    Raises:
        ConfigError: the model is not in the table.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    best = max(
        (prefix for prefix in CONTEXT_WINDOWS if name.startswith(prefix)), key=len, default=""
    )
    if not best:
        known = ", ".join(sorted(CONTEXT_WINDOWS))
        raise ConfigError(
            f"model={model!r} is not in progsum's table of context windows ({known}); "
            "pass Policy(context_window=...) with the window in tokens"
        )
    return CONTEXT_WINDOWS[best]
