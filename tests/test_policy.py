"""Policy: documented defaults, model resolution, and errors that name the value and the fix."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from progsum import ConfigError, Policy
from progsum.policy._policy import DEFAULT_WORK_HEADER_SHARE
from progsum.policy._windows import context_window


def test_defaults_for_a_claude_model() -> None:
    """Default trigger 0.9 of the input window, target 0.6 of it, the tail fits the target."""
    policy = Policy(model="claude-sonnet-4-5")
    assert policy.window == 200_000
    assert policy.input_window == 200_000 - 8_192
    assert policy.unit == "tokens"
    assert policy.trigger_limit == int(191_808 * 0.9)
    assert policy.target_limit == int(191_808 * 0.6)
    assert policy.keep is None  # as many recent messages as fit the target
    assert policy.keep_amount == ("messages", 1)  # at least the newest message
    assert policy.keep_first is True


def test_an_explicit_keep_stays() -> None:
    """``keep`` fixes the verbatim tail instead of fitting it to the target."""
    policy = Policy(context_window=100_000, keep=("messages", 8))
    assert policy.keep_amount == ("messages", 8)


def test_policy_is_frozen_and_keyword_only() -> None:
    """A policy cannot be changed after creation or built positionally."""
    policy = Policy(context_window=100_000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.keep_first = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        Policy("claude-sonnet-4-5")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-5-5", 1_000_000),
        ("claude-haiku-5-5", 1_000_000),
        ("claude-fable-5-2", 1_000_000),
        ("claude-opus-4-8", 200_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("anthropic/claude-haiku-4-5", 200_000),
        ("claude-opus-4-1", 200_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("openai/gpt-5-mini", 272_000),
        ("gpt-5.5", 1_050_000),
        ("o4-mini", 200_000),
    ],
)
def test_model_names_resolve_by_prefix(model: str, window: int) -> None:
    """Dated ids and provider prefixes resolve to the family's window."""
    assert context_window(model) == window


def test_unknown_model_says_how_to_set_the_window() -> None:
    """An unknown model is an error pointing at context_window=, and works once it is given."""
    with pytest.raises(
        ConfigError,
        match=r"model='llama-9' is not in .* pass Policy\(model=\.\.\., context_window=TOKENS\)",
    ):
        Policy(model="llama-9")
    assert Policy(model="llama-9", context_window=128_000).window == 128_000


def test_explicit_window_overrides_model() -> None:
    """context_window wins over the table."""
    assert Policy(model="claude-sonnet-4-5", context_window=1_000_000).window == 1_000_000


def test_small_window_reserves_a_tenth_for_output() -> None:
    """The default reserve is 8,192 tokens or a tenth of the window, whichever is smaller."""
    assert Policy(context_window=4_000).input_window == 3_600


def test_message_trigger_needs_no_window() -> None:
    """A message-count policy works without a model or window; the target follows the trigger."""
    policy = Policy(trigger=("messages", 40), keep=("messages", 6))
    assert policy.window is None
    assert (policy.unit, policy.trigger_limit, policy.target_limit) == ("messages", 40, 26)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        pytest.param({}, "needs the model's context window", id="no-window"),
        pytest.param(
            {"context_window": 200_000, "keep": ("messages", 0)},
            "keep=('messages', 0) must keep at least 1 message; use e.g. ('messages', 8)",
            id="keep-zero",
        ),
        pytest.param(
            {"context_window": 200_000, "trigger": ("fraction", 1.5)},
            "must be a fraction between 0 and 1",
            id="fraction-too-big",
        ),
        pytest.param(
            {"context_window": 200_000, "trigger": ("percent", 65)},
            "must be one of",
            id="unknown-kind",
        ),
        pytest.param(
            {"context_window": 200_000, "trigger": 0.65},
            "trigger=0.65 must be one of",
            id="bare-number",
        ),
        pytest.param(
            {"context_window": 200_000, "trigger": ("tokens", 500_000)},
            "exceeds the input window",
            id="tokens-too-big",
        ),
        pytest.param(
            {"context_window": 200_000, "target": ("fraction", 0.9)},
            "must be below the trigger",
            id="target-above-trigger",
        ),
        pytest.param(
            {"context_window": 200_000, "target": ("messages", 10)},
            "give both in the same unit",
            id="target-unit",
        ),
        pytest.param(
            {"trigger": ("messages", 10), "keep": ("messages", 8)},
            "is not below the post-compaction target",
            id="keep-too-big",
        ),
        pytest.param(
            {"trigger": ("messages", 1)}, "use at least ('messages', 2)", id="trigger-one"
        ),
        pytest.param(
            {"context_window": 50}, "context_window=50 must be a whole number", id="tiny-window"
        ),
        pytest.param(
            {"context_window": 10_000, "reserve_output": 9_000},
            "leaves too little",
            id="reserve-too-big",
        ),
        pytest.param(
            {"context_window": 10_000, "safety_margin": 0.5},
            "safety_margin=0.5 must be between",
            id="margin",
        ),
        pytest.param(
            {"context_window": 10_000, "keep": ("tokens", 2.5)},
            "must keep at least 1 token",
            id="float-tokens",
        ),
    ],
)
def test_invalid_values_raise_with_value_and_fix(kwargs: dict[str, Any], fragment: str) -> None:
    """Every invalid value raises ConfigError quoting the value and suggesting a fix."""
    with pytest.raises(ConfigError) as caught:
        Policy(**kwargs)
    assert fragment in str(caught.value)
    assert "use" in str(caught.value) or "pass" in str(caught.value) or "give" in str(caught.value)


def test_agent_header_budget_follows_the_work_state() -> None:
    """In an agent's conversation the header grows to hold the work state, within its cap.

    The work state's estimate (times the safety margin) claims its room first, the default
    budget stays for the prose notes, and the whole never passes `DEFAULT_WORK_HEADER_SHARE` of
    the input window; a chat, or a budget the caller gave, is unchanged.
    """
    policy = Policy(context_window=10_000)
    window = policy.input_window or 0
    base = policy.header_limit or 0
    assert policy.in_conversation("agent", work=0) is policy
    grown = policy.in_conversation("agent", work=600)
    assert grown.header_limit == base + math.ceil(600 * policy.safety_margin)
    assert grown.trigger_limit == policy.trigger_limit
    capped = policy.in_conversation("agent", work=50_000)
    assert capped.header_limit == math.floor(window * DEFAULT_WORK_HEADER_SHARE)
    assert (
        policy.in_conversation("chat", work=600).header_limit
        == policy.in_conversation("chat").header_limit
    )
    given = Policy(context_window=10_000, header_budget=("tokens", 700))
    assert given.in_conversation("agent", work=600).header_limit == 700


@pytest.mark.parametrize(
    ("window", "expected"),
    [(1_000, 135), (2_000, 180), (4_000, 360), (8_000, 720), (200_000, 8_192)],
)
def test_the_default_recall_budget_is_a_tenth_of_the_input_window_within_bounds(
    window: int, expected: int
) -> None:
    """10% of the input window, at most 8,192 tokens, at least 150 within 15%; a given one holds."""
    policy = Policy(context_window=window)
    assert policy.recall_limit == expected
    given = Policy(context_window=200_000, recall_budget=("tokens", 20_000))
    assert given.recall_limit == 20_000  # a budget the caller gives holds


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (Policy(context_window=8_000), 720),
        (Policy(context_window=200_000, trigger=("tokens", 6_000)), 666),
        (Policy(context_window=8_000, trigger=("fraction", 0.8), target=("fraction", 0.2)), 1_440),
        (Policy(context_window=8_000, target=("fraction", 0.8)), 240),
        (Policy(context_window=8_000, target=("fraction", 0.87)), 150),
    ],
    ids=["defaults", "a 6k trigger", "a wide span", "a narrow span", "the floor"],
)
def test_the_default_recall_budget_is_a_third_of_what_a_fold_frees(
    policy: Policy, expected: int
) -> None:
    """By default a block may bring the next compaction a third of a fold's span closer, at most."""
    span = policy.trigger_limit - policy.target_limit
    assert policy.recall_limit == expected
    assert policy.recall_limit == max(span // 3, 150)


def test_a_budget_given_with_the_default_value_holds_as_given() -> None:
    """A budget the caller writes out holds as written, even when it equals the default's value."""
    default = Policy(context_window=200_000)
    window = default.input_window or 0
    header = Policy(context_window=200_000, header_budget=("fraction", 0.15))
    assert header.in_conversation("chat").header_limit == math.floor(window * 0.15)
    assert default.in_conversation("chat").header_limit != math.floor(window * 0.15)
    recall = Policy(context_window=200_000, recall_budget=("fraction", 0.1))
    assert recall.recall_limit == math.floor(window * 0.1)  # not capped as the default is
    assert default.recall_limit != math.floor(window * 0.1)
    assert default not in (header, recall)  # equal values, another policy
    assert dataclasses.replace(default, trigger=("fraction", 0.8)).recall_limit == (
        default.recall_limit
    )  # a copy keeps its defaults
