"""Agent tools (compact_conversation, recall) and the retry after a prompt-too-long error.

Providers are real ``anthropic.Anthropic`` / ``openai.OpenAI`` clients over
``httpx2.MockTransport`` answering with the APIs' own JSON; the summarizer is a
`progsum.testing` fake.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st
from pydantic_core import to_jsonable_python

from progsum import (
    Compactor,
    ConversationState,
    Policy,
    SummaryRequest,
    SummaryUpdate,
    render_anthropic,
    render_openai,
)
from progsum.errors import ArchiveError, ConfigError, SummarizerError
from progsum.messages._transcript import CLIP_MARKER
from progsum.store._archive import ArchivedMessage, MemoryArchive
from progsum.summarizers import FallbackSummarizer
from progsum.summary._update import Retirement
from progsum.testing import FunctionSummarizer, QueuedSummarizer
from progsum.tools._conversation import (
    COMPACT_TOOL,
    MAX_MAX_CHARS,
    MIN_MAX_CHARS,
    RECALL_TOOL,
    ConversationTools,
    ToolResult,
    aretry_on_overflow,
    on_prompt_too_long,
    prompt_too_long,
    retry_on_overflow,
)
from tests.conftest import fixed_clock
from tests.conversations import TRIP_RULE, airline_support, coding_session, spelled, trip_planning
from tests.strategies import Conversation, anthropic_conversations, openai_conversations
from tests.test_properties import (
    FEED_SETTINGS,
    check_anthropic_pairing,
    check_anthropic_valid,
    check_openai_pairing,
    policies,
    restore_cleared,
)

Body = dict[str, Any]
POLICY = Policy(trigger=("fraction", 0.65), context_window=4_000, keep=("messages", 4))
ANTHROPIC_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MODEL = "claude-sonnet-5-5"


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """The trip's rule as a constraint, and one fact naming the folded range."""
    segment = request.segment
    return SummaryUpdate(
        add={
            "constraints": [TRIP_RULE],
            "established_facts": [
                f"Messages {spelled(segment.start)} to {spelled(segment.end - 1)} were planning."
            ],
        }
    )


def compactor(policy: Policy = POLICY, summarizer: object = None) -> Compactor[Any]:
    """A compactor with the `facts` summarizer and a fixed clock."""
    chosen = summarizer if summarizer is not None else FunctionSummarizer(facts)
    return Compactor(policy=policy, summarizer=chosen, clock=fixed_clock)  # type: ignore[arg-type]


def compacted_trip(days: int = 12, **state_options: Any) -> ConversationState[Any]:
    """The trip conversation compacted once, by force."""
    state: ConversationState[Any] = ConversationState(trip_planning(days), **state_options)
    return compactor().compact(state, force=True)


def numbers_shown(text: str) -> list[int]:
    """The message numbers of the ``<message index=…>`` blocks in a recall answer."""
    return [int(n) for n in re.findall(r'<message index="(\d+)"', text)]


# -- definitions ---------------------------------------------------------------------------------


def test_anthropic_definitions_have_the_messages_api_shape() -> None:
    """Each Anthropic definition has a valid name, a description and an object input_schema."""
    definitions = ConversationTools(compactor()).anthropic()
    assert [d["name"] for d in definitions] == [COMPACT_TOOL, RECALL_TOOL]
    for definition in definitions:
        assert set(definition) == {"name", "description", "input_schema"}
        assert ANTHROPIC_NAME.match(definition["name"])
        assert len(definition["description"]) > 100
        schema = definition["input_schema"]
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert ANTHROPIC_NAME.match(name)
            assert prop["type"] in ("string", "integer")
            assert prop["description"]
    json.dumps(definitions)  # plain JSON, ready to send


def test_openai_definitions_wrap_the_same_schema() -> None:
    """Each OpenAI definition is a function tool whose parameters are the Anthropic input_schema."""
    tools = ConversationTools(compactor())
    for plain, wrapped in zip(tools.anthropic(), tools.openai(), strict=True):
        assert set(wrapped) == {"type", "function"}
        assert wrapped["type"] == "function"
        assert wrapped["function"] == {
            "name": plain["name"],
            "description": plain["description"],
            "parameters": plain["input_schema"],
        }


def test_the_schema_lists_exactly_the_arguments_the_handler_accepts() -> None:
    """Every schema property is accepted by the handler, and nothing outside the schema is."""
    state = compacted_trip()
    tools = ConversationTools(compactor())
    (recall,) = [d for d in tools.anthropic() if d["name"] == RECALL_TOOL]
    properties = recall["input_schema"]["properties"]
    valid = {"item": "C1", "first": 3, "last": 4, "query": "Sintra", "max_chars": 2_000}
    assert set(properties) == set(valid)
    for name, value in valid.items():
        arguments = (
            {name: value} if name in ("item", "first", "query") else {"first": 3, name: value}
        )
        assert not tools.handle(state, RECALL_TOOL, arguments).is_error, name
    result = tools.handle(state, RECALL_TOOL, {"item": "C1", "limit": 3})
    assert result.is_error
    assert "'limit'" in result.content
    (compact,) = [d for d in tools.anthropic() if d["name"] == COMPACT_TOOL]
    assert compact["input_schema"]["properties"] == {}


# -- compact_conversation ------------------------------------------------------------------------


def test_below_half_the_trigger_the_tool_explains_and_changes_nothing() -> None:
    """Under half of the trigger: a message with the fill level and the eligibility point."""
    fake = QueuedSummarizer()
    engine = compactor(summarizer=fake)
    state = ConversationState(trip_planning(2))
    decision = engine.decide(state)
    assert decision.measured * 2 < decision.limit
    result = ConversationTools(engine).handle(state, COMPACT_TOOL, {})
    assert result.state is state
    assert not result.is_error
    assert result.content.startswith("Not compacted")
    assert f"{decision.measured:,} tokens" in result.content
    assert f"{decision.limit:,} tokens" in result.content
    assert f"{-(-decision.limit // 2):,} tokens" in result.content
    assert f"{decision.measured / decision.limit:.0%}" in result.content
    assert fake.requests == []


def test_above_half_the_trigger_the_tool_compacts_by_force() -> None:
    """Past half of the trigger (below it), the tool compacts and reports the event's figures."""
    engine = compactor()
    state = ConversationState(trip_planning(12))
    decision = engine.decide(state)
    assert decision.limit / 2 <= decision.measured < decision.limit
    result = ConversationTools(engine).handle(state, COMPACT_TOOL, "{}")
    assert not result.is_error
    assert result.state.cutoff > 0
    (event,) = result.state.events
    assert event.forced
    assert event.folded is not None
    assert event.merge is not None
    start, end = event.folded
    assert f"messages {start + 1}-{end}" in result.content
    assert f"from {event.tokens_before:,} to {event.tokens_after:,} tokens" in result.content
    assert (
        f"{len(event.merge.added)} items added ({', '.join(event.merge.added)})" in result.content
    )
    assert RECALL_TOOL in result.content


@pytest.mark.parametrize(("messages", "eligible"), [(9, False), (10, True)])
def test_eligibility_starts_exactly_at_half_the_trigger(messages: int, eligible: bool) -> None:
    """With a 20-message trigger the tool works from 10 messages, in the trigger's own unit."""
    policy = Policy(trigger=("messages", 20), keep=("messages", 2))
    state = ConversationState(trip_planning(6)[:messages])
    result = ConversationTools(compactor(policy)).handle(state, COMPACT_TOOL, None)
    assert (result.state.cutoff > 0) is eligible
    if not eligible:
        assert f"holds {messages} messages, 45% of the automatic" in result.content
        assert "available at 10 messages" in result.content


def test_eligible_fraction_is_configurable() -> None:
    """With eligible_fraction=0.9 the tool refuses where the default compacts, and says so."""
    state = ConversationState(trip_planning(12))
    tools = ConversationTools(compactor(), eligible_fraction=0.9, max_chars=8_000)
    result = tools.handle(state, COMPACT_TOOL, {})
    assert result.state is state
    assert "90% of the trigger" in result.content
    compact, recall = tools.anthropic()
    assert "at least 90% of the way to the point" in compact["description"]
    assert "(default 8,000)" in recall["input_schema"]["properties"]["max_chars"]["description"]
    default = ConversationTools(compactor()).anthropic()[0]["description"]
    assert "at least half way to the point" in default


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"eligible_fraction": 0}, "eligible_fraction=0 must be in (0, 1]"),
        ({"max_chars": 50}, "max_chars=50 must be between 1,000 and 20,000"),
    ],
)
def test_bad_configuration_is_a_config_error(options: dict[str, Any], expected: str) -> None:
    """Out-of-range options raise ConfigError naming the value, when the tools are built."""
    with pytest.raises(ConfigError) as caught:
        ConversationTools(compactor(), **options)
    assert expected in str(caught.value)
    with pytest.raises(ConfigError, match=r"is not a progsum\.Compactor"):
        ConversationTools(POLICY)  # type: ignore[arg-type]


def test_a_failing_summarizer_is_an_error_result_and_the_state_is_kept() -> None:
    """A summarizer failure becomes is_error with the reason; the old state comes back."""
    engine = compactor(summarizer=QueuedSummarizer(TimeoutError("read timed out")))
    state = ConversationState(trip_planning(12))
    result = ConversationTools(engine).handle(state, COMPACT_TOOL, {})
    assert result.is_error
    assert result.state is state
    assert "Compaction failed and the context is unchanged" in result.content
    assert "read timed out" in result.content


def test_a_degraded_compaction_says_a_fallback_wrote_the_notes() -> None:
    """When the fallback summarizer stepped in, the answer says so, with the event's reason."""
    chain = FallbackSummarizer(
        QueuedSummarizer(TimeoutError("read timed out")), FunctionSummarizer(facts)
    )
    result = ConversationTools(compactor(summarizer=chain)).handle(
        ConversationState(trip_planning(12)), COMPACT_TOOL, {}
    )
    (event,) = result.state.events
    assert event.degraded
    assert not result.is_error
    assert f"A fallback summarizer wrote them ({event.degraded_reason})." in result.content


def test_nothing_to_fold_is_reported_not_raised() -> None:
    """When the verbatim tail already covers everything, the answer says so and nothing folds."""
    policy = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 12))
    long_turns = [{"role": "user", "content": "Plan it. " + "Lisbon in May. " * 150}]
    long_turns += trip_planning(4)[1:]
    state = ConversationState(long_turns)
    result = ConversationTools(compactor(policy)).handle(state, COMPACT_TOOL, {})
    assert not result.is_error
    assert result.state.cutoff == 0
    assert result.content.startswith("Nothing was compacted: ")
    assert "nothing can be folded" in result.content


def test_async_handle_compacts_through_the_async_path() -> None:
    """The async handler compacts with acompact and answers like handle."""
    state = ConversationState(trip_planning(12))
    tools = ConversationTools(compactor())
    result = asyncio.run(tools.ahandle(state, COMPACT_TOOL, {}))
    assert result.state.cutoff > 0
    assert result.content == tools.handle(state, COMPACT_TOOL, {}).content
    bad = asyncio.run(tools.ahandle(state, RECALL_TOOL, {"first": 999}))
    assert bad.is_error


# -- recall from the log -------------------------------------------------------------------------


def test_recall_by_item_shows_the_messages_it_came_from() -> None:
    """An item id reads its source range; the messages that match it best come first."""
    state = compacted_trip()
    assert state.summary is not None
    constraint = state.summary.constraints[0]  # then C2, the budget sentence the ledger restored
    result = ConversationTools(compactor()).recall(state, item=constraint.id)
    assert not result.is_error
    assert result.state is state
    assert result.content.startswith(f"[{constraint.id}] Constraints (binding): {TRIP_RULE}")
    start, end = constraint.source
    shown = numbers_shown(result.content)
    assert shown
    assert all(start < n <= end for n in shown)
    assert 3 in shown  # message 3 states the rule
    assert TRIP_RULE in result.content


def test_recall_by_item_id_ignores_case() -> None:
    """'c1' finds C1."""
    state = compacted_trip()
    tools = ConversationTools(compactor())
    assert tools.recall(state, item="c1").content == tools.recall(state, item="C1").content


def test_recall_reads_a_retired_item_with_its_reason() -> None:
    """Tombstoned items are found too, labelled with the compaction and reason that retired them."""
    retire = Retirement(id="F1", reason="superseded by the final plan")
    fake = QueuedSummarizer(
        SummaryUpdate(add={"established_facts": ["Sintra is worth half a day."]}),
        SummaryUpdate(add={"decisions": ["Book Sintra on day 3."]}, retire=(retire,)),
    )
    engine = compactor(
        Policy(trigger=("fraction", 0.65), context_window=4_000, keep=("messages", 2)), fake
    )
    messages = trip_planning(12)
    state = engine.compact(ConversationState(messages[:14]), force=True)
    state = engine.compact(state.extend(messages[14:]), force=True)
    assert state.summary is not None
    assert [t.item.id for t in state.summary.retired] == ["F1"]
    result = ConversationTools(engine).recall(state, item="F1")
    assert result.content.startswith(
        "[F1] Established facts, retired by compaction 2 (superseded by the final plan): "
        "Sintra is worth half a day."
    )
    assert numbers_shown(result.content)


def test_recall_cannot_forge_message_markup() -> None:
    """Item text and queries holding a message tag are escaped like the messages themselves."""
    fake = QueuedSummarizer(SummaryUpdate(add={"established_facts": ["Close with </message>."]}))
    said = [
        {"role": "user", "content": "Close with </message>."},
        {"role": "assistant", "content": "OK."},
    ]
    messages = [*trip_planning(12)[:2], *said, *trip_planning(12)[2:]]
    state = compactor(summarizer=fake).compact(ConversationState(messages), force=True)
    tools = ConversationTools(compactor())
    by_item = tools.recall(state, item="F1").content
    assert by_item.startswith("[F1] Established facts: Close with &lt;/message>.")
    by_query = tools.recall(state, query="<message index=").content
    assert by_query.startswith("No compressed message contains '&lt;message index='")
    assert by_item.count("</message>") == len(numbers_shown(by_item))


def test_recall_by_range_uses_the_headers_numbering() -> None:
    """The first/last arguments are 1-based and inclusive, like the header's "Messages a-b"."""
    state = compacted_trip()
    match = re.search(r"Messages (\d+)\u2013(\d+)", state.header)
    assert match is not None
    first, last = int(match.group(1)), int(match.group(2))
    assert (first, last) == (state.head_end + 1, state.cutoff)
    result = ConversationTools(compactor()).recall(state, first=first, last=first + 2)
    assert numbers_shown(result.content) == [first, first + 1, first + 2]
    for number in range(first, first + 3):
        assert state.log[number - 1]["content"] in result.content


def test_recall_without_last_reads_on_to_the_end() -> None:
    """Given first alone, recall reads from there to the last message of the log."""
    state = compacted_trip()
    result = ConversationTools(compactor()).recall(state, first=len(state) - 1)
    assert numbers_shown(result.content) == [len(state) - 1, len(state)]


def test_recall_search_finds_compressed_messages_only() -> None:
    """A query matches folded messages, case-insensitively; the verbatim tail is not searched."""
    state = compacted_trip()
    folded = range(state.head_end, state.cutoff)
    expected = [i + 1 for i in folded if "cascais" in state.log[i]["content"].lower()]
    in_tail = [i for i in range(state.cutoff, len(state)) if "Cascais" in state.log[i]["content"]]
    assert expected
    assert in_tail
    result = ConversationTools(compactor()).recall(state, query="CASCAIS")
    assert numbers_shown(result.content) == expected
    assert result.content.startswith(f'{len(expected)} compressed messages contain "CASCAIS"')
    missing = ConversationTools(compactor()).recall(state, query="zebra crossing")
    assert not missing.is_error
    assert missing.content.startswith(
        f"No compressed message contains 'zebra crossing' (searched messages "
        f"{state.head_end + 1}-{state.cutoff}"
    )


@pytest.mark.parametrize("max_chars", [MIN_MAX_CHARS, 2_500, MAX_MAX_CHARS])
@pytest.mark.parametrize(
    "arguments",
    [{"first": 1}, {"item": "C1"}, {"query": "worth"}, {"first": 7, "last": 7}],
    ids=["range", "item", "search", "one-huge-message"],
)
def test_recall_answers_stay_within_max_chars(arguments: dict[str, Any], max_chars: int) -> None:
    """Whatever is asked, the answer fits max_chars, and clipping says how to read more."""
    messages = trip_planning(30)
    messages[6] = {
        "role": "user",
        "content": "What about Sintra? " + "Tell me everything. " * 3_000,
    }
    state = compactor().compact(ConversationState(messages), force=True)
    result = ConversationTools(compactor()).handle(
        state, RECALL_TOOL, {**arguments, "max_chars": max_chars}
    )
    assert not result.is_error
    assert len(result.content) <= max_chars
    if "[Shown: messages" in result.content or CLIP_MARKER.split("{")[0] in result.content:
        assert f"{RECALL_TOOL} " in result.content.rsplit("\n\n", 1)[-1]


def test_following_the_notes_pages_through_a_range_once() -> None:
    """Calling recall again as each note says shows every message of the range exactly once."""
    state = compacted_trip(30)
    tools = ConversationTools(compactor())
    seen: list[int] = []
    arguments: dict[str, Any] = {"first": 1, "max_chars": MIN_MAX_CHARS}
    for _ in range(100):
        content = tools.handle(state, RECALL_TOOL, arguments).content
        seen += numbers_shown(content)
        note = re.search(r"call recall with first=(\d+), last=(\d+)", content)
        if note is None:
            break
        arguments = {"first": int(note.group(1)), "last": int(note.group(2)), "max_chars": 1_000}
    assert seen == list(range(1, len(state) + 1))


def test_a_huge_tool_result_is_clipped_with_a_way_to_read_more() -> None:
    """A long tool result keeps its head and tail around the clip marker, and the note says how."""
    messages = coding_session(4)
    messages[2] = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01",
                "content": "FAILED test_total\n" + "trace line\n" * 5_000 + "1 failed, 41 passed",
            }
        ],
    }
    state = ConversationState(messages)
    result = ConversationTools(compactor()).recall(state, first=3, last=3)
    assert '<tool_result id="toolu_01">' in result.content
    assert "characters clipped" in result.content
    assert "FAILED test_total" in result.content
    assert "1 failed, 41 passed" in result.content
    assert "first=3, last=3 with max_chars=20,000" in result.content


def test_recall_renders_tool_calls_and_results_compactly() -> None:
    """Tool calls and results are tagged with their ids and names; thinking is left out."""
    state = ConversationState(coding_session(2))
    result = ConversationTools(compactor()).recall(state, first=2, last=3)
    assert '<tool_use id="toolu_01" name="bash">' in result.content
    assert '"command": "pytest tests/test_billing.py -q"' in result.content
    assert "[thinking omitted]" in result.content
    assert "Run the tests first." not in result.content


def test_recall_before_any_compaction() -> None:
    """No summary yet: an item id is an error saying so; a search says everything is in context."""
    state = ConversationState(trip_planning(3))
    tools = ConversationTools(compactor())
    by_item = tools.recall(state, item="C1")
    assert by_item.is_error
    assert "nothing has been compressed yet" in by_item.content
    by_query = tools.recall(state, query="Sintra")
    assert not by_query.is_error
    assert "every message is still in your context" in by_query.content


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        (
            RECALL_TOOL,
            {"item": "C9"},
            "there is no item 'C9'; the summary's item ids are C1, C2, F1",
        ),
        (
            RECALL_TOOL,
            {"first": 99},
            "first=99 is past the end; this conversation has messages 1-28",
        ),
        (RECALL_TOOL, {"first": 3, "last": 29}, "last=29 is past the end"),
        (RECALL_TOOL, {"first": 5, "last": 4}, "first=5 is after last=4"),
        (RECALL_TOOL, {"first": 0}, "first=0 is out of range; use 1 or more"),
        (RECALL_TOOL, {"first": 2.5}, "first=2.5 must be a whole number"),
        (RECALL_TOOL, {"first": True}, "first=True must be a whole number"),
        (RECALL_TOOL, {"query": "  "}, "query='  ' must be a non-empty string"),
        (RECALL_TOOL, {"query": "x" * 201}, "query is 201 characters long; use at most 200"),
        (
            RECALL_TOOL,
            {"first": 1, "max_chars": 50},
            "max_chars=50 is out of range; use 1,000 to 20,000",
        ),
        (RECALL_TOOL, {"item": "C1", "query": "x"}, "got both item and query"),
        (RECALL_TOOL, {}, "give exactly one of item, first (with an optional last) or query"),
        (RECALL_TOOL, {"last": 3}, "last was given without first"),
        (RECALL_TOOL, {"id": "C1"}, "recall has no argument 'id'; it accepts: item, first, last"),
        (RECALL_TOOL, '{"item": ', "are not valid JSON; pass a JSON object such as"),
        (RECALL_TOOL, "[1, 2]", "are not an object"),
        (
            COMPACT_TOOL,
            {"now": True},
            "compact_conversation has no argument 'now'; it accepts: none",
        ),
        ("compact", {}, "there is no tool 'compact' here; use one of compact_conversation, recall"),
    ],
    ids=lambda value: str(value)[:30],
)
def test_bad_calls_are_answered_with_an_error_naming_the_value(
    name: str, arguments: object, expected: str
) -> None:
    """Bad tool names and arguments give is_error results naming the bad value and valid ones."""
    state = compacted_trip()
    assert len(state) == 28
    result = ConversationTools(compactor()).handle(state, name, arguments)
    assert result.is_error
    assert result.state is state
    assert expected in result.content
    assert result.content.endswith("Nothing was changed.")


def test_numbers_given_as_strings_are_read() -> None:
    """Models sometimes send "3" for 3: digit strings are accepted for whole numbers."""
    state = compacted_trip()
    tools = ConversationTools(compactor())
    as_text = tools.handle(state, RECALL_TOOL, '{"first": "3", "last": "4"}')
    assert as_text.content == tools.recall(state, first=3, last=4).content


# -- recall from an archive ----------------------------------------------------------------------


class RecordingArchive(MemoryArchive):
    """A MemoryArchive that records the reads made of it."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[str, object]] = []

    def get(self, thread_id: str, start: int = 0, end: int | None = None) -> list[ArchivedMessage]:
        """Record and read."""
        self.reads.append(("get", (thread_id, start, end)))
        return super().get(thread_id, start, end)

    def search(self, thread_id: str, text: str, *, limit: int = 20) -> list[ArchivedMessage]:
        """Record and search."""
        self.reads.append(("search", (thread_id, text)))
        return super().search(thread_id, text, limit=limit)


def archived_trip(archive: MemoryArchive) -> ConversationState[Any]:
    """The compacted trip with its folded segment written to ``archive`` as the engine does."""
    state = compacted_trip(thread_id="trip-42")
    (event,) = state.events
    assert event.folded is not None
    start, end = event.folded
    archive.put("trip-42", start, state.log[start:end], event)
    return state


@pytest.mark.parametrize(
    "arguments",
    [{"item": "C1"}, {"first": 2, "last": 9}, {"first": 20}, {"query": "sintra"}],
    ids=["item", "folded-range", "range-into-the-tail", "search"],
)
def test_recall_reads_the_archive_and_answers_like_the_log(arguments: dict[str, Any]) -> None:
    """With an archive the tool reads it first and gives the answer the log gives."""
    archive = RecordingArchive()
    state = archived_trip(archive)
    from_archive = ConversationTools(compactor(), archive).handle(state, RECALL_TOOL, arguments)
    from_log = ConversationTools(compactor()).handle(state, RECALL_TOOL, arguments)
    assert archive.reads
    assert {str(where[0]) for _, where in archive.reads} == {"trip-42"}  # type: ignore[index]
    assert from_archive.content == from_log.content


def test_archived_messages_are_preferred_over_the_log() -> None:
    """Where the archive holds a message, that copy is shown (the log fills the gaps)."""
    archive = MemoryArchive()
    state = archived_trip(archive)
    marker = {"role": "user", "content": "ARCHIVED COPY of message 5"}
    event = state.events[0]
    other = MemoryArchive()
    other.put("trip-42", 4, [marker], event)
    other.put("trip-42", 5, state.log[5:6], event)
    result = ConversationTools(compactor(), other).recall(state, first=5, last=7)
    assert "ARCHIVED COPY of message 5" in result.content
    assert state.log[6]["content"] in result.content  # number 7 came from the log


def test_search_reaches_archived_messages_and_ignores_json_keys() -> None:
    """Archive hits are filtered by visible text, so 'role' does not match every message."""
    archive = MemoryArchive()
    state = archived_trip(archive)
    tools = ConversationTools(compactor(), archive)
    assert tools.recall(state, query="role").content.startswith("No compressed message")
    assert numbers_shown(tools.recall(state, query="Alfama").content)


def test_an_unreadable_archive_falls_back_to_the_log() -> None:
    """An ArchiveError is noted in the answer and the log is read instead."""

    class BrokenArchive(MemoryArchive):
        def get(
            self,
            thread_id: str,
            start: int = 0,  # noqa: ARG002 - the Archive signature
            end: int | None = None,  # noqa: ARG002 - the Archive signature
        ) -> list[ArchivedMessage]:
            raise ArchiveError(f"database is locked (thread {thread_id})")

    state = archived_trip(MemoryArchive())
    result = ConversationTools(compactor(), BrokenArchive()).recall(state, first=3, last=3)
    assert not result.is_error
    assert result.content.startswith("(The archive could not be read, so the log was used: ")
    assert TRIP_RULE in result.content


def test_a_state_without_thread_id_is_read_from_its_log() -> None:
    """No thread id, no archive reads: the log has every message."""
    archive = RecordingArchive()
    state = compacted_trip()
    result = ConversationTools(compactor(), archive).recall(state, query="Sintra")
    assert archive.reads == []
    assert numbers_shown(result.content)


# -- a full agent loop, Anthropic ----------------------------------------------------------------


class Provider:
    """An HTTP handler answering with scripted JSON bodies in order; records the requests."""

    def __init__(self, *replies: tuple[int, Body]) -> None:
        self.replies = list(replies)
        self.bodies: list[Body] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Record the request body and answer with the next reply (the last one repeats)."""
        self.bodies.append(json.loads(request.content))
        status, body = self.replies[min(len(self.bodies), len(self.replies)) - 1]
        return httpx2.Response(status, json=body)

    def anthropic_client(self) -> anthropic.Anthropic:
        """A real Anthropic client over this handler."""
        http = httpx2.Client(transport=httpx2.MockTransport(self))
        return anthropic.Anthropic(api_key="sk-test", max_retries=0, http_client=http)

    def async_anthropic_client(self) -> anthropic.AsyncAnthropic:
        """A real async Anthropic client over this handler."""
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self))
        return anthropic.AsyncAnthropic(api_key="sk-test", max_retries=0, http_client=http)

    def openai_client(self) -> openai.OpenAI:
        """A real OpenAI client over this handler."""
        http = httpx2.Client(transport=httpx2.MockTransport(self))
        return openai.OpenAI(api_key="sk-test", max_retries=0, http_client=http)


def claude_says(*content: Body, stop: str = "tool_use") -> tuple[int, Body]:
    """A Messages API reply with the given content blocks."""
    return 200, {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": list(content),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 900, "output_tokens": 40},
    }


def tool_use(call_id: str, name: str, arguments: Body) -> Body:
    """An Anthropic tool_use block."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def run_anthropic_turn(
    client: anthropic.Anthropic, tools: ConversationTools[Any], state: ConversationState[Any]
) -> ConversationState[Any]:
    """One agent turn: call the model, run every tool call, append the results in one message."""
    system, messages = render_anthropic(state, system="You plan trips.")
    request: dict[str, Any] = {"system": system, "messages": messages, "tools": tools.anthropic()}
    reply = client.messages.create(model=MODEL, max_tokens=1024, **request)
    state = state.append({"role": "assistant", "content": reply.content})
    blocks = []
    for block in reply.content:
        if block.type == "tool_use" and block.name in tools.names:
            result = tools.handle(state, block.name, block.input)
            state = result.state
            blocks.append(result.anthropic_block(block.id))
    return state.append({"role": "user", "content": blocks}) if blocks else state


@pytest.mark.parametrize("keep", [1, 4])
def test_anthropic_agent_loop_round_trip(keep: int) -> None:
    """Claude calls compact_conversation, then recall twice in parallel; every request is valid."""
    provider = Provider(
        claude_says(
            {"type": "text", "text": "The plan is long; let me compact first."},
            tool_use("toolu_c1", COMPACT_TOOL, {}),
        ),
        claude_says(
            {"type": "text", "text": "Checking the rules."},
            tool_use("toolu_r1", RECALL_TOOL, {"item": "C1"}),
            tool_use("toolu_r2", RECALL_TOOL, {"query": "budget", "max_chars": 1_500}),
        ),
        claude_says({"type": "text", "text": "No flights before 9am, as agreed."}, stop="end_turn"),
    )
    client = provider.anthropic_client()
    engine = compactor(
        Policy(trigger=("fraction", 0.65), context_window=4_000, keep=("messages", keep))
    )
    tools = ConversationTools(engine)
    state: ConversationState[Any] = ConversationState(trip_planning(12))
    for _ in range(3):
        state = run_anthropic_turn(client, tools, state)

    assert len(provider.bodies) == 3
    assert state.cutoff > 0
    for body in provider.bodies:
        assert [t["name"] for t in body["tools"]] == [COMPACT_TOOL, RECALL_TOOL]
        check_anthropic_pairing(body["messages"])
    second = provider.bodies[1]["messages"]
    assert second[-2]["content"][1]["id"] == "toolu_c1"  # the call survived its own compaction
    assert second[-1]["content"][0]["tool_use_id"] == "toolu_c1"
    assert "Compacted: messages 2-" in second[-1]["content"][0]["content"]
    assert "# Earlier conversation (compressed)" in provider.bodies[1]["system"][1]["text"]
    answers = provider.bodies[2]["messages"][-1]["content"]
    assert [a["tool_use_id"] for a in answers] == ["toolu_r1", "toolu_r2"]
    assert TRIP_RULE in answers[0]["content"]
    assert len(answers[1]["content"]) <= 1_500
    _, messages = render_anthropic(state)
    check_anthropic_pairing(to_jsonable_python(messages))  # the SDK's blocks, as sent


def test_anthropic_error_results_carry_is_error() -> None:
    """An invalid call's tool_result block has is_error: true; a good one has no is_error key."""
    state = compacted_trip()
    tools = ConversationTools(compactor())
    bad = tools.handle(state, RECALL_TOOL, {"item": "Z7"})
    good = tools.handle(state, RECALL_TOOL, {"item": "C1"})
    assert bad.anthropic_block("toolu_9")["is_error"] is True
    assert "is_error" not in good.anthropic_block("toolu_9")
    assert bad.anthropic_message("toolu_9") == {
        "role": "user",
        "content": [bad.anthropic_block("toolu_9")],
    }


def test_compaction_keeps_a_thinking_tool_turn_whole() -> None:
    """A coding agent (thinking + parallel calls) compacting mid-turn still renders validly."""
    engine = compactor(
        Policy(trigger=("fraction", 0.65), context_window=8_000, keep=("messages", 1))
    )
    tools = ConversationTools(engine)
    state = ConversationState(coding_session(6)[:-2])
    call = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Context is filling up.", "signature": "sig-c"},
            tool_use("toolu_c9", COMPACT_TOOL, {}),
        ],
    }
    state = state.append(call)
    result = tools.handle(state, COMPACT_TOOL, {})
    assert result.state.cutoff > 0
    after = result.state.append(result.anthropic_message("toolu_c9"))
    _, messages = render_anthropic(after, thinking="keep")  # rules T1-T6
    assert messages[-2] is call
    check_anthropic_pairing(messages)
    check_anthropic_valid(messages, after.log)


FAILED_RESULT: Body = {
    "type": "tool_result",
    "tool_use_id": "toolu_00",
    "content": "",
    "is_error": True,
}


def test_a_pinned_opening_round_with_cleared_input_counts_as_the_turns_opener() -> None:
    """Found by Hypothesis: the pinned round's cleared copy still opens the thinking turn."""
    big = "000000 worker[0] GET /api/v2/items " * 60
    messages: list[Body] = [
        {"role": "user", "content": "Task: tidy the repository. Never spend more than $100."},
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "EqQBCkYIARgCKkB0redacted"},
                tool_use("toolu_00", "bash", {"path": "/repo/gen_1.py", "content": big}),
            ],
        },
        {"role": "user", "content": [FAILED_RESULT]},
        {
            "role": "assistant",
            "content": [tool_use("toolu_00", "bash", {"path": "/repo/gen_3.py", "content": big})],
        },
        {"role": "user", "content": [FAILED_RESULT]},
    ]
    policy = Policy(context_window=2_157, trigger=("fraction", 0.82), keep=("messages", 1))
    tools = ConversationTools(compactor(policy), eligible_fraction=0.01)
    blocks = [
        tool_use("toolu_p0", RECALL_TOOL, {"first": 1, "max_chars": 1_000}),
        tool_use("toolu_p1", COMPACT_TOOL, {}),
    ]
    state: ConversationState[Any] = ConversationState(messages).append(
        {"role": "assistant", "content": blocks}
    )
    answers = []
    for block in blocks:
        result = tools.handle(state, block["name"], block["input"])
        state = result.state
        answers.append(result.anthropic_block(block["id"]))
    state = state.append({"role": "user", "content": answers})
    assert state.cutoff == 5
    assert state.pinned == (1, 3)
    assert any(mark.at == 1 for mark in state.cleared)  # the pinned call's input is cleared
    _, rendered = render_anthropic(state, thinking="keep")  # rules T1-T6
    check_anthropic_pairing(rendered)
    check_anthropic_valid(restore_cleared(rendered, state), state.log)


@FEED_SETTINGS
@given(
    conversation=st.one_of(anthropic_conversations(), openai_conversations()),
    policy=policies(),
    thinking=st.booleans(),
    compact_first=st.booleans(),
)
def test_a_compacting_tool_call_is_always_rendered_with_its_result(
    conversation: Conversation, policy: Policy, thinking: bool, compact_first: bool
) -> None:
    """Any conversation, any policy: the call that compacted and its result render together."""
    assume(not conversation.pending)
    state: ConversationState[Any] = ConversationState(conversation.messages)
    if state.infos[-1].role == "assistant":
        state = state.append({"role": "user", "content": "Go on."})
    tools = ConversationTools(compactor(policy), eligible_fraction=0.01)
    calls = [(COMPACT_TOOL, {}), (RECALL_TOOL, {"first": 1, "max_chars": 1_000})]
    calls = calls if compact_first else calls[::-1]
    if conversation.format == "anthropic":
        blocks = [
            tool_use(f"toolu_p{k}", name, arguments) for k, (name, arguments) in enumerate(calls)
        ]
        if thinking:
            blocks.insert(0, {"type": "thinking", "thinking": "Compact.", "signature": "s"})
        call: Body = {"role": "assistant", "content": blocks}
        state = state.append(call)
        answers = []
        for block in blocks[1:] if thinking else blocks:
            result = tools.handle(state, block["name"], block["input"])
            state = result.state
            answers.append(result.anthropic_block(block["id"]))
        state = state.append({"role": "user", "content": answers})
        _, messages = render_anthropic(state, thinking="keep")  # rules T1-T6
        check_anthropic_pairing(messages)
        check_anthropic_valid(restore_cleared(messages, state), state.log)
    else:
        call = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_p{k}",
                    "type": "function",
                    "function": {"name": n, "arguments": json.dumps(a)},
                }
                for k, (n, a) in enumerate(calls)
            ],
        }
        state = state.append(call)
        for tool_call in call["tool_calls"]:
            function = tool_call["function"]
            result = tools.handle(state, function["name"], function["arguments"])
            state = result.state.append(result.openai_message(tool_call["id"]))
        messages = render_openai(state)
        check_openai_pairing(messages)
    assert any(message is call for message in messages)
    assert messages[-1] is state.log[-1]
    event(f"compacted: {state.cutoff > 0}")


# -- a full agent loop, OpenAI -------------------------------------------------------------------


def gpt_says(*calls: tuple[str, str, str], text: str | None = None) -> tuple[int, Body]:
    """A Chat Completions reply making the given (id, name, JSON arguments) calls."""
    message: Body = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    return 200, {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_767_000_000,
        "model": "gpt-5-mini",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930},
    }


def test_openai_agent_loop_round_trip() -> None:
    """GPT calls compact_conversation and recall in parallel (JSON-string arguments); all valid."""
    provider = Provider(
        gpt_says(
            ("call_c", COMPACT_TOOL, "{}"),
            ("call_r", RECALL_TOOL, '{"query": "NO6JO3", "max_chars": 2000}'),
        ),
        gpt_says(("call_bad", RECALL_TOOL, '{"item": "D99"}')),
        gpt_says(text="Searching direct flights after 11am, at most $200 extra."),
    )
    client = provider.openai_client()
    engine = compactor(
        Policy(trigger=("fraction", 0.65), context_window=4_000, keep=("messages", 2))
    )
    tools = ConversationTools(engine)
    state: ConversationState[Any] = ConversationState(airline_support(6))
    for _ in range(3):
        request: dict[str, Any] = {"messages": render_openai(state), "tools": tools.openai()}
        reply = client.chat.completions.create(model="gpt-5-mini", **request)
        message = reply.choices[0].message
        state = state.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or ():
            assert call.type == "function"
            result = tools.handle(state, call.function.name, call.function.arguments)
            state = result.state.append(result.openai_message(call.id))

    assert len(provider.bodies) == 3
    assert state.cutoff > 0
    for body in provider.bodies:
        assert body["tools"] == tools.openai()
        check_openai_pairing(body["messages"])
    second = provider.bodies[1]["messages"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in second[-2:]] == ["call_c", "call_r"]
    assert second[-2]["content"].startswith("Compacted: ")
    assert "NO6JO3" in second[-1]["content"]
    assert any(m["role"] == "system" and "# Earlier conversation" in m["content"] for m in second)
    third = provider.bodies[2]["messages"]
    assert "there is no item 'D99'" in third[-1]["content"]
    check_openai_pairing(render_openai(state))


# -- context overflow ----------------------------------------------------------------------------


def too_long(tokens: int, limit: int = 200_000) -> tuple[int, Body]:
    """Anthropic's actual 400 for a prompt over the window."""
    return 400, {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: {tokens} tokens > {limit} maximum",
        },
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }


def openai_too_long(tokens: int, limit: int = 128_000) -> tuple[int, Body]:
    """OpenAI's actual 400 context_length_exceeded body."""
    return 400, {
        "error": {
            "message": (
                f"This model's maximum context length is {limit} tokens. However, your "
                f"messages resulted in {tokens} tokens. Please reduce the length of the messages."
            ),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def sender(client: anthropic.Anthropic) -> Callable[[tuple[Any, Any]], anthropic.types.Message]:
    """Send a rendered (system, messages) pair."""

    def send(request: tuple[Any, Any]) -> anthropic.types.Message:
        system, messages = request
        return client.messages.create(model=MODEL, max_tokens=512, system=system, messages=messages)

    return send


def render(state: ConversationState[Any]) -> tuple[Any, Any]:
    """The Anthropic view with a system prompt."""
    return render_anthropic(state, system="You plan trips.")


def overflow_error(*replies: tuple[int, Body]) -> anthropic.BadRequestError:
    """The BadRequestError a real client raises for the first reply."""
    client = Provider(*replies).anthropic_client()
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    return caught.value


def test_prompt_too_long_reads_both_providers_errors() -> None:
    """Anthropic and OpenAI SDK errors are recognised by shape, with the counts they state."""
    found = prompt_too_long(overflow_error(too_long(210_012)))
    assert found is not None
    assert (found.tokens, found.limit) == (210_012, 200_000)
    client = Provider(openai_too_long(130_532)).openai_client()
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="gpt-5-mini", messages=[{"role": "user", "content": "hi"}]
        )
    found = prompt_too_long(caught.value)
    assert found is not None
    assert (found.tokens, found.limit) == (130_532, 128_000)
    assert "resulted in 130532 tokens" in found.message


def test_prompt_too_long_tells_other_errors_apart() -> None:
    """Rate limits, other 400s and overloads are not overflows; wrapped overflows are found."""
    rate_limited = (
        429,
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
    )
    other = (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "max_tokens: 100000 > 64000, which is the maximum allowed",
            },
        },
    )
    both = (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "input length and `max_tokens` exceed context limit: 187254 + 20000 "
                "> 200000, decrease input length or `max_tokens` and try again",
            },
        },
    )
    for reply in (other,):
        assert prompt_too_long(overflow_error(reply)) is None
    client = Provider(rate_limited).anthropic_client()
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert prompt_too_long(caught.value) is None
    found = prompt_too_long(overflow_error(both))
    assert found is not None
    assert (found.tokens, found.limit) == (187_254, 200_000)
    wrapped = RuntimeError("agent step failed")
    wrapped.__cause__ = overflow_error(too_long(5_000))
    assert prompt_too_long(wrapped) is not None
    assert prompt_too_long(ValueError("prompt is too long")) is not None  # no status: text decides
    assert prompt_too_long(ValueError("litellm.ContextWindowExceededError: ...")) is not None
    assert prompt_too_long(ValueError("the context was fine")) is None


class ContextLengthExceededError(Exception):
    """An error shaped like openai.BadRequestError: status_code, code and body."""

    def __init__(self) -> None:
        super().__init__("Error code: 400")
        self.status_code = 400
        self.code = "context_length_exceeded"
        self.body = {"message": "Your input exceeds the context window of this model."}


def test_duck_typed_openai_shape_is_recognised() -> None:
    """Any exception with status_code 400 and code context_length_exceeded is an overflow."""
    found = prompt_too_long(ContextLengthExceededError())
    assert found is not None
    assert found.tokens is None
    assert found.message == "Your input exceeds the context window of this model."


def test_retry_on_overflow_compacts_once_and_retries() -> None:
    """A first overflow: one forced compaction, anchored on the provider's count, then success."""
    fake = FunctionSummarizer(facts)
    engine = compactor(summarizer=fake)
    state = ConversationState(trip_planning(12))
    provider_count = engine.decide(state).tokens + 400
    provider = Provider(
        too_long(provider_count, 2_000), claude_says({"type": "text", "text": "Done."})
    )
    new_state, reply = retry_on_overflow(
        sender(provider.anthropic_client()), state, engine, render=render
    )
    assert reply.content[0].type == "text"
    assert len(provider.bodies) == 2
    assert len(fake.requests) == 1
    (event,) = new_state.events
    assert event.forced
    assert event.tokens_before == provider_count  # anchored on what the provider counted
    assert len(provider.bodies[1]["messages"]) < len(provider.bodies[0]["messages"])
    assert provider.bodies[1]["system"][0]["text"] == "You plan trips."
    check_anthropic_pairing(provider.bodies[1]["messages"])


def test_a_second_overflow_raises_the_providers_error() -> None:
    """Overflowing again after the forced compaction re-raises the SDK error, noted; no loop."""
    fake = FunctionSummarizer(facts)
    engine = compactor(summarizer=fake)
    state = ConversationState(trip_planning(12))
    provider = Provider(too_long(250_000))
    with pytest.raises(anthropic.BadRequestError) as caught:
        retry_on_overflow(sender(provider.anthropic_client()), state, engine, render=render)
    assert len(provider.bodies) == 2
    assert len(fake.requests) == 1
    notes = "\n".join(caught.value.__notes__)
    assert "progsum: the prompt is too long" in notes
    assert "compacted once" in notes


def test_on_prompt_too_long_refuses_the_same_state_twice() -> None:
    """The state it returns is marked: a second overflow for it re-raises that very error."""
    engine = compactor()
    state = ConversationState(trip_planning(12))
    first = overflow_error(too_long(3_000, 2_000))
    compacted, request = on_prompt_too_long(first, state, engine, render=render)
    assert compacted.cutoff > 0
    assert request == render(compacted)
    second = overflow_error(too_long(2_500, 2_000))
    with pytest.raises(anthropic.BadRequestError) as caught:
        on_prompt_too_long(second, compacted, engine, render=render)
    assert caught.value is second
    assert "already compacted by force" in "\n".join(second.__notes__)
    assert compacted.events == compacted.events[:1]


def test_an_overflow_that_cannot_be_folded_is_raised_at_once() -> None:
    """If the forced compaction folds nothing, the error is raised with the stall's reason."""
    policy = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 40))
    fake = FunctionSummarizer(facts)
    state = ConversationState(trip_planning(12)[:2])  # the task and one reply: nothing to fold
    error = overflow_error(too_long(9_000, 2_000))
    with pytest.raises(anthropic.BadRequestError) as caught:
        on_prompt_too_long(error, state, compactor(policy, fake), render=render)
    assert caught.value is error
    assert "a forced compaction folded nothing" in "\n".join(error.__notes__)
    assert fake.requests == []


def test_other_errors_pass_through_untouched() -> None:
    """A non-overflow error is re-raised as it is, with no compaction and no note."""
    fake = FunctionSummarizer(facts)
    provider = Provider(
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    )
    state = ConversationState(trip_planning(12))
    with pytest.raises(anthropic.InternalServerError) as caught:
        retry_on_overflow(
            sender(provider.anthropic_client()), state, compactor(summarizer=fake), render=render
        )
    assert fake.requests == []
    assert not getattr(caught.value, "__notes__", [])
    with pytest.raises(anthropic.InternalServerError):
        on_prompt_too_long(caught.value, state, compactor(), render=render)


def test_summarizer_failure_during_overflow_is_a_summarizer_error() -> None:
    """A failing summarizer surfaces as SummarizerError; the caller's state is still valid."""
    engine = compactor(summarizer=QueuedSummarizer(TimeoutError("read timed out")))
    state = ConversationState(trip_planning(12))
    with pytest.raises(SummarizerError, match="read timed out"):
        on_prompt_too_long(overflow_error(too_long(3_000, 2_000)), state, engine, render=render)
    assert state.cutoff == 0


def test_openai_overflow_retry_with_render_openai() -> None:
    """The OpenAI SDK's context_length_exceeded triggers the same single retry."""
    provider = Provider(openai_too_long(9_000, 4_000), gpt_says(text="Found HAT069."))
    client = provider.openai_client()
    state = ConversationState(airline_support(6))

    def send(messages: list[Any]) -> Any:
        return client.chat.completions.create(model="gpt-5-mini", messages=messages)

    new_state, reply = retry_on_overflow(send, state, compactor(), render=render_openai)
    assert reply.choices[0].message.content == "Found HAT069."
    assert new_state.cutoff > 0
    assert len(provider.bodies) == 2
    check_openai_pairing(provider.bodies[1]["messages"])


def test_async_retry_on_overflow() -> None:
    """aretry_on_overflow awaits the send and compacts through acompact."""
    provider = Provider(too_long(3_000, 2_000), claude_says({"type": "text", "text": "Done."}))
    client = provider.async_anthropic_client()

    async def send(request: tuple[Any, Any]) -> anthropic.types.Message:
        system, messages = request
        return await client.messages.create(
            model=MODEL, max_tokens=512, system=system, messages=messages
        )

    state = ConversationState(trip_planning(12))
    new_state, reply = asyncio.run(aretry_on_overflow(send, state, compactor(), render=render))
    assert reply.content[0].type == "text"
    assert new_state.cutoff > 0
    assert len(provider.bodies) == 2


def test_tool_result_helpers_keep_the_content() -> None:
    """The OpenAI tool message and Anthropic block carry the content and the call id."""
    state = ConversationState(trip_planning(1))
    result: ToolResult[Any] = ToolResult(state, "42 messages.")
    assert result.openai_message("call_1") == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "42 messages.",
    }
    assert result.anthropic_block("toolu_1") == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "42 messages.",
    }


def test_recall_reads_the_compactors_archive_by_default() -> None:
    """Without an archive argument the tools use the one the compactor writes to."""
    archive = MemoryArchive()
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=100_000, keep=("messages", 2)),
        summarizer=QueuedSummarizer(SummaryUpdate(add={"constraints": ["Budget: $3,000."]})),
        archive=archive,
        reduction=None,
    )
    assert ConversationTools(compactor).archive is archive
