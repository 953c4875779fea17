"""Token accounting: the estimator's rates, usage parsing, and anchoring on real usage."""

from __future__ import annotations

import json

import pytest
from anthropic.types import Usage

from progsum import ConfigError, ConversationState
from progsum.policy._tokens import (
    Anchor,
    HeuristicCounter,
    anchor_usage,
    count_with_anchor,
    usage_tokens,
)

COUNTER = HeuristicCounter()
PROSE = "The quick brown fox jumps over the lazy dog while the farmer watches from the porch. " * 20
DATA = json.dumps([{"id": f"HAT{n:03d}", "price": n * 13, "seats": [1, 2, 3]} for n in range(40)])


def test_prose_counts_near_documented_rate() -> None:
    """English prose counts at about 3.6 characters per token."""
    tokens = COUNTER.count_text(PROSE)
    assert len(PROSE) / 3.8 < tokens < len(PROSE) / 3.4


def test_data_counts_denser_than_prose() -> None:
    """JSON-like text costs more tokens per character than prose."""
    assert COUNTER.count_text(DATA) / len(DATA) > COUNTER.count_text(PROSE) / len(PROSE) * 1.3


def test_cjk_counts_about_one_token_per_character() -> None:
    """Non-ASCII text (CJK) counts about one token per character."""
    text = "東京で会議があります" * 30
    assert len(text) * 0.9 <= COUNTER.count_text(text) <= len(text) * 1.1


def test_empty_text_is_free() -> None:
    """The empty string costs nothing; an empty message only its framing."""
    assert COUNTER.count_text("") == 0
    assert COUNTER.count_message({"role": "user", "content": ""}) == 4 + 3


def test_images_and_documents_have_fixed_costs() -> None:
    """An image or a document costs a fixed amount, not the size of its base64 data."""
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "A" * 90_000},
    }
    document = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "B" * 90_000},
    }
    assert COUNTER.count_message({"role": "user", "content": [image]}) == 4 + 3 + 1_600
    assert COUNTER.count_message({"role": "user", "content": [document]}) == 4 + 3 + 3_000


def test_tool_calls_count_their_arguments() -> None:
    """OpenAI tool call arguments and Anthropic tool inputs are counted as data."""
    openai = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "search", "arguments": DATA}}
        ],
    }
    anthropic = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "search", "input": json.loads(DATA)}],
    }
    assert COUNTER.count_message(openai) > COUNTER.count_text(DATA)
    assert COUNTER.count_message(anthropic) > COUNTER.count_text(DATA) * 0.9


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(1234, 1234, id="int"),
        pytest.param(
            {
                "input_tokens": 100,
                "cache_creation_input_tokens": 20,
                "cache_read_input_tokens": 3000,
                "output_tokens": 50,
            },
            3170,
            id="anthropic-dict",
        ),
        pytest.param(
            Usage(
                input_tokens=100,
                output_tokens=50,
                cache_read_input_tokens=3000,
                cache_creation_input_tokens=None,
            ),
            3150,
            id="anthropic-sdk-object",
        ),
        pytest.param(
            {"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000},
            1000,
            id="openai-dict",
        ),
    ],
)
def test_usage_tokens_reads_provider_reports(usage: object, expected: int) -> None:
    """Anthropic (input + cache + output) and OpenAI (prompt + completion) usage are summed."""
    assert usage_tokens(usage) == expected


@pytest.mark.parametrize(
    "usage", [True, -5, {"tokens": 3}, "many"], ids=["bool", "negative", "unknown-dict", "str"]
)
def test_usage_tokens_rejects_other_values(usage: object) -> None:
    """Anything else is a ConfigError naming the value and what to pass."""
    with pytest.raises(ConfigError, match=r"usage=.*pass"):
        usage_tokens(usage)


def test_count_without_usage_applies_safety_margin() -> None:
    """Without any usage report, the count is the estimate times the margin."""
    assert count_with_anchor(None, 1000, 1.3) == (1300, "estimated")


def test_count_anchors_on_real_usage_plus_growth() -> None:
    """With a report, the count is the real figure plus the margin-scaled growth since."""
    anchor = anchor_usage(None, tokens=5000, estimate=4000)
    assert anchor.ratio is None
    assert count_with_anchor(anchor, 4000, 1.3) == (5000, "anchored")
    assert count_with_anchor(anchor, 4100, 1.3) == (5130, "anchored")
    # shrinkage (a compaction) is not scaled up until a ratio is learnt
    assert count_with_anchor(anchor, 3000, 1.3) == (4000, "anchored")


def test_ratio_is_learnt_from_changes_not_totals() -> None:
    """The ratio comes from the change between two reports, so fixed overhead does not skew it."""
    first = anchor_usage(None, tokens=12_000, estimate=2_000)  # 10k of tool definitions unseen
    second = anchor_usage(first, tokens=13_100, estimate=3_000)
    assert second.ratio == pytest.approx(1.1)
    assert second.observations == 1
    third = anchor_usage(second, tokens=14_000, estimate=4_000)
    assert third.ratio == pytest.approx((1.1 + 0.9) / 2)


def test_ratio_is_clamped_and_ignores_tiny_changes() -> None:
    """An absurd observed ratio is clamped; a change too small to observe keeps the old ratio."""
    first = Anchor(tokens=1000, estimate=1000)
    wild = anchor_usage(first, tokens=100_000, estimate=1_100)
    assert wild.ratio == 2.5
    tiny = anchor_usage(wild, tokens=100_010, estimate=1_110)
    assert tiny.ratio == 2.5
    assert tiny.observations == wild.observations


def test_state_records_usage_as_anchor() -> None:
    """state.append(..., usage=...) anchors the count on the reported tokens."""
    state = ConversationState([{"role": "user", "content": "hello " * 50}])
    anchored = state.append(
        {"role": "assistant", "content": "hi"}, usage={"input_tokens": 700, "output_tokens": 3}
    )
    assert anchored.anchor is not None
    assert anchored.anchor.tokens == 703
    assert anchored.anchor.estimate == anchored.estimate(COUNTER)
    assert state.anchor is None  # the old state is untouched


def test_newer_claude_tokenizer_counts_more() -> None:
    """Claude 4.7 and later count ~30% more tokens; the estimator scales for them by name."""
    old = HeuristicCounter.for_model("claude-haiku-4-5")
    new = HeuristicCounter.for_model("claude-haiku-5-5")
    assert (old.scale, new.scale) == (1.0, 1.3)
    assert new.count_text(PROSE) == pytest.approx(old.count_text(PROSE) * 1.3, rel=0.01)
    assert HeuristicCounter.for_model("my-local-llama") == HeuristicCounter()
    assert HeuristicCounter.for_model(None) == HeuristicCounter()


def test_an_anchor_is_a_value() -> None:
    """Anchors with the same fields are equal and hash alike; one cannot be changed in place."""
    anchor = Anchor(tokens=1000, estimate=900, ratio=1.2, observations=3)
    assert anchor == Anchor(1000, 900, 1.2, 3)
    assert hash(anchor) == hash(Anchor(1000, 900, 1.2, 3))
    assert anchor != Anchor(1000, 900, 1.2, 4)
    assert Anchor(5, 4) == Anchor(5, 4, None, 0)
    with pytest.raises(AttributeError):
        anchor.tokens = 7  # type: ignore[misc]
    assert (anchor.tokens, anchor.estimate, anchor.ratio, anchor.observations) == (
        1000,
        900,
        1.2,
        3,
    )


def test_anchor_usage_builds_the_anchor_its_fields_say() -> None:
    """Each branch of `anchor_usage` returns an `Anchor` equal to one built from its fields."""
    first = anchor_usage(None, tokens=5000, estimate=4000)
    tiny = anchor_usage(first, tokens=5010, estimate=4010)
    learnt = anchor_usage(tiny, tokens=6100, estimate=5000)
    for anchor, fields in (
        (first, (5000, 4000, None, 0)),
        (tiny, (5010, 4010, None, 0)),
        (learnt, (6100, 5000, 1090 / 990, 1)),
    ):
        assert type(anchor) is Anchor
        assert anchor == Anchor(*fields)


def test_a_state_keeps_its_anchor_through_json() -> None:
    """A state's anchor, its learnt ratio included, reads back equal from the state's JSON."""
    state = ConversationState([{"role": "user", "content": "hello " * 50}])
    for n in range(3):
        state = state.append(
            {"role": "assistant", "content": "word " * (100 * n + 80)},
            usage={"input_tokens": 700 + 300 * n, "output_tokens": 3},
        )
    assert state.anchor is not None
    assert state.anchor.observations >= 1
    again = ConversationState.from_json(state.to_json())
    assert again.anchor == state.anchor
    assert type(again.anchor) is Anchor
