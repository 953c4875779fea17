"""The features a linear judge reads: word and character n-grams of a sentence, and its context.

Shared by inference (`progsum.judge.linear`) and training (``bench/judge_train.py``), so the two
can never disagree. Every feature is a short string; the model file maps each to its weights.

* ``w:`` word unigrams and ``b:`` bigrams of the case-folded sentence (digits become ``0``);
* ``f:`` its first word and ``f2:`` first two, ``e:`` its final punctuation;
* ``c:`` character 3- and 4-grams of each word inside spaces (``" nev"``, ``"ever "``);
* ``a:`` the author class and ``n:`` a length band; ``v`` when it holds a digit;
* ``p:`` words of the previous message's last sentence and ``p?`` when that ended in a question.
"""

from __future__ import annotations

import functools
import itertools
import re

from progsum.judge.judgement import Context

__all__ = ["FEATURE_VERSION", "features", "last_sentence", "words"]

FEATURE_VERSION = 1
"""Bumped whenever `features` changes: a model trained on other features is refused."""

_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d+|[?!$\u20ac\u00a3%]")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_PREVIOUS_WORDS = 12
_BANDS = (3, 6, 12, 24)


@functools.lru_cache(maxsize=8_192)
def words(text: str) -> tuple[str, ...]:
    """Case-folded tokens of ``text``: words, ``0`` for a run of digits, and ``? ! $ € £ %``."""
    tokens = _TOKEN.findall(text.translate(_APOSTROPHES).casefold())
    return tuple("0" if t.isdigit() else t for t in tokens)


@functools.lru_cache(maxsize=16_384)  # a word recurs across sentences: its n-grams are read once
def _grams(token: str) -> tuple[str, ...]:
    """The ``c:`` features of one word: its character 3- and 4-grams inside spaces."""
    padded = f" {token} "
    return tuple(
        f"c:{padded[i : i + size]}" for size in (3, 4) for i in range(len(padded) - size + 1)
    )


def _text_features(text: str) -> list[str]:
    tokens = words(text)
    found = [f"w:{t}" for t in tokens]
    found += [f"b:{a}_{b}" for a, b in itertools.pairwise(tokens)]
    alpha = [t for t in tokens if t[0].isalpha()]
    if alpha:
        found.append(f"f:{alpha[0]}")
        found.append(f"f2:{'_'.join(alpha[:2])}")
    stripped = text.rstrip(" \"')]")
    found.append(f"e:{stripped[-1:] if stripped[-1:] in '?!.:' else 'none'}")
    for token in alpha:
        found += _grams(token)
    band = next((n for n in _BANDS if len(tokens) <= n), 99)
    found.append(f"n:{band}")
    if "0" in tokens:
        found.append("v")
    return found


def last_sentence(text: str) -> str:
    """The end of ``text`` after its last ``.``, ``!`` or ``?`` that a word follows.

    Its closing marks stay (``"Is it final?"`` of ``"Done. Is it final?"``); text without one
    is its own last sentence. One scan from the end, however long the message.
    """
    end = len(text.rstrip(".!?"))
    last = max(text.rfind(mark, 0, end) for mark in ".!?")
    return text[last + 1 :]


@functools.lru_cache(maxsize=8_192)
def _previous_features(previous: str) -> tuple[str, ...]:
    if not previous.strip():
        return ("p:none",)
    sentence = last_sentence(previous.strip())
    found = [f"p:{t}" for t in words(sentence)[:_PREVIOUS_WORDS]]
    if previous.rstrip().endswith("?"):
        found.append("p?")
    return tuple(found)


def features(text: str, context: Context) -> list[str]:
    """Every feature of ``text`` said in ``context``, repeats kept (they count)."""
    found = _text_features(text)
    found.append(f"a:{context.author}")
    found += _previous_features(context.previous)
    found.append("bias")
    return found
