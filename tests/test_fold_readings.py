"""A fold's readings of its messages, shared between stages, against reading each message again."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from progsum import ConversationState
from progsum.judge._dates import carried_days

_DAYS = ("", "[2027-05-08] ", "[8 May 2027] ", " [2027-06-01 09:00] ")


@st.composite
def logs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Messages, some stamped in their text, some with a timestamp, most with neither."""
    made: list[dict[str, Any]] = []
    for n in range(draw(st.integers(0, 12))):
        message: dict[str, Any] = {
            "role": "user" if n % 2 == 0 else "assistant",
            "content": f"{draw(st.sampled_from(_DAYS))}Message {n}.",
        }
        if draw(st.integers(0, 5)) == 0:
            day = draw(st.integers(1, 28))
            message["timestamp"] = datetime(2027, 3, day, tzinfo=UTC).isoformat()
        made.append(message)
    return made


@given(logs(), st.data())
def test_a_segments_days_are_the_days_carried_through_it(
    log: list[dict[str, Any]], data: st.DataObject
) -> None:
    """`days_in` is `carried_days` of the slice from the day in force before it, in any order."""
    state: ConversationState[Any] = ConversationState(log)
    asked = data.draw(st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14)), max_size=4))
    for one, other in asked:
        start, stop = min(one, other), max(one, other)
        expected = carried_days(log[start:stop], before=state.day_before(start))
        assert state.days_in(start, stop) == expected


def test_a_stamped_message_carries_its_day_to_the_next() -> None:
    """The stamps `logs` draws are read as days, and carried to the messages after them."""
    log = [
        {"role": "user", "content": f"{_DAYS[1]}Hello."},
        {"role": "assistant", "content": "Hi."},
    ]
    state: ConversationState[Any] = ConversationState(log)
    assert state.days_in(1, 2) == (datetime(2027, 5, 8, tzinfo=UTC).date(),)
