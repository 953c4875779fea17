"""What progsum knows of each model: window, tokenizer, caching, prices, reasoning, retirement.

Context windows, tokenizer densities, cache minimums, fallback list prices, whether reasoning is
bound to its prefix, and retirement dates, by model name.

Names resolve by longest prefix, so dated ids (``claude-haiku-4-5-20251001``,
``gpt-4o-2024-08-06``) and provider prefixes (``anthropic/``, ``openai/``) work. Windows are the
tokens a request may send; prices are US dollars per million tokens. Each row was read off the
vendor's model and pricing pages (December 2026); ``docs/models.md`` names the page of every value.
A value the pages did not state is None ("unknown"), never a guess.

Windows, tokenizer densities and cache minimums are only here: no maintained package has them.
Prices have a maintained source, pydantic's ``genai-prices``: `progsum.policy._usage.quote` prefers
it when it is installed, and reads a row's ``price`` only for a model it does not list, or when
it is not installed (it is optional; ``progsum[prices]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import NamedTuple

from progsum.errors import ConfigError

__all__ = [
    "MODELS",
    "TABLE_DATE",
    "ModelProfile",
    "Price",
    "context_window",
    "find_profile",
    "preserves_reasoning",
    "profile",
    "retired",
    "token_factor",
]

TABLE_DATE = date(2026, 12, 7)
"""The day the table was last read off the vendors' pages."""


@dataclass(frozen=True, slots=True)
class Price:
    """List price in US dollars per million tokens."""

    input: float
    output: float
    cache_write: float
    """5-minute cache writes."""
    cache_read: float
    """Cache reads (hits and refreshes)."""


class ModelProfile(NamedTuple):
    """What progsum needs to know about a model."""

    window: int
    """Tokens a request may send."""
    token_factor: float = 1.0
    """Tokens per token of the reference tokenizer: Claude 4.7 and later count ~30% more."""
    price: Price | None = None
    """List price of a prompt up to ``long_prompt`` tokens; None when not listed. The fallback
    of `progsum.policy._usage.quote` when genai-prices is not installed or lacks the model."""
    cache_minimum: int | None = None
    """Fewest tokens a cached prefix must hold to be cached; None when not documented."""
    long_prompt: int | None = None
    """Prompt size above which every token of the request bills at ``long_price``."""
    long_price: Price | None = None
    """List price of a prompt over ``long_prompt`` tokens."""
    preserved: bool = False
    """Reasoning is bound to its prefix: Anthropic's preserved thinking (a thinking block whose
    ``system``, ``tools`` or earlier messages changed is refused, or dropped with
    ``drop_block``) or OpenAI's preserved reasoning (reasoning items after a prefix change are
    dropped). docs/thinking-rules.md cites the pages."""
    retires: date | None = None
    """The vendor's retirement date: requests to the model fail from that day on."""


_NEW_CLAUDE_TOKENIZER = 1.3
"""Claude Opus 4.7 and later use a tokenizer that counts ~30% more tokens for the same text."""
_1M = 1_000_000
_NEW = _NEW_CLAUDE_TOKENIZER

MODELS: Mapping[str, ModelProfile] = {
    # Anthropic 5.x: a native 1M window and the newer tokenizer. Preserved thinking: the
    # prefix-check pages list Fable and Mythos 5.1/5.2, Opus 5.5, Sonnet 5.5 and Haiku 5.5.
    "claude-haiku-5-5": ModelProfile(
        _1M,
        _NEW,
        Price(input=0.10, output=0.50, cache_write=0.125, cache_read=0.01),
        cache_minimum=512,
        long_prompt=100_000,
        long_price=Price(input=0.50, output=2.50, cache_write=0.625, cache_read=0.05),
        preserved=True,
    ),
    "claude-sonnet-5-5": ModelProfile(_1M, _NEW, Price(2.0, 10.0, 2.50, 0.20), preserved=True),
    "claude-opus-5-5": ModelProfile(_1M, _NEW, Price(4.0, 20.0, 5.00, 0.20), preserved=True),
    "claude-fable-5-2": ModelProfile(_1M, _NEW, preserved=True),
    "claude-mythos-5-2": ModelProfile(_1M, _NEW, preserved=True),
    "claude-fable-5-1": ModelProfile(_1M, _NEW, Price(10.0, 50.0, 12.50, 0.25), preserved=True),
    "claude-mythos-5-1": ModelProfile(_1M, _NEW, Price(10.0, 50.0, 12.50, 0.25), preserved=True),
    "claude-fable-5": ModelProfile(_1M, _NEW, Price(10.0, 50.0, 12.50, 1.00), cache_minimum=512),
    "claude-mythos-5": ModelProfile(_1M, _NEW, Price(10.0, 50.0, 12.50, 1.00), cache_minimum=512),
    "claude-opus-5": ModelProfile(_1M, _NEW, Price(5.0, 25.0, 6.25, 0.50), cache_minimum=512),
    "claude-sonnet-5": ModelProfile(_1M, _NEW, Price(2.0, 10.0, 2.50, 0.20), cache_minimum=1_024),
    "claude-haiku-5": ModelProfile(_1M, _NEW),
    # Anthropic 4.x: 200k.
    "claude-opus-4-8": ModelProfile(200_000, _NEW, Price(5.0, 25.0, 6.25, 0.50), 1_024),
    "claude-opus-4-7": ModelProfile(200_000, _NEW, Price(5.0, 25.0, 6.25, 0.50), 2_048),
    "claude-opus-4-6": ModelProfile(200_000, 1.0, Price(5.0, 25.0, 6.25, 0.50), 4_096),
    "claude-opus-4-5": ModelProfile(
        200_000, 1.0, Price(5.0, 25.0, 6.25, 0.50), 4_096, retires=date(2027, 1, 22)
    ),
    "claude-opus-4-1": ModelProfile(200_000, 1.0, Price(15.0, 75.0, 18.75, 1.50), 1_024),
    "claude-opus-4": ModelProfile(
        200_000, 1.0, Price(15.0, 75.0, 18.75, 1.50), 1_024, retires=date(2026, 6, 15)
    ),
    "claude-sonnet-4-6": ModelProfile(200_000, 1.0, Price(3.0, 15.0, 3.75, 0.30), 1_024),
    "claude-sonnet-4-5": ModelProfile(
        200_000, 1.0, Price(3.0, 15.0, 3.75, 0.30), 1_024, retires=date(2026, 11, 30)
    ),
    "claude-sonnet-4": ModelProfile(
        200_000, 1.0, Price(3.0, 15.0, 3.75, 0.30), 1_024, retires=date(2026, 6, 15)
    ),
    "claude-haiku-4-5": ModelProfile(200_000, 1.0, Price(1.0, 5.0, 1.25, 0.10), 4_096),
    "claude-haiku-4": ModelProfile(200_000),
    "claude-3": ModelProfile(200_000),
    # OpenAI: caching is automatic from 1,024 tokens, with no separate write price. GPT-6.2
    # drops reasoning items after a prefix change (its guide and "Keep the prefix unchanged").
    "gpt-6.2": ModelProfile(922_000, preserved=True),
    "gpt-6": ModelProfile(922_000),
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


def find_profile(model: str) -> ModelProfile | None:
    """The profile of ``model`` by longest matching prefix, or None when no row matches.

    A prefix matches whole name parts only: ``claude-fable-5-20261001`` is Fable 5 (a dated
    id), not Fable 5.2.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    best = max((prefix for prefix in MODELS if _starts(name, prefix)), key=len, default="")
    return MODELS[best] if best else None


def _starts(name: str, prefix: str) -> bool:
    """Whether ``name`` is ``prefix`` or ``prefix`` followed by a separator."""
    return name.startswith(prefix) and (len(name) == len(prefix) or name[len(prefix)] in "-.@:_")


def profile(model: str) -> ModelProfile:
    """The profile of ``model``, resolved by longest matching prefix.

    Raises:
        ConfigError: the model is not in the table.
    """
    found = find_profile(model)
    if found is None:
        known = ", ".join(sorted(MODELS))
        raise ConfigError(
            f"model={model!r} is not in progsum's table of context windows ({known}); pass "
            "Policy(model=..., context_window=TOKENS) with its window in tokens, or "
            "Policy(context_window=TOKENS) alone"
        )
    return found


def preserves_reasoning(model: str | None) -> bool:
    """Whether ``model``'s reasoning is bound to its prefix (`ModelProfile.preserved`).

    A model the table does not know, or no model, counts as one that does: the current
    generation of both vendors checks the prefix, and sending it reasoning whose prefix changed
    is refused or wasted. Name an older model to have its thinking sent whole.
    """
    found = find_profile(model) if model else None
    return found is None or found.preserved


def retired(model: str, on: date = TABLE_DATE) -> date | None:
    """The retirement date of ``model`` when it is on or before ``on``; else None."""
    found = find_profile(model)
    if found is None or found.retires is None:
        return None
    return found.retires if found.retires <= on else None


def context_window(model: str) -> int:
    """The input window of ``model`` in tokens (see `profile`)."""
    return profile(model).window


def token_factor(model: str) -> float:
    """How many more tokens ``model`` counts than the reference tokenizer (see `profile`)."""
    return profile(model).token_factor
