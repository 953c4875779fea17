"""Cost accounting: the agent's own reported usage beside the summarizer's, and the share alert.

The state sums every usage report the agent passes (``state.append(reply, usage=...)``,
``record_usage``) into an `AgentUsage`; compaction events carry the summarizer's
(`progsum.summary._update.SummarizerUsage`). The summarization share is the summarizer's tokens over
both together. When a summarizer call lifts the share from below the compactor's ``cost_alert`` to
or above it, that event carries a `CostAlert` with the figures: once per crossing, since the share
must fall below again (the agent's own traffic growing) before the next event can cross.

List prices (`quote`) come from pydantic's maintained ``genai-prices`` package when it is
importable (the ``prices`` extra; the ``pydantic-ai`` extra installs it too) and knows the model,
else from `progsum.policy._windows.MODELS` (list prices read in December 2026); ``docs/models.md``
says which models only the table prices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict

from progsum.errors import ConfigError
from progsum.policy._windows import Price, find_profile

if TYPE_CHECKING:
    from genai_prices.types import TieredPrices

__all__ = [
    "DEFAULT_COST_ALERT",
    "TABLE",
    "AgentUsage",
    "Cost",
    "CostAlert",
    "Quote",
    "check_cost_alert",
    "cost_of",
    "list_price",
    "price_sources",
    "quote",
    "report_counts",
    "share",
]

TABLE = "progsum's table"
"""The `Quote.source` of a price read from `progsum.policy._windows.MODELS`."""

DEFAULT_COST_ALERT = 0.15
"""Summarization share of all reported tokens that raises a cost alert (15 %)."""


class Tokens(Protocol):
    """Token counts in Anthropic's split (both usage classes have them)."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_creation_input_tokens(self) -> int: ...
    @property
    def cache_read_input_tokens(self) -> int: ...


def total(usage: Tokens) -> int:
    """All tokens of a usage: uncached, cache-written and cache-read input, and output."""
    return (
        usage.input_tokens
        + usage.cache_creation_input_tokens
        + usage.cache_read_input_tokens
        + usage.output_tokens
    )


@dataclass(frozen=True, slots=True)
class AgentUsage:
    """Running totals of the agent's own model calls, as reported to progsum.

    A plain frozen record, not a pydantic model: one is built on every turn that reports usage,
    and validation would cost that turn more than the rest of it.
    """

    input_tokens: int = 0
    """Uncached input tokens (OpenAI: prompt tokens; a bare int report counts here)."""
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    reports: int = 0
    """Usage reports summed (one per model call the agent reported)."""

    @property
    def tokens(self) -> int:
        """All reported tokens."""
        return total(self)

    def __add__(self, other: AgentUsage) -> AgentUsage:
        """Sum two totals field by field."""
        return AgentUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.reports + other.reports,
        )

    def to_dict(self) -> dict[str, int]:
        """The totals as JSON-compatible ints, by field name."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> AgentUsage:
        """Totals saved by `to_dict` (missing fields count 0).

        Raises:
            ConfigError: a key is not a field, or a value is not a non-negative int.
        """
        unknown = sorted(set(data) - set(_FIELDS))
        if unknown:
            raise ConfigError(
                f"agent usage has unknown field(s) {unknown}; expected some of {list(_FIELDS)}"
            )
        for name, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(
                    f"agent usage {name}={value!r} is not a token count; expected an int >= 0"
                )
        return cls(**data)  # type: ignore[arg-type]  # checked above: known names, ints

    @classmethod
    def of(cls, usage: object) -> AgentUsage:
        """One report: an Anthropic or OpenAI usage object or dict, or an int (input tokens).

        Raises:
            ConfigError: the report has no token fields, or is a negative int.
        """
        return cls(*report_counts(usage), 1)


Counts = tuple[int, int, int, int]
"""A report's input, output, cache-creation and cache-read tokens (`AgentUsage`'s order)."""


def report_counts(usage: object) -> Counts:
    """The token counts of one report, as `AgentUsage.of` reads them, without building one.

    A state that sums a report on every turn adds these to its totals.

    Raises:
        ConfigError: the report has no token fields, or is a negative int.
    """
    if type(usage) is dict and (given := usage.get("input_tokens")) is not None:
        get = usage.get  # the common case: a dict of ints, read without the Mapping check
        counts = (
            given,
            get("output_tokens") or 0,
            get("cache_creation_input_tokens") or 0,
            get("cache_read_input_tokens") or 0,
        )
        if type(given) is type(counts[1]) is type(counts[2]) is type(counts[3]) is int:
            return counts
        try:
            return int(given), int(counts[1]), int(counts[2]), int(counts[3])
        except (TypeError, ValueError):
            raise _not_counts(usage, get) from None
    if isinstance(usage, int) and not isinstance(usage, bool):
        if usage < 0:
            raise ConfigError(f"usage={usage} is negative; pass the provider's reported count")
        return usage, 0, 0, 0
    read = _reader(usage)
    if read("input_tokens") is not None:
        return (
            read("input_tokens") or 0,
            read("output_tokens") or 0,
            read("cache_creation_input_tokens") or 0,
            read("cache_read_input_tokens") or 0,
        )
    if read("prompt_tokens") is not None:
        return read("prompt_tokens") or 0, read("completion_tokens") or 0, 0, 0
    raise ConfigError(
        f"usage={usage!r} has neither 'input_tokens' (Anthropic) nor 'prompt_tokens' "
        "(OpenAI); pass response.usage or an int"
    )


_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "reports",
)


def _reader(usage: object) -> _Read:
    def get(key: str) -> object:
        return usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, None)

    def read(key: str) -> int | None:
        value = get(key)
        try:
            return None if value is None else int(value)  # type: ignore[call-overload]  # checked by the except
        except (TypeError, ValueError):
            raise _not_counts(usage, get) from None

    return read


def _not_counts(usage: object, get: Callable[[str], object]) -> ConfigError:
    """The error for a usage report whose token fields are not whole numbers, naming one."""
    for key in (*_FIELDS[:4], "prompt_tokens", "completion_tokens"):
        value = get(key)
        if value is not None and not isinstance(value, int):
            try:
                int(value)  # type: ignore[call-overload]  # any value: this finds the bad one
            except (TypeError, ValueError):
                return ConfigError(
                    f"usage={usage!r} holds {key}={value!r}, not a whole number of tokens; pass "
                    "response.usage as the provider returned it, or an int"
                )
    return ConfigError(f"usage={usage!r} holds a token count that is not a whole number")


class _Read(Protocol):
    def __call__(self, key: str) -> int | None: ...


class CostAlert(BaseModel):
    """The summarization share crossed the alert threshold with this event's summarizer call."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    share: float
    """Summarizer tokens over all reported tokens (agent and summarizer), after this event."""
    threshold: float
    """The compactor's ``cost_alert``."""
    summarizer_tokens: int
    """The summarizer's tokens over the whole conversation."""
    agent_tokens: int
    """The agent's reported tokens over the whole conversation."""

    def __str__(self) -> str:
        return (
            f"summarization is {self.share:.1%} of reported tokens, at or above the "
            f"{self.threshold:.0%} alert ({self.summarizer_tokens:,} summarizer tokens, "
            f"{self.agent_tokens:,} agent tokens)"
        )


def share(summarizer_tokens: int, agent_tokens: int) -> float | None:
    """Summarizer tokens over all tokens; None when nothing was reported at all."""
    whole = summarizer_tokens + agent_tokens
    return summarizer_tokens / whole if whole else None


def check_cost_alert(
    threshold: float, summarizer_before: int, summarizer_after: int, agent_tokens: int
) -> CostAlert | None:
    """The alert when a summarizer call lifts the share from below ``threshold`` to or above it.

    Needs at least one agent report: without one the share is meaningless (100 %).
    """
    if agent_tokens <= 0 or summarizer_after <= summarizer_before:
        return None
    before = share(summarizer_before, agent_tokens) or 0.0
    after = share(summarizer_after, agent_tokens) or 0.0
    if before < threshold <= after:
        return CostAlert(
            share=after,
            threshold=threshold,
            summarizer_tokens=summarizer_after,
            agent_tokens=agent_tokens,
        )
    return None


def check_threshold(threshold: float | None) -> float | None:
    """``threshold`` if it is a share in (0, 1], else a ConfigError naming the fix."""
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ConfigError(f"cost_alert={threshold!r} must be a share such as 0.15, or None")
    if not 0 < threshold <= 1:
        raise ConfigError(
            f"cost_alert={threshold!r} must be a share of tokens between 0 and 1 (0.15 alerts "
            "at 15 %), or None to turn the alert off"
        )
    return float(threshold)


@dataclass(frozen=True, slots=True)
class Quote:
    """A model's list price for requests of one prompt size, and where it was read."""

    price: Price
    band: int | None
    """The price is for prompts over this many tokens; None: the base price."""
    source: str
    """``genai-prices X.Y.Z`` or `TABLE`."""


@dataclass(frozen=True, slots=True)
class Cost:
    """What some usage costs at list price."""

    dollars: float
    quote: Quote


def quote(model: str, prompt_tokens: float = 0) -> Quote | None:
    """``model``'s list price for a request of ``prompt_tokens`` input tokens; None if unknown.

    genai-prices first, when it is importable and knows the model (its own name matching, with a
    provider prefix such as ``anthropic/`` as its provider id); else progsum's table, by longest
    prefix. A price with tiers (Haiku 5.5 over 100,000 prompt tokens, Sonnet 4.5 over 200,000)
    bills every token of a larger request at the tier's price, as the provider does.
    """
    return _genai_quote(model, prompt_tokens) or _table_quote(model, prompt_tokens)


def cost_of(usage: Tokens, model: str | None, *, calls: int) -> Cost | None:
    """``usage`` over ``calls`` model calls at list price; None when no price is known.

    The price band follows the average prompt of a call (input, cache writes and cache reads).
    """
    if not model:
        return None
    prompt = (
        usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    ) / max(calls, 1)
    found = quote(model, prompt)
    if found is None:
        return None
    price = found.price
    dollars = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
    ) / 1_000_000
    return Cost(dollars=dollars, quote=found)


def list_price(usage: Tokens, model: str | None, *, calls: int) -> float | None:
    """US dollars for ``usage`` at ``model``'s list price (see `cost_of`), or None if unknown."""
    found = cost_of(usage, model, calls=calls)
    return None if found is None else found.dollars


def price_sources() -> str:
    """Where list prices are looked up, for a message saying a model has none."""
    try:
        import genai_prices  # noqa: PLC0415 - optional extra (see _genai_quote)
    except ImportError:
        return TABLE
    return f"genai-prices {genai_prices.__version__} or {TABLE}"


def _table_quote(model: str, prompt_tokens: float) -> Quote | None:
    found = find_profile(model)
    if found is None or found.price is None:
        return None
    long, price = found.long_prompt, found.long_price
    if long is not None and price is not None and prompt_tokens > long:
        return Quote(price=price, band=long, source=TABLE)
    return Quote(price=found.price, band=None, source=TABLE)


def _genai_quote(model: str, prompt_tokens: float) -> Quote | None:
    """The price genai-prices lists for ``model`` (at this prompt size), or None."""
    try:
        import genai_prices  # noqa: PLC0415 - optional extra, 0.3 s to import: on first price
    except ImportError:
        return None
    provider, _, name = model.strip().lower().rpartition("/")
    try:
        found = genai_prices.calc_price(
            genai_prices.Usage(input_tokens=0), name, provider_id=provider or None
        )
    except LookupError:
        return None
    listed = found.model_price
    base_input, band = _tier(listed.input_mtok, prompt_tokens)
    output, output_band = _tier(listed.output_mtok, prompt_tokens)
    if base_input is None or output is None:
        return None
    write, write_band = _tier(listed.cache_write_mtok, prompt_tokens)
    read, read_band = _tier(listed.cache_read_mtok, prompt_tokens)
    price = Price(
        input=base_input,
        output=output,
        cache_write=base_input if write is None else write,  # OpenAI: writes bill as input
        cache_read=base_input if read is None else read,
    )
    bands = [b for b in (band, output_band, write_band, read_band) if b is not None]
    source = f"genai-prices {genai_prices.__version__}"
    return Quote(price=price, band=max(bands, default=None), source=source)


def _tier(
    value: Decimal | TieredPrices | None, prompt_tokens: float
) -> tuple[float | None, int | None]:
    """A genai-prices price per million tokens at this prompt size, and its tier's start.

    ``value`` is a `Decimal`, tiered prices (the highest tier whose start the prompt exceeds
    applies to every token), or None (not listed).
    """
    if value is None:
        return None, None
    if isinstance(value, Decimal):
        return float(value), None
    price, start = float(value.base), None
    for tier in value.tiers:
        if prompt_tokens > tier.start:
            price, start = float(tier.price), int(tier.start)
    return price, start
