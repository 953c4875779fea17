"""The features a linear judge reads: word and character n-grams of a sentence, and its context.

Shared by inference (`progsum.judge._linear`) and training (``bench/judge_train.py``), so the two
can never disagree. Every feature is a short string; the model file maps each to its weights.

* ``w:`` word unigrams and ``b:`` bigrams of the case-folded sentence (digits become ``0``);
* ``f:`` its first word and ``f2:`` first two, ``e:`` its final punctuation;
* ``c:`` character 3- and 4-grams of each word inside spaces (``" nev"``, ``"ever "``);
* ``a:`` the author class and ``n:`` a length band; ``v`` when it holds a digit;
* ``p:`` words of the previous message's last sentence and ``p?`` when that ended in a question.
"""

from __future__ import annotations

import itertools
import re
from typing import NamedTuple

from progsum._memo import memoized
from progsum.judge._judgement import Context

__all__ = [
    "FEATURE_VERSION",
    "Reading",
    "chunks",
    "ending",
    "features",
    "last_sentence",
    "previous_features",
    "reading",
    "reading_after",
    "sentence_features",
    "word_features",
    "words",
]

FEATURE_VERSION = 1
"""Bumped whenever `features` changes: a model trained on other features is refused."""

_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d+|[?!$\u20ac\u00a3%]")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_PREVIOUS_WORDS = 12
_BANDS = (3, 6, 12, 24)


@memoized("progsum.judge._features.words", 512 * 1024)
def words(text: str) -> tuple[str, ...]:
    """Case-folded tokens of ``text``: words, ``0`` for a run of digits, and ``? ! $ € £ %``.

    The curly apostrophes `_APOSTROPHES` straightens are not ASCII, so ASCII text is not
    translated.
    """
    folded = text.casefold() if text.isascii() else text.translate(_APOSTROPHES).casefold()
    return tuple(["0" if t.isdigit() else t for t in _TOKEN.findall(folded)])


def last_sentence(text: str) -> str:
    """The end of ``text`` after its last ``.``, ``!`` or ``?`` that a word follows.

    Its closing marks stay (``"Is it final?"`` of ``"Done. Is it final?"``); text without one
    is its own last sentence. One scan from the end, however long the message.
    """
    end = len(text.rstrip(".!?"))
    last = max(text.rfind(".", 0, end), text.rfind("!", 0, end), text.rfind("?", 0, end))
    return text[last + 1 :]


@memoized("progsum.judge._features.previous_features", 256 * 1024)
def previous_features(previous: str) -> tuple[str, ...]:
    """The features of the last sentence of ``previous``, the message before a sentence's."""
    if not previous.strip():
        return ("p:none",)
    sentence = last_sentence(previous.strip())
    found = [f"p:{t}" for t in words(sentence)[:_PREVIOUS_WORDS]]
    if previous.rstrip().endswith("?"):
        found.append("p?")
    return tuple(found)


class Reading(NamedTuple):
    """What a sentence's features are made of, in its context: equal readings, equal features.

    Digits are read as ``0``, so "Turn 17: what does it cost?" and "Turn 18: what does it
    cost?" read alike, and a judge may remember its verdict per reading (`reading`).
    """

    tokens: tuple[str, ...]
    """`words` of the sentence."""
    end: str
    """Its final punctuation (``?``, ``!``, ``.``, ``:``), or ``none``."""
    author: str
    previous: tuple[str, ...]
    """The features of the previous message's last sentence."""


def ending(text: str) -> str:
    """A `Reading`'s ``end``: the last mark of ``text``, closing quotes and brackets aside."""
    last = text.rstrip(" \"')]")[-1:]
    return last if last in "?!.:" else "none"


def reading(text: str, context: Context) -> Reading:
    """The `Reading` of ``text`` said in ``context``."""
    return reading_after(text, context.author, context.previous)


def reading_after(text: str, author: str, previous: str) -> Reading:
    """The `Reading` of ``text`` by ``author`` after the message ``previous``."""
    return Reading(words(text), ending(text), author, previous_features(previous))


def features(text: str, context: Context) -> list[str]:
    """Every feature of ``text`` said in ``context``, repeats kept (they count)."""
    return [feature for chunk in chunks(reading(text, context)) for feature in chunk]


@memoized("progsum.judge._features.word_features", 512 * 1024)  # a word recurs: made once
def word_features(token: str) -> tuple[str, ...]:
    """The features one word adds wherever it stands: ``w:``, and ``c:`` for a word of letters.

    ``c:`` features are its character 3- and 4-grams inside spaces (``" nev"``, ``"ever "``).
    """
    if not token[0].isalpha():
        return (f"w:{token}",)
    padded = f" {token} "
    grams = (padded[i : i + size] for size in (3, 4) for i in range(len(padded) - size + 1))
    return (f"w:{token}", *(f"c:{gram}" for gram in grams))


def chunks(read: Reading) -> list[tuple[str, ...]]:
    """`features` in groups: one per word, one for the rest, one for the previous message.

    A word's group is the same tuple wherever the word recurs (`word_features`), and so is the
    previous message's, so inference sums each once (`progsum.judge._linear.LinearModel`).
    """
    return [*map(word_features, read.tokens), sentence_features(read), read.previous]


def sentence_features(read: Reading) -> tuple[str, ...]:
    """The group of `chunks` that is neither a word's nor the previous message's."""
    tokens = read.tokens
    rest = [f"b:{a}_{b}" for a, b in itertools.pairwise(tokens)]
    alpha = [t for t in tokens if t[0].isalpha()]
    if alpha:
        rest.append(f"f:{alpha[0]}")
        rest.append(f"f2:{'_'.join(alpha[:2])}")
    rest.append(f"e:{read.end}")
    rest.append(f"n:{next((n for n in _BANDS if len(tokens) <= n), 99)}")
    if "0" in tokens:
        rest.append("v")
    rest += (f"a:{read.author}", "bias")
    return tuple(rest)
