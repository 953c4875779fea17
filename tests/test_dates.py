"""A date stamp at the start of a message dates that message and the ones after it.

Chat logs exported from apps often carry a session's time in the text of its first message
("[7:55 pm on 9 June, 2023] Hey Melanie!") rather than in a ``timestamp`` key. The stamp is the
day of that message and of every later message without a day of its own; it is never a sentence
of its own, so it never makes a greeting a fact.
"""

from __future__ import annotations

from datetime import date

import pytest

from progsum import Compactor, ConversationState, Policy, SummaryUpdate
from progsum.judge._dates import carried_days, day_of, leading_day, without_stamp
from progsum.messages._formats import Message
from progsum.recall._excerpt import Excerpt, Recall, block_text
from progsum.summarizers import ExtractiveSummarizer
from progsum.testing import QueuedSummarizer


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("[7:55 pm on 9 June, 2023] Hey Melanie!", date(2023, 6, 9)),
        ("[1:14 pm on 25 May, 2023] Hi Caroline.", date(2023, 5, 25)),
        ("(June 9, 2023) Morning!", date(2023, 6, 9)),
        ("[9th of Sept 2023, 10:02] Back again.", date(2023, 9, 9)),
        ("[2023-06-09 19:55] Hey", date(2023, 6, 9)),
        ("  [3 Jan 2024]\nHappy new year!", date(2024, 1, 3)),
    ],
)
def test_a_leading_stamp_gives_the_day(text: str, day: date) -> None:
    """A bracket opening the text with a day, a month and a year is the message's day."""
    assert leading_day(text) == day
    assert not without_stamp(text).startswith(("[", "("))


@pytest.mark.parametrize(
    "text",
    [
        "I moved here on 9 June, 2023.",  # a date inside prose is what the sentence says
        "[link] see 9 June, 2023",  # a bracket without a date at its start
        "[31 February, 2023] hi",  # no such day
        "[7:55 pm] Hey Melanie!",  # a time without a day
        "(see above) Done.",
        # pasted log lines each open with their time: a log's stamps, not the message's day
        "[2024-03-11 10:22:01] ERROR connection refused\n[2024-03-11 10:22:02] ERROR retry",
        "[2024-03-11 10:22:01]\nERROR connection refused\n[2024-03-11 10:22:02] retry",
    ],
)
def test_no_day_without_a_leading_date_stamp(text: str) -> None:
    """A date inside prose, a bracket without a whole date, or an impossible date is no stamp."""
    assert leading_day(text) is None
    assert without_stamp(text) == text


def test_a_pasted_log_dates_no_message() -> None:
    """A message that opens with stamped log lines has no day, and later ones get none from it."""
    log = "[2024-03-11 10:22:01] ERROR refused\n[2024-03-11 10:22:02] ERROR retry failed\nWhy?"
    messages = [{"role": "user", "content": log}, {"role": "assistant", "content": "Let me see."}]
    assert day_of(messages[0]) is None
    assert carried_days(messages) == (None, None)
    stamped = "[7:55 pm on 9 June, 2023] Hey Melanie!\nHow was the trip to Oslo?"
    assert day_of({"role": "user", "content": stamped}) == date(2023, 6, 9)


def test_a_timestamp_key_wins_over_the_stamp_in_the_text() -> None:
    """``timestamp`` is the message's own day; the text's stamp counts only without one."""
    message = {"role": "user", "timestamp": "2023-07-01", "content": "[9 June, 2023] Hi"}
    assert day_of(message) == date(2023, 7, 1)
    assert day_of({"role": "user", "content": [{"type": "text", "text": "[9 June, 2023] Hi"}]}) == (
        date(2023, 6, 9)
    )


def test_a_day_carries_to_the_later_messages_without_one() -> None:
    """Each message without a day of its own is in the day of the latest one before it."""
    messages: list[Message] = [
        {"role": "user", "content": "Hello."},
        {"role": "user", "content": "[7:55 pm on 9 June, 2023] Hey Melanie!"},
        {"role": "assistant", "content": "Hi Caroline!"},
        {"role": "user", "timestamp": "2023-07-02", "content": "Another day."},
        {"role": "assistant", "content": "Indeed."},
    ]
    assert carried_days(messages) == (
        None,
        date(2023, 6, 9),
        date(2023, 6, 9),
        date(2023, 7, 2),
        date(2023, 7, 2),
    )
    assert carried_days(messages[2:], before=date(2023, 6, 9))[0] == date(2023, 6, 9)


def _session() -> list[Message]:
    """Two people chatting; the session's day is only in its first message's text."""
    messages: list[Message] = [
        {"role": "user", "name": "Caroline", "content": "[7:55 pm on 9 June, 2023] Hey Melanie!"},
        {"role": "assistant", "name": "Melanie", "content": "Hey Caroline! How have you been?"},
        {
            "role": "user",
            "name": "Caroline",
            "content": "I went to a pottery class with my sister Ana on Saturday.",
        },
        {"role": "assistant", "name": "Melanie", "content": "I adopted a second cat, called Miso."},
    ]
    for _ in range(6):
        messages.append({"role": "user", "name": "Caroline", "content": "Haha, true!"})
        messages.append({"role": "assistant", "name": "Melanie", "content": "Totally."})
    return messages


def test_facts_after_a_stamped_greeting_carry_its_day_and_the_greeting_is_no_fact() -> None:
    """The stamp on the kept first message dates the facts folded after it, both speakers'."""
    compactor = Compactor(
        policy=Policy(context_window=4_000, keep=("messages", 2)),
        summarizer=ExtractiveSummarizer(max_share=1.0),
    )
    state = compactor.compact(ConversationState(_session()), force=True)  # message 1 is the head
    assert state.summary is not None
    facts = " | ".join(item.text for item in state.summary.established_facts)
    assert "Caroline (9 June 2023): went to pottery class with my sister Ana on Saturday" in facts
    assert "Melanie (9 June 2023): adopted second cat, called Miso" in facts
    assert "Hey Melanie" not in facts
    assert "7:55" not in facts


def test_a_recalled_excerpt_is_dated_by_its_stamp() -> None:
    """A recalled message says its day, read from its stamp."""
    log = _session()
    text = str(log[0]["content"])
    recall = Recall(at=len(log), cutoff=len(log) - 2, excerpts=(Excerpt(0, 0, len(text)),))
    assert 'date="2023-06-09"' in block_text(recall, log)


def test_a_recalled_message_without_a_stamp_is_dated_by_the_day_it_was_said_on() -> None:
    """An excerpt of a later message shows the day its session's stamp gave it."""
    compactor = Compactor(policy=Policy(context_window=4_000, keep=("messages", 2)))
    state = compactor.compact(ConversationState(_session()), force=True)
    asked = state.append({"role": "user", "name": "Caroline", "content": "What about pottery?"})
    recalled = compactor.maybe_compact(asked)
    assert recalled.recall is not None
    assert [e.index for e in recalled.recall.excerpts] == [2]
    assert 'date="2023-06-09"' in recalled.recall_block


def test_a_restored_fact_names_its_speaker_and_day_and_the_stamp_is_no_value() -> None:
    """The ledger puts a dropped value's sentence back after its label; a stamp states nothing."""
    said = "My new address is 12 Rua Augusta, Lisbon."
    messages: list[Message] = [
        {"role": "user", "name": "Caroline", "content": "Help me redirect my post."},
        {"role": "user", "name": "Caroline", "content": f"[7:55 pm on 9 June, 2023] {said}"},
    ]
    for n in range(8):
        messages.append({"role": "assistant", "content": f"Step {'abcdefgh'[n]}: " + "forms " * 40})
        messages.append({"role": "user", "name": "Caroline", "content": "Go on."})
    dropping = QueuedSummarizer(SummaryUpdate())  # keeps nothing: the ledger must restore
    compactor = Compactor(policy=Policy(context_window=1_500), summarizer=dropping)
    state = compactor.compact(ConversationState(messages), force=True)
    assert state.summary is not None
    facts = [item.text for item in state.summary.established_facts]
    assert f"Caroline (9 June 2023): {said}" in facts
    assert not any(entry.value in ("9", "2023", "7:55 pm") for entry in state.ledger)
