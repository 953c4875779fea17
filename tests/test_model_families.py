"""Request shapes per Claude model family, checked against a fake API enforcing the docs' rules.

`tests.anthropic_rules.RuleAPI` refuses what Anthropic documents as HTTP 400 for each family; it
knows nothing of progsum's tables. Each family's request is also pinned by a snapshot.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
from typing import Any

import anthropic
import instructor
import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from progsum import Compactor, ConversationState, Policy, Summary
from progsum.errors import ConfigError, SummaryValidationError
from progsum.summarizers import ExtractiveSummarizer, FallbackSummarizer
from progsum.summarizers._chunking import chunk_bounds
from progsum.summarizers._shapes import shape_for
from progsum.summarizers.anthropic._summarizer import DEFAULT_MODEL, AnthropicSummarizer
from progsum.summarizers.prompt._update import TOOL_NAME
from progsum.summary._schema import Item
from progsum.summary._update import Retirement
from progsum.testing import summary_request
from tests.anthropic_rules import RuleAPI, estimate, violations
from tests.conversations import TRIP_RULE, trip_planning
from tests.test_consolidate_summarizer import consolidation_request

Body = dict[str, Any]

FAMILIES = {
    "claude-haiku-4-5": "Claude 4.x, small",
    "claude-sonnet-4-5": "Claude 4.x, end of life 2026-11-30",
    "claude-opus-4-8": "Claude 4.x, newer tokenizer",
    "claude-opus-5": "Claude 5, thinking on by default",
    "claude-sonnet-5": "Claude 5, no sampling parameters",
    "claude-fable-5": "Claude 5",
    "claude-haiku-5-5": "Claude 5.5, the default",
    "claude-sonnet-5-5": "Claude 5.5, between_tools",
    "claude-opus-5-5": "Claude 5.5, thinking always on",
    "claude-fable-5-1": "Claude 5.1, thinking always on",
    "claude-mythos-5-1": "Claude 5.1",
    "claude-nova-7": "a model no page describes yet",
}


def rule(_: Body) -> dict[str, Any]:
    """The model's answer: the trip's rule as a constraint."""
    return {"constraints": [TRIP_RULE]}


def trip() -> Any:
    """The first nine messages of the trip chat as one segment."""
    return summary_request(trip_planning(3)[:9])


def shape_of(body: Body) -> Body:
    """The request body with the long static texts replaced by their sizes (for snapshots)."""
    shape: Body = json.loads(json.dumps(body))
    for block in shape["system"]:
        block["text"] = f"<system prompt, {len(block['text'])} characters>"
    for message in shape["messages"]:
        if isinstance(message["content"], str):
            message["content"] = f"<user prompt, {len(message['content'])} characters>"
    for tool in shape["tools"]:
        tool["input_schema"] = f"<{len(json.dumps(tool['input_schema']))} characters of schema>"
        tool["description"] = f"<{len(tool['description'])} characters>"
    return shape


# -- the documented rules, one family at a time --------------------------------------------------


@pytest.mark.parametrize("model", list(FAMILIES), ids=list(FAMILIES.values()))
def test_each_family_accepts_the_request_and_yields_one_update(model: str) -> None:
    """The fake API enforcing the family's documented rules accepts the summary request."""
    api = RuleAPI(rule)
    update = AnthropicSummarizer(api.client(), model=model).summarize(trip())
    assert api.refusals == [[]]
    assert update.add == {"constraints": (TRIP_RULE,)}
    (body,) = api.bodies
    assert body["model"] == model
    assert [tool["name"] for tool in body["tools"]] == [TOOL_NAME]


@pytest.mark.parametrize("model", list(FAMILIES))
def test_request_body_snapshot_per_family(model: str, snapshot: SnapshotAssertion) -> None:
    """Each family's request shape (tool choice, thinking, caching) is pinned by a snapshot."""
    api = RuleAPI(rule)
    AnthropicSummarizer(api.client(), model=model).summarize(trip())
    assert shape_of(api.bodies[0]) == snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize(
    ("model", "extra", "phrase"),
    [
        pytest.param("claude-sonnet-5-5", {}, "tool_choice.type='tool'", id="sonnet-5.5-forced"),
        pytest.param("claude-opus-5-5", {}, "tool_choice.type='tool'", id="opus-5.5-forced"),
        pytest.param("claude-fable-5-1", {}, "tool_choice.type='tool'", id="fable-5.1-forced"),
        pytest.param("claude-mythos-5-1", {}, "tool_choice.type='tool'", id="mythos-5.1-forced"),
        pytest.param("claude-haiku-5-5", {}, "Thinking may not be enabled", id="haiku-5.5-thinks"),
        pytest.param(
            "claude-haiku-5-5",
            {"extra_body": {"temperature": 0.2}},
            "temperature",
            id="haiku-5.5-temperature",
        ),
        pytest.param(
            "claude-opus-5-5", {"thinking": {"type": "disabled"}}, "disabled", id="opus-5.5-off"
        ),
        pytest.param(
            "claude-haiku-5-5",
            {"thinking": {"type": "disabled"}, "output_config": {"effort": "xhigh"}},
            "is not supported at effort",
            id="haiku-5.5-off-at-xhigh",
        ),
    ],
)
def test_the_fake_refuses_what_the_docs_refuse(model: str, extra: Body, phrase: str) -> None:
    """The previous generation's request (forced tool, no thinking) gets the documented 400."""
    api = RuleAPI(rule)
    body: Body = {
        "model": model,
        "max_tokens": 1_024,
        "messages": [{"role": "user", "content": "Summarize."}],
        "tools": [{"name": TOOL_NAME, "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": TOOL_NAME},
        **extra,
    }
    with pytest.raises(anthropic.BadRequestError, match=re.escape(phrase)):
        api.client().messages.create(**body)


def test_a_json_mode_instructor_client_gets_no_tool_choice() -> None:
    """A user's Instructor client in JSON mode sends no tool, so no tool_choice is added."""
    api = RuleAPI(rule)
    client = instructor.from_anthropic(api.client(), mode=instructor.Mode.JSON)
    update = AnthropicSummarizer(client, model="claude-opus-5-5").summarize(trip())
    assert update.add == {"constraints": (TRIP_RULE,)}
    assert api.refusals == [[]]
    assert "tool_choice" not in api.bodies[0]


def test_old_generation_accepts_forced_tool_use() -> None:
    """Claude 4.x without thinking takes a forced tool: the fake is not refusing everything."""
    body: Body = {
        "model": "claude-haiku-4-5",
        "tool_choice": {"type": "tool", "name": TOOL_NAME},
        "messages": [{"role": "user", "content": "Summarize."}],
    }
    assert violations(body) == []


def test_a_thinking_family_reply_without_the_tool_call_is_reasked() -> None:
    """A text-only reply under tool_choice auto is re-asked; the next reply gives the one update."""
    answers = iter([None, {"constraints": [TRIP_RULE]}])
    api = RuleAPI(lambda _: next(answers))
    update = AnthropicSummarizer(api.client(), model="claude-opus-5-5").summarize(trip())
    assert update.add == {"constraints": (TRIP_RULE,)}
    assert api.refusals == [[], []]
    first, second = api.bodies
    assert first["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert "thinking" not in first
    assistant, reask = second["messages"][-2:]
    assert [block["type"] for block in assistant["content"]] == ["thinking", "text"]
    assert reask["role"] == "user"
    assert "no tool invocation" in reask["content"]
    assert update.usage is not None
    assert update.usage.calls == 2


def test_a_model_that_never_calls_the_tool_raises_after_the_reasks() -> None:
    """Text-only replies on every attempt end in SummaryValidationError, not a parse crash."""
    api = RuleAPI(lambda _: None)
    summarizer = AnthropicSummarizer(api.client(), model="claude-sonnet-5-5", max_retries=1)
    with pytest.raises(SummaryValidationError, match=r"answered in text .* on both attempts"):
        summarizer.summarize(trip())
    assert len(api.bodies) == 2


def test_sampling_parameters_are_refused_up_front_where_documented() -> None:
    """Haiku 5.5's refused sampling parameters fail up front; older models take extra_body."""
    with pytest.raises(ConfigError, match=r"temperature.*Claude Haiku 5\.5.*HTTP 400"):
        AnthropicSummarizer(model="claude-haiku-5-5", create_kwargs={"temperature": 0})
    with pytest.raises(ConfigError, match=r"top_k.*Claude Haiku 5\.5"):
        AnthropicSummarizer(model="claude-haiku-5-5", create_kwargs={"extra_body": {"top_k": 5}})
    with pytest.raises(ConfigError, match=r"extra_body': \{'top_p': 0\.9\}"):
        AnthropicSummarizer(model="claude-haiku-4-5", create_kwargs={"top_p": 0.9})
    api = RuleAPI(rule)
    older = AnthropicSummarizer(
        api.client(), model="claude-haiku-4-5", create_kwargs={"extra_body": {"top_p": 0.9}}
    )
    older.summarize(trip())
    assert api.bodies[0]["top_p"] == 0.9
    assert api.refusals == [[]]


def test_an_effort_that_cannot_run_without_thinking_is_refused_up_front() -> None:
    """Haiku 5.5 refuses thinking off above effort high: the summarizer says so; high works."""
    with pytest.raises(ConfigError, match=r"effort='xhigh'.*use effort 'low', 'medium' or 'high'"):
        AnthropicSummarizer(create_kwargs={"output_config": {"effort": "xhigh"}})
    api = RuleAPI(rule)
    summarizer = AnthropicSummarizer(
        api.client(), create_kwargs={"output_config": {"effort": "high"}}
    )
    summarizer.summarize(trip())
    assert api.refusals == [[]]
    assert api.bodies[0]["output_config"] == {"effort": "high"}


def test_the_default_is_the_current_small_claude() -> None:
    """With no model given, an SDK client summarizes with Claude Haiku 5.5."""
    api = RuleAPI(rule)
    AnthropicSummarizer(api.client()).summarize(trip())
    assert DEFAULT_MODEL == "claude-haiku-5-5"
    assert api.bodies[0]["model"] == "claude-haiku-5-5"
    assert api.bodies[0]["thinking"] == {"type": "disabled"}


# -- caching that engages, and is measured -------------------------------------------------------


def test_the_default_models_cache_engages_and_is_recorded_on_events() -> None:
    """On Haiku 5.5 the first compaction writes the cache, later ones read it; events say so."""
    api = RuleAPI(rule)
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 2)),
        summarizer=AnthropicSummarizer(api.client()),
    )
    state = ConversationState(trip_planning(2))
    for _ in range(3):
        state = compactor.compact(state.extend(trip_planning(1)[4:6]), force=True)
    usages = [e.usage for e in state.events if e.usage is not None]
    assert len(usages) == 3
    assert usages[0].cache_creation_input_tokens > 0
    assert usages[0].cache_read_input_tokens == 0
    assert all(
        u.cache_read_input_tokens == usages[0].cache_creation_input_tokens for u in usages[1:]
    )
    assert all(u.cache_note is None for u in usages)


def test_no_cache_is_claimed_below_the_models_minimum() -> None:
    """Haiku 4.5 caches only from 4,096 tokens: the summarizer does not mark a shorter prefix."""
    api = RuleAPI(rule)
    update = AnthropicSummarizer(api.client(), model="claude-haiku-4-5").summarize(trip())
    (body,) = api.bodies
    assert all("cache_control" not in block for block in body["system"])
    assert estimate([body["tools"], body["system"]]) < 4_096
    assert update.usage is not None
    assert update.usage.cache_note is None


def test_a_cache_that_never_engages_is_said_once_on_the_event() -> None:
    """A cache asked for but never written is noted on the first event only."""
    api = RuleAPI(rule)
    summarizer = AnthropicSummarizer(api.client(), model="claude-nova-7")
    first, second = summarizer.summarize(trip()), summarizer.summarize(trip())
    assert "cache_control" in api.bodies[0]["system"][0]
    assert first.usage is not None
    assert first.usage.cache_note is not None
    assert "claude-nova-7 neither wrote nor read the prompt cache" in first.usage.cache_note
    assert second.usage is not None
    assert second.usage.cache_note is None


def test_two_cached_prefixes_read_apart_give_no_note() -> None:
    """Summary and consolidation prefixes are cached apart: alternating calls read both."""
    api = RuleAPI(lambda body: {} if body["tools"][0]["name"] != TOOL_NAME else rule(body))
    summarizer = AnthropicSummarizer(api.client())
    request = consolidation_request(budget=150, tokens=262)
    updates = [summarizer.summarize(trip()), summarizer.consolidate(request)]
    updates += [summarizer.summarize(trip()), summarizer.consolidate(request)]
    usages = [u.usage for u in updates if u.usage is not None]
    assert [u.cache_read_input_tokens > 0 for u in usages] == [False, False, True, True]
    assert all(u.cache_note is None for u in usages)


def test_a_cache_rewritten_on_every_call_is_noted_once() -> None:
    """A provider that writes the cache each time but never reads it gets one note, on call 2."""
    api = RuleAPI(rule)
    summarizer = AnthropicSummarizer(api.client())
    notes = []
    for _ in range(3):
        api.cached.clear()  # the provider forgets the prefix between calls
        usage = summarizer.summarize(trip()).usage
        assert usage is not None
        notes.append(usage.cache_note)
    assert notes[0] is None
    assert notes[1] is not None
    assert "wrote the prompt cache again instead of reading it" in notes[1]
    assert notes[2] is None


# -- chunks under a price threshold --------------------------------------------------------------

WORDS = [
    a + b
    for a in ("ka", "lo", "mi", "nu", "pe", "ri", "so", "tu")
    for b in ("ba", "de", "fi", "go", "hu", "ja")
]


def long_chat() -> list[dict[str, Any]]:
    """A chat of 48 long messages (about 150k tokens), each naming its own topic word."""
    filler = "We kept talking about the plans in some detail, weighing every option. " * 90
    return [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"Topic {word}. {filler}"}
        for n, word in enumerate(WORDS)
    ]


def first_topic(body: Body) -> dict[str, Any]:
    """The model's answer: the topic of the first message of the segment it was sent."""
    match = re.search(r"Topic ([a-z]+)\.", body["messages"][0]["content"])
    assert match is not None
    return {"established_facts": [f"The talk covered {match.group(1)}."]}


def test_a_segment_over_the_price_threshold_is_summarized_in_chunks() -> None:
    """Over Haiku 5.5's 100k-token price threshold, chunks stay under it and combine in order."""
    api = RuleAPI(first_topic)
    request = summary_request(long_chat(), start=3)
    assert estimate([m["content"] for m in long_chat()]) > 100_000
    update = AnthropicSummarizer(api.client()).summarize(request)
    assert len(api.bodies) >= 2
    for body in api.bodies:
        assert estimate([body["tools"], body["system"], body["messages"]]) < 100_000
    assert update.usage is not None
    chunks = update.usage.chunks
    assert len(chunks) == len(api.bodies)
    assert chunks[0][0] == 3
    assert chunks[-1][1] == 3 + len(WORDS)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chunks))
    facts = update.add["established_facts"]
    assert [getattr(f, "text", f) for f in facts] == [
        f"The talk covered {WORDS[start - 3]}." for start, _ in chunks
    ]
    assert update.usage.calls == len(api.bodies)


def test_async_summaries_chunk_the_same_way() -> None:
    """The async path with an async client sends the same chunks as the sync one."""
    sync_api, async_api = RuleAPI(first_topic), RuleAPI(first_topic)
    request = summary_request(long_chat())
    expected = AnthropicSummarizer(sync_api.client()).summarize(request)
    update = asyncio.run(AnthropicSummarizer(async_api.async_client()).asummarize(request))
    assert update.add == expected.add
    assert async_api.bodies == sync_api.bodies


def test_a_later_chunk_sees_the_earlier_chunks_items() -> None:
    """The second chunk's prompt holds the item the first chunk added (no duplicates)."""
    api = RuleAPI(first_topic)
    AnthropicSummarizer(api.client()).summarize(summary_request(long_chat()))
    second = api.bodies[1]["messages"][0]["content"]
    assert f"The talk covered {WORDS[0]}." in second


def test_a_small_segment_is_one_call_without_chunks() -> None:
    """Below the threshold nothing changes: one call, no chunks recorded."""
    api = RuleAPI(rule)
    update = AnthropicSummarizer(api.client()).summarize(trip())
    assert len(api.bodies) == 1
    assert update.usage is not None
    assert update.usage.chunks == ()


def test_tool_calls_stay_with_their_results_across_chunks() -> None:
    """A chunk never starts with a tool result: the cut moves back to keep the call with it."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug."}]
    for n in range(30):
        call = {"type": "tool_use", "id": f"t{n}", "name": "read", "input": {"path": "a.py"}}
        messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "x = 1\n" * 900}
        messages.append({"role": "user", "content": [result]})
    request = summary_request(messages)
    costs = [40 if n % 2 else 2_000 for n in range(len(messages))]  # results are the big ones
    bounds = chunk_bounds(request.segment, costs, 5_000)
    assert len(bounds) > 1
    for start, end in bounds:
        assert start < end
        first = messages[start]["content"]
        assert isinstance(first, str) or first[0]["type"] != "tool_result"
    assert bounds[0][0] == 0
    assert bounds[-1][1] == len(messages)


def test_an_item_a_later_chunk_retires_is_not_added_and_prior_retirements_carry() -> None:
    """Combined chunks retire prior items once and drop items a later chunk retired."""
    prior = Summary(open_threads=(Item(id="O1", text="Which hotel?", source=(0, 1)),))

    def answer(body: Body) -> dict[str, Any]:
        prompt = body["messages"][0]["content"]
        if f"Topic {WORDS[0]}." in prompt:  # the first chunk
            return {"established_facts": ["The talk began."]}
        return {
            "retire": [
                {"id": "F1", "reason": "superseded: the talk went on"},
                {"id": "O1", "reason": "answered: Casa Alfama"},
            ],
            "established_facts": ["The talk went on."],
        }

    api = RuleAPI(answer)
    update = AnthropicSummarizer(api.client()).summarize(summary_request(long_chat(), prior=prior))
    assert len(api.bodies) >= 2
    texts = [getattr(f, "text", f) for f in update.add["established_facts"]]
    assert "The talk began." not in texts
    assert texts.count("The talk went on.") == 1
    assert update.retire == (Retirement(id="O1", reason="answered: Casa Alfama"),)


def test_bedrock_and_vertex_ids_get_their_familys_shape() -> None:
    """Platform ids resolve by their claude- part; the shape lookup never fails."""
    assert shape_for("us.anthropic.claude-haiku-5-5") == shape_for("claude-haiku-5-5")
    assert shape_for("claude-opus-5-5@20260922") == shape_for("claude-opus-5-5")
    assert shape_for(None).tool_choice == "auto"


# -- quiet logging -------------------------------------------------------------------------------


def test_instructor_errors_handled_by_a_fallback_stay_off_stderr(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Instructor's ERROR lines about a failure the fallback handled are WARNING at most."""
    api = RuleAPI(lambda _: {"constraints": "not a list"})
    fallback = FallbackSummarizer(
        AnthropicSummarizer(api.client(), model="claude-haiku-5-5", max_retries=0),
        ExtractiveSummarizer(),
    )
    with caplog.at_level(logging.DEBUG):
        update = fallback.summarize(trip())
    assert update.degraded is not None
    instructor_records = [r for r in caplog.records if r.name.startswith("instructor")]
    assert instructor_records
    assert all(r.levelno <= logging.WARNING for r in instructor_records)
    assert "ERROR" not in capfd.readouterr().err
