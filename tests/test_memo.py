"""`short_text_cache`: a short text is read once, a long one every time, results unchanged."""

from __future__ import annotations

import sys
from pathlib import Path

from progsum.judge._features import chunks, features, reading
from progsum.judge._judgement import Context
from progsum.judge._linear import LinearJudge
from progsum.judge._memo import SHORT, short_text_cache
from progsum.judge._values import value_keys

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from judge_corpus import CORPUS, context, load


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


def test_the_judge_remembers_by_reading_and_answers_as_a_fresh_one() -> None:
    """A judge remembering verdicts per reading answers what a fresh judge answers, in any order.

    It also remembers the summed weights of each word; sentences that read alike (the same
    words, digits aside) get one verdict.
    """
    rows = load(CORPUS)[::7]
    contexts = [context(row) for row in rows]
    warm = LinearJudge()
    said = [warm.judge(row["text"], ctx) for row, ctx in zip(rows, contexts, strict=True)]
    fresh = LinearJudge()
    for row, ctx, verdict in list(zip(rows, contexts, said, strict=True))[::-5]:
        fresh._labels._summed.cache_clear()  # what the shared model remembered, forgotten
        fresh._modality._summed.cache_clear()
        assert fresh._judge(row["text"], ctx) == verdict  # the judge's own memory bypassed
    one = Context("user", previous="Shall I hold it?")
    assert reading("Turn 17: what does it cost on 2027-05-03?", one) == reading(
        "Turn 18: what does it cost on 2027-06-11?", one
    )
    assert features("Never book before 9am.", one) == [
        feature for group in chunks(reading("Never book before 9am.", one)) for feature in group
    ]
