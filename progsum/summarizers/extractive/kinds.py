"""Classification: which kinds a sentence of the segment fits, and how telling a fact is."""

from __future__ import annotations

from collections.abc import Iterator

from progsum.judge.salience import content_words, plain
from progsum.judge.values import exact_values
from progsum.messages.formats import Role
from progsum.summarizers.extractive.cues import (
    ADVICE,
    DATES,
    DECISION,
    NAMES,
    NEXT_STEP,
    NOT_OURS,
    PEOPLE,
    PERSONAL,
    PREFERENCE,
    REJECTED,
    RESULT,
    SELF,
)
from progsum.summarizers.extractive.routing import Kind

__all__ = ["fact_weight", "kinds", "substantive"]


def fact_weight(sentence: str, role: Role) -> int | None:
    """How telling a fact ``sentence`` is (higher is kept first), or None if it states no fact.

    Exact values weigh 2, a user's sentence 1 more, a first-person statement 1 more.
    """
    text = plain(sentence)
    if NEXT_STEP.match(text):
        return None
    values = bool(exact_values(sentence))
    own = SELF.search(text) is not None
    advice = role == "assistant" and ADVICE.search(text) and NAMES.search(text)
    if not (
        values
        or own
        or advice
        or PERSONAL.search(text)
        or (role == "assistant" and RESULT.search(text))
    ):
        return None
    return 2 * values + (role == "user") + own


def kinds(sentence: str, role: Role, *, marked: bool) -> Iterator[Kind]:
    """The kinds ``sentence`` fits, in preference order (questions are handled apart)."""
    if marked:
        yield "constraints"
    text = plain(sentence)
    if DECISION.search(text) and not NOT_OURS.search(text) and substantive(DECISION.sub(" ", text)):
        yield "decisions"
    if REJECTED.search(text) and substantive(REJECTED.sub(" ", text)):
        yield "rejected"
    if fact_weight(sentence, role) is not None:
        if DATES.search(text):
            yield "dates"
        if PEOPLE.search(text):
            yield "people"
        if PREFERENCE.search(text):
            yield "preferences"
        if role == "user" and SELF.search(text):
            yield "profile"
        yield "facts"


def substantive(text: str) -> bool:
    """Whether ``text`` has a content word (a lone value, such as a list number, says nothing)."""
    return bool(content_words(text))
