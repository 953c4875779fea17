"""Classification: which kinds a judged sentence fits, and how telling a fact is.

The judge (`progsum.judge._seam`) gives the label; this module only maps it to the schema's kinds
(`progsum.summarizers.extractive._routing`): a rule is a constraint, a decision or a revision a
decision, a todo an open thread, a preference a preference, a fact a fact. A fact or preference
may also fit a narrower field a schema declares (a date, a person, the user's profile) and a
decision or fact the ruled-out approaches; those words (month names, ordinal suffixes, kin words,
the phrases of a ruled-out option) are the lexicon's (``kinds`` in
``progsum/judge/data/lexicon.toml``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from progsum.judge._judgement import Judgement
from progsum.judge._lexicon import alternation, content_words
from progsum.judge._values import exact_values
from progsum.messages._formats import Role
from progsum.summarizers.extractive._routing import Kind

__all__ = ["fact_weight", "kinds", "substantive"]


@functools.cache
def _pattern(name: str) -> re.Pattern[str]:
    if name == "dates":
        months = alternation("kinds.months")
        return re.compile(
            rf"\b(?:{months})\.?\s+\d{{1,2}}\b|"
            rf"\b\d{{1,2}}(?:{alternation('kinds.ordinals')})?\s+"
            rf"(?:(?:{alternation('kinds.day_of')})\s+)?(?:{months})\b|"
            rf"\b\d{{4}}-\d\d-\d\d\b|\b(?:{alternation('kinds.date_events')})\b",
            re.IGNORECASE,
        )
    if name == "people":
        return re.compile(
            rf"\b(?:{alternation('kinds.possessives')})\s+(?:\w+\s+)?(?:{alternation('kinds.people')})\b",
            re.IGNORECASE,
        )
    if name == "own":
        return re.compile(rf"\b(?:{alternation('terse.first_person')})\b", re.IGNORECASE)
    return re.compile(rf"\b(?:{alternation('kinds.rejected')})\b", re.IGNORECASE)


def fact_weight(sentence: str, role: Role) -> int:
    """How telling a fact ``sentence`` is (higher is kept first).

    Exact values weigh 2, a user's sentence 1 more, a first-person statement 1 more.
    """
    values = bool(exact_values(sentence))
    own = _pattern("own").search(sentence.replace("\u2019", "'")) is not None
    return 2 * values + (role == "user") + own


def kinds(sentence: str, verdict: Judgement, role: Role, *, marked: bool) -> Iterator[Kind]:
    """The kinds ``sentence`` (judged ``verdict``) fits, in preference order."""
    if marked or verdict.label == "rule":
        yield "constraints"
        return
    text = sentence.replace("\u2019", "'")
    label = verdict.label
    if label in ("decision", "revision"):
        yield "decisions"
    if label in ("decision", "revision", "fact") and _pattern("rejected").search(text):
        yield "rejected"
    if label == "todo" and role == "user":
        yield "questions"  # the user's request; the assistant's own intention is narration
    if label in ("fact", "preference"):
        if _pattern("dates").search(text):
            yield "dates"
        if _pattern("people").search(text):
            yield "people"
        if label == "preference":
            yield "preferences"
        if role == "user" and _pattern("own").search(text):
            yield "profile"
        yield "facts"


def substantive(text: str) -> bool:
    """Whether ``text`` has a content word (a lone value, such as a list number, says nothing)."""
    return bool(content_words(text))
