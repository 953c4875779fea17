"""The judge's inference shortcuts against the plain computation they stand for, float for float."""

from __future__ import annotations

import re
from datetime import date
from typing import cast

from hypothesis import given, settings
from hypothesis import strategies as st

from progsum.judge._features import chunks, last_sentence, reading, words
from progsum.judge._judgement import Context, Judgement, Label, Modality
from progsum.judge._linear import LinearJudge, _allowed, _asks

_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d+|[?!$\u20ac\u00a3%]")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})

_PIECES = (
    "Never", "book", "before", "9am", "don't", "don\u2019t", "\u00b2", "x\u00b3", "\u0663\u0664",
    "$200", "50%", "\u20ac3", "Caf\u00e9", "STRASSE", "stra\u00dfe", "?", "!", ".", ":", ")",
    '"', "'", "\u2018ok\u2019", "the", "budget", "is", "final", "2027-05-08", "\uff1f", " ",
)  # fmt: skip
texts = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=14).map(" ".join),
    st.text(max_size=60),
)
contexts = st.builds(
    Context,
    author=st.sampled_from(["user", "assistant"]),
    kind=st.sampled_from(["agent", "chat"]),
    previous=texts,
)


def plain_words(text: str) -> tuple[str, ...]:
    """`words` as first written: every text translated, digits mapped in a generator."""
    tokens = _TOKEN.findall(text.translate(_APOSTROPHES).casefold())
    return tuple("0" if t.isdigit() else t for t in tokens)


def plain_last_sentence(text: str) -> str:
    """`last_sentence` with the latest mark found by a generator."""
    end = len(text.rstrip(".!?"))
    return text[max(text.rfind(mark, 0, end) for mark in ".!?") + 1 :]


def plain_judgement(judge: LinearJudge, sentence: str, context: Context) -> Judgement:
    """The verdict from every feature group summed by `LinearModel.probabilities`, uncached."""
    if context.author == "tool":
        return Judgement("machine")
    found = chunks(reading(sentence, context))
    labels, modality = judge._labels, judge._modality
    probs = labels.probabilities(found)
    ranked = sorted(zip(probs, labels.classes, strict=True))
    asked = _asks(sentence)
    for p, label in reversed(ranked):
        if not _allowed(label, context.author, context.kind, asked=asked):
            continue
        if label == "rule" and p < judge._threshold:
            continue
        if label != "rule":
            return Judgement(cast("Label", label), None, p)
        mods = modality.probabilities(found)
        best = max(range(len(mods)), key=mods.__getitem__)
        return Judgement("rule", cast("Modality", modality.classes[best]), p)
    return Judgement("chatter", None, 0.0)


@given(texts)
def test_words_read_ascii_without_translating(text: str) -> None:
    """`words` equals the plain reading of any text, ASCII or not (superscripts, curly quotes)."""
    assert words.__wrapped__(text) == plain_words(text)


@given(texts)
def test_last_sentence_finds_the_latest_mark(text: str) -> None:
    """`last_sentence` equals the reading that looks for each mark in a generator."""
    assert last_sentence(text) == plain_last_sentence(text)


@settings(max_examples=300)
@given(texts, contexts)
def test_summing_by_word_gives_the_same_probabilities(text: str, context: Context) -> None:
    """`LinearModel.read` (a word's sums remembered by the word) equals `probabilities`, exactly."""
    judge = LinearJudge()
    read = reading(text, context)
    groups = chunks(read)
    for model in (judge._labels, judge._modality):
        assert model.read(read, groups[-2]) == model.probabilities(groups)


@settings(max_examples=300)
@given(texts, contexts, st.sampled_from([None, "Ann"]), st.sampled_from([None, date(2027, 5, 8)]))
def test_the_judge_answers_what_the_plain_computation_answers(
    text: str, context: Context, speaker: str | None, day: date | None
) -> None:
    """`LinearJudge.judge` equals the uncached plain verdict, whatever the speaker or day."""
    judge = LinearJudge()
    said = Context(context.author, context.kind, context.previous, speaker, day)
    expected = plain_judgement(judge, text, context)
    assert judge.judge(text, said) == expected
    assert judge.judge(text, context) == expected
    assert judge._judge(text, said) == expected


def test_a_tools_text_is_machine_text() -> None:
    """A tool's sentence is machine text, remembered or not."""
    judge = LinearJudge()
    tool = Context("tool")
    assert judge.judge("Never book before 9am.", tool) == Judgement("machine")
    assert judge._judge("Never book before 9am.", tool) == Judgement("machine")
