"""The extractive pass (prohibitions, obligations, questions, values) and the guards built on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from progsum import BaseSummary, Items, Summary, summary_field
from progsum.contract._guards import (
    constraint_field,
    covers,
    uncovered_prohibitions,
    unsupported_values,
)
from progsum.judge._extract import Extraction, Statement, message_text
from progsum.judge._seam import sentences
from progsum.judge._segment import MAX_SENTENCE
from progsum.summary._schema import spec_of
from progsum.testing import summary_request

Message = dict[str, Any]


def extraction_of(*messages: Message, start: int = 0) -> Extraction:
    """The extractive pass over ``messages`` as one segment starting at log index ``start``."""
    return summary_request(list(messages), start=start).extraction


def user(text: str) -> Message:
    """A user message."""
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    """An assistant message."""
    return {"role": "assistant", "content": text}


def prohibitions(text: str) -> list[str]:
    """The prohibitions the pass finds in one user message."""
    return [s.text for s in extraction_of(user(text)).prohibitions]


def obligations(text: str) -> list[str]:
    """The obligations the pass finds in one user message."""
    return [s.text for s in extraction_of(user(text)).obligations]


# -- sentences and message text ------------------------------------------------------------------


def test_sentences_split_on_punctuation_and_lines_and_collapse_whitespace() -> None:
    """Sentences end at . ! ? or a line break; bullets and inner runs of whitespace go."""
    text = "Book the  Alfama hotel. Is it free?\n- Pay by card!\n\n*   Budget $3,000"
    assert list(sentences(text)) == [
        "Book the Alfama hotel.",
        "Is it free?",
        "Pay by card!",
        "Budget $3,000",
    ]


def test_sentences_skip_pasted_walls_of_text() -> None:
    """A "sentence" longer than MAX_SENTENCE is pasted content, not a statement, and is skipped."""
    wall = "x" * (MAX_SENTENCE + 1)
    assert list(sentences(f"Short one. {wall}")) == ["Short one."]


@dataclass
class _SdkBlock:
    """Stands in for an SDK content block object (attributes, not keys)."""

    type: str
    text: str


def test_message_text_reads_strings_and_text_blocks_only() -> None:
    """String content and text blocks (dicts or SDK objects) are prose; tools and thinking not."""
    assert message_text(user("Never use the prod DB.")) == "Never use the prod DB."
    blocks = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Never mind this.", "signature": "s"},
            {"type": "text", "text": "Reading the file."},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}},
            _SdkBlock(type="text", text="Done."),
        ],
    }
    assert message_text(blocks) == "Reading the file.\nDone."
    assert message_text({"role": "assistant", "content": None}) == ""


# -- prohibitions and obligations -----------------------------------------------------------------


# Which sentences are rules is the judge's (tests/test_judge.py gates it on the held-back corpus);
# the sentences these tests once listed are labelled rows of tests/data/judge/written.jsonl.


def test_only_user_sentences_bind_but_both_speakers_ask() -> None:
    """Assistant sentences are never rules; questions come from both speakers, with log indices."""
    found = extraction_of(
        user("Never book before 9am. Which hotel is closest?"),
        assistant("You must not miss Sintra. Shall I book it?"),
        start=10,
    )
    assert found.prohibitions == (Statement(10, "user", "Never book before 9am."),)
    assert found.obligations == ()
    assert found.questions == (
        Statement(10, "user", "Which hotel is closest?"),
        Statement(11, "assistant", "Shall I book it?"),
    )


def test_repeated_sentences_and_values_are_reported_once() -> None:
    """A rule said twice is one prohibition; a value is kept at its first occurrence, user only."""
    found = extraction_of(
        user("Never fly before 9am. The budget is $3,000."),
        assistant("Noted: $3,000 and nothing before 9am, on flight TP1234."),
        user("never fly before 9am. Remember the $3,000."),
    )
    assert [s.text for s in found.prohibitions] == ["Never fly before 9am."]
    assert found.values == ((0, "9am"), (0, "$3,000"))
    assert found.user_values == ("9am", "$3,000")


def test_tool_results_are_not_read() -> None:
    """Text inside tool calls and results is data, not the user's words."""
    found = extraction_of(
        user("Run the report."),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "run", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "Never retry. Cost $9."}
            ],
        },
    )
    assert found.prohibitions == ()
    assert found.values == ()


# -- guards ---------------------------------------------------------------------------------------


def test_a_constraint_covers_a_prohibition_it_contains() -> None:
    """Verbatim containment covers, whatever the case and spacing."""
    assert covers(
        "Rules: never  book flights before 9AM. Budget $3,000.", "Never book flights before 9am."
    )


def test_a_paraphrase_covers_when_it_keeps_the_negation_values_and_words() -> None:
    """A negation with every exact value and most content words covers the prohibition."""
    prohibition = "Never book flights that leave before 9am."
    assert covers("Do not book any flights leaving before 9am.", prohibition)
    assert not covers("Book flights that leave before 9am.", prohibition)  # negation lost
    assert not covers("Never book flights that leave before 10am.", prohibition)  # value changed
    assert not covers("Never share anything.", "Never share the customer's email address.")


def test_uncovered_prohibitions_are_those_no_constraint_states() -> None:
    """Only the prohibitions that no constraint covers come back, in order."""
    flights = Statement(3, "user", "Never book flights before 9am.")
    database = Statement(5, "user", "Do not touch the prod database.")
    assert uncovered_prohibitions([flights, database], ["No flights before 9am, never."]) == [
        database
    ]
    assert uncovered_prohibitions([flights], []) == [flights]


def test_unsupported_values_are_those_absent_from_the_sources() -> None:
    """A value not found verbatim in the sources is reported; present ones are not."""
    sources = "User: the budget is $3,000 and the flight is TP1234."
    assert unsupported_values("Budget $3,000 on TP1234.", sources) == ()
    assert unsupported_values("Budget $3,500 on TP1234.", sources) == ("$3,500",)


def test_values_are_carried_token_exactly() -> None:
    """A value is carried only as a whole token: no prefix, no truncation, no near date."""
    sources = "Budget $3,000 on TP1234, back by April 14 after a 5-day trip."
    assert unsupported_values("Budget $3 on TP123.", sources) == ("$3", "TP123")
    assert unsupported_values("Back by April 4.", sources) == ("4",)
    assert unsupported_values("A trip of 5 days, $3,000 in total.", sources) == ()


class _HouseRules(BaseSummary):
    """A domain schema whose binding field is named like rules."""

    notes: Items = summary_field("Notes", "Anything worth remembering.")
    house_rules: Items = summary_field("House rules", "What must never happen.", binding=True)


class _LooseRules(BaseSummary):
    """A schema whose rules field is not binding, so it gets no guard."""

    rules: Items = summary_field("Rules", "Suggestions only.")


def test_constraint_field_prefers_constraints_then_a_binding_rules_field() -> None:
    """`constraints` wins; else a binding field named like rules; a non-binding one is no target."""
    default = constraint_field(spec_of(Summary))
    assert default is not None
    assert default.name == "constraints"
    house = constraint_field(spec_of(_HouseRules))
    assert house is not None
    assert house.name == "house_rules"
    assert constraint_field(spec_of(_LooseRules)) is None


def test_typographic_apostrophes_cover_ascii_ones() -> None:
    """A constraint with a curly apostrophe covers the prohibition with a straight one, and back."""
    curly = "\u2019"
    assert covers(f"Don{curly}t book flights before 9am.", "Don't book flights before 9am.")
    assert covers(
        f"The user said: don{curly}t add travel insurance.", "I don't want travel insurance."
    )
    assert covers("Don't book flights before 9am.", f"Don{curly}t book flights before 9am.")
