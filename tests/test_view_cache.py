"""The model view, built once per change of a state, shows what a fresh build shows.

A state loaded from its JSON has no cache; every cached path is compared with it, in both
formats and after every engine step.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from progsum import Compactor, ConversationState, Policy
from progsum.render._requests import render_anthropic, render_openai
from progsum.summary._update import SummaryUpdate
from progsum.testing import FunctionSummarizer

BIG = "row,amount\n" + "\n".join(f"{n},{n * 7}.00" for n in range(300))


def _anthropic(n: int, *, repeat: bool) -> list[dict[str, Any]]:
    """Round ``n``: a request, a call, its result (answered twice when ``repeat``), an answer."""
    call = {"type": "tool_use", "id": f"toolu_{n}", "name": "read_file", "input": {"n": n}}
    result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"{n}\n{BIG}"}
    return [
        {"role": "user", "content": f"Read file {n}, please."},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result, result] if repeat else [result]},
        {"role": "assistant", "content": f"File {n} has 300 rows."},
    ]


def _openai(n: int, *, repeat: bool) -> list[dict[str, Any]]:
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"n": n})},
    }
    answer = {"role": "tool", "tool_call_id": f"call_{n}", "content": f"{n}\n{BIG}"}
    return [
        {"role": "user", "content": f"Read file {n}, please."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        answer,
        *([answer] if repeat else []),
        {"role": "assistant", "content": f"File {n} has 300 rows."},
    ]


def _compactor() -> Compactor:
    return Compactor(
        policy=Policy(context_window=40_000, trigger=("tokens", 12_000), keep=("messages", 6)),
        summarizer=FunctionSummarizer(lambda _: SummaryUpdate()),
    )


def _render(state: ConversationState[Any]) -> Any:
    return render_openai(state) if state.format == "openai" else render_anthropic(state)


def _fresh(state: ConversationState[Any]) -> Any:
    """The view built from nothing: the state loaded from its JSON shares no cache."""
    return _render(ConversationState.from_dict(json.loads(json.dumps(state.to_dict()))))


@settings(max_examples=25, deadline=None)
@given(
    fmt=st.sampled_from(["anthropic", "openai"]),
    repeats=st.lists(st.booleans(), min_size=4, max_size=24),
    renders=st.sets(st.integers(min_value=0, max_value=200)),
    older=st.booleans(),
)
def test_a_cached_view_shows_what_a_fresh_build_shows(
    fmt: str, repeats: list[bool], renders: set[int], older: bool
) -> None:
    """Turn by turn through clearing and folds, the view equals the one built from the JSON.

    Rendered at random turns, and an older state of the chain after a newer one.
    """
    make = _anthropic if fmt == "anthropic" else _openai
    compactor = _compactor()
    state: ConversationState[Any] = ConversationState()
    history: list[ConversationState[Any]] = []
    turn = 0
    for n, repeat in enumerate(repeats):
        for message in make(n, repeat=repeat):
            state = compactor.maybe_compact(state.append(message))
            history.append(state)
            if turn in renders:
                assert _render(state) == _fresh(state)
            turn += 1
    assert _render(state) == _fresh(state)
    if older:
        earlier = history[len(history) // 2]
        assert _render(earlier) == _fresh(earlier)
    assert any(e.outcome in ("reduced", "compacted") for e in state.events) or len(repeats) < 8


def test_an_unchanged_state_renders_the_same_messages_in_a_new_list() -> None:
    """Rendering again returns equal messages in a list of its own: a caller may change it."""
    state = ConversationState([m for n in range(3) for m in _anthropic(n, repeat=False)])
    _, first = render_anthropic(state)
    first.append({"role": "user", "content": "not in the state"})
    _, again = render_anthropic(state)
    assert len(again) == len(state.effective)
    assert all(a is b for a, b in zip(again, state.effective, strict=True))


def test_a_repeated_answer_stays_out_after_its_message_is_cleared() -> None:
    """A cleared message that answered one call twice still shows one answer."""
    messages = [m for n in range(12) for m in _anthropic(n, repeat=n == 0)]
    state = ConversationState(messages)
    _render(state)  # a view cached before the reduction clears the old results
    reduced = _compactor().maybe_compact(state)
    assert reduced.events
    assert reduced.events[-1].outcome == "reduced"
    _, view = render_anthropic(reduced)
    first_result = view[2]["content"]
    assert len(first_result) == 1
    assert first_result[0]["content"].startswith("[progsum cleared")
    assert view == _fresh(reduced)[1]


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_a_forked_chain_keeps_its_own_view(fmt: str) -> None:
    """Two states appended to one older state each show their own newest message."""
    make = _anthropic if fmt == "anthropic" else _openai
    base = ConversationState(make(0, repeat=False))
    _render(base)
    left = base.append({"role": "user", "content": "left"})
    right = base.append({"role": "user", "content": "right"})
    assert _render(left) == _fresh(left)
    assert _render(right) == _fresh(right)
    assert _render(base) == _fresh(base)
