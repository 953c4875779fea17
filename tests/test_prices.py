"""List prices: genai-prices when it is importable and knows the model, progsum's table otherwise.

With genai-prices, every cost is checked against genai-prices' own ``calc_price`` on the same
usage (its input count includes cache reads and writes; progsum's is Anthropic's uncached
split): the oracle is the maintained package, not progsum's arithmetic. Without it (hidden from
``import`` for the test), every price is the table's, and models without a row say so.
"""

from __future__ import annotations

import sys
from decimal import Decimal

import pytest

from progsum.cli._output import cost
from progsum.policy._usage import TABLE, AgentUsage, cost_of, price_sources, quote
from progsum.policy._windows import MODELS, Price
from progsum.summary._update import SummarizerUsage

genai_prices = pytest.importorskip("genai_prices")

USAGES = [
    AgentUsage(input_tokens=12_345, output_tokens=2_000, reports=1),
    AgentUsage(
        input_tokens=3_000,
        output_tokens=500,
        cache_creation_input_tokens=4_000,
        cache_read_input_tokens=50_000,
        reports=1,
    ),
    AgentUsage(input_tokens=150_000, output_tokens=1_000, reports=1),  # over Haiku 5.5's tier
    AgentUsage(input_tokens=230_000, output_tokens=1_000, reports=1),  # over Sonnet 4.5's tier
]
"""One model call each, so the prompt size that picks a price tier is the call's own."""

KNOWN_DIFFERENCES = {"claude-sonnet-5-5"}
"""Table rows whose base price differs from genai-prices 0.2.3 (docs/models.md says how)."""


def genai_dollars(usage: AgentUsage, model: str) -> float:
    """What genai-prices itself charges for one call with this usage."""
    prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    found = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=prompt,
            output_tokens=usage.output_tokens,
            cache_write_tokens=usage.cache_creation_input_tokens,
            cache_read_tokens=usage.cache_read_input_tokens,
        ),
        model,
    )
    return float(found.total_price)


def known_to_genai(model: str) -> bool:
    """Whether genai-prices has a price for ``model``."""
    try:
        genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model)
    except LookupError:
        return False
    return True


@pytest.fixture
def without_genai(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import genai_prices`` fails, as when the optional package is not installed."""
    monkeypatch.setitem(sys.modules, "genai_prices", None)


@pytest.mark.parametrize("model", sorted(m for m in MODELS if known_to_genai(m)))
def test_costs_match_genai_prices_for_every_model_it_knows(model: str) -> None:
    """Each table model genai-prices knows is priced by genai-prices, tiers included."""
    for usage in USAGES:
        found = cost_of(usage, model, calls=1)
        assert found is not None
        assert found.quote.source == f"genai-prices {genai_prices.__version__}"
        assert found.dollars == pytest.approx(genai_dollars(usage, model), rel=1e-9), usage


def test_models_genai_prices_lacks_fall_back_to_the_table() -> None:
    """A table model genai-prices does not list (Mythos 5.1) is priced from the table."""
    assert not known_to_genai("claude-mythos-5-1")
    found = quote("claude-mythos-5-1")
    assert found is not None
    assert found.source == TABLE
    assert found.price == MODELS["claude-mythos-5-1"].price


def test_genai_prices_also_prices_models_outside_the_table() -> None:
    """Models the table has no price for (OpenAI's) get genai-prices' price; no write premium."""
    assert MODELS["gpt-4o"].price is None
    found = quote("gpt-4o-2024-08-06")
    assert found is not None
    assert found.price.cache_write == found.price.input  # OpenAI caches writes at input price
    line = cost(SummarizerUsage(input_tokens=1_000, output_tokens=100, calls=1), "gpt-4o")
    assert line.startswith("$")


def test_a_provider_prefix_names_genai_prices_provider() -> None:
    """``anthropic/claude-haiku-4-5`` is Anthropic's price; a provider it lacks, the table's."""
    prefixed = quote("anthropic/claude-haiku-4-5")
    assert prefixed is not None
    assert prefixed == quote("claude-haiku-4-5")
    assert prefixed.source.startswith("genai-prices")
    elsewhere = quote("nowhere/claude-haiku-4-5")
    assert elsewhere is not None
    assert (elsewhere.source, elsewhere.price) == (TABLE, MODELS["claude-haiku-4-5"].price)


def test_the_tier_follows_the_average_call_not_the_sum() -> None:
    """Two Haiku 5.5 calls of 60,000 prompt tokens bill at the base price, not the 100k tier."""
    usage = SummarizerUsage(input_tokens=120_000, output_tokens=2_000, calls=2)
    both = cost_of(usage, "claude-haiku-5-5", calls=2)
    assert both is not None
    assert both.quote.band is None
    one = AgentUsage(input_tokens=60_000, output_tokens=1_000, reports=1)
    assert both.dollars == pytest.approx(2 * genai_dollars(one, "claude-haiku-5-5"))
    long = cost_of(usage, "claude-haiku-5-5", calls=1)
    assert long is not None
    assert long.quote.band == 100_000


def test_the_table_agrees_with_genai_prices_where_both_list_a_model() -> None:
    """The fallback table's base prices equal genai-prices', except the documented rows."""
    differing = set()
    for model, row in MODELS.items():
        if row.price is None or not known_to_genai(model):
            continue
        listed = genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model).model_price
        base = [
            getattr(v, "base", v)
            for v in (
                listed.input_mtok,
                listed.output_mtok,
                listed.cache_write_mtok,
                listed.cache_read_mtok,
            )
        ]
        table = [row.price.input, row.price.output, row.price.cache_write, row.price.cache_read]
        if [Decimal(str(t)) for t in table] != base:
            differing.add(model)
    assert differing == KNOWN_DIFFERENCES


@pytest.mark.usefixtures("without_genai")
def test_without_genai_prices_every_price_is_the_tables() -> None:
    """genai-prices not importable: the table prices its rows, by longest prefix, tiers too."""
    for model, row in MODELS.items():
        found = quote(model)
        if row.price is None:
            assert found is None, model
            continue
        assert found == quote(model + "-20261001")  # a dated id resolves to its row
        assert found is not None
        assert (found.price, found.source, found.band) == (row.price, TABLE, None)
    usage = AgentUsage(input_tokens=150_000, output_tokens=1_000, reports=1)
    long = cost_of(usage, "claude-haiku-5-5", calls=1)
    assert long is not None
    assert long.quote.band == 100_000
    price = MODELS["claude-haiku-5-5"].long_price
    assert isinstance(price, Price)
    assert long.dollars == pytest.approx((150_000 * price.input + 1_000 * price.output) / 1e6)
    assert price_sources() == TABLE


@pytest.mark.usefixtures("without_genai")
def test_without_genai_prices_unknown_models_say_where_they_were_looked_up() -> None:
    """A model outside the table costs 'unknown', naming progsum's table as the place looked."""
    usage = SummarizerUsage(input_tokens=1_000, output_tokens=100, calls=1)
    assert cost(usage, "gpt-4o") == "cost unknown (no list price for gpt-4o in progsum's table)"
    assert cost_of(usage, "gpt-4o", calls=1) is None


def test_with_genai_prices_unknown_models_name_both_sources() -> None:
    """A model neither source lists names both in its 'cost unknown' line."""
    usage = SummarizerUsage(input_tokens=1_000, output_tokens=100, calls=1)
    assert cost(usage, "claude-opus-9") == (
        "cost unknown (no list price for claude-opus-9 in "
        f"genai-prices {genai_prices.__version__} or progsum's table)"
    )
