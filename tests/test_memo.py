"""`short_text_cache`: a short text is read once, a long one every time, results unchanged."""

from __future__ import annotations

from progsum.judge.memo import SHORT, short_text_cache
from progsum.judge.values import value_keys


def test_short_texts_are_read_once_and_long_ones_every_time() -> None:
    """A short text's result is remembered; a text over `SHORT` characters is read each time."""
    reads: list[str] = []

    @short_text_cache
    def length(text: str) -> int:
        reads.append(text)
        return len(text)

    long = "x" * (SHORT + 1)
    assert [length("budget"), length("budget"), length(long), length(long)] == [
        6,
        6,
        *[SHORT + 1] * 2,
    ]
    assert reads == ["budget", long, long]


def test_a_remembered_reading_is_the_reading() -> None:
    """The cached `value_keys` of a sentence equals its reading inside a text too long to cache."""
    sentence = "The budget is $3,000 for 5 days; see config/prod.yaml."
    padded = sentence + " " + "word " * (SHORT // 5)
    assert (
        value_keys(sentence) == value_keys(sentence) == {"$3,000", "5", "5 day", "config/prod.yaml"}
    )
    assert value_keys(sentence) <= value_keys(padded)
