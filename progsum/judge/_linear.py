"""The default judge: a linear model over `progsum.judge._features`, read from shipped weights.

``progsum/judge/data/model.json`` holds what ``bench/judge_train.py`` learned from the labelled
corpus (``tests/data/judge/``): per feature a weight for each label, a bias, and a second small
model for a rule's modality. Inference is a sum of weights and a softmax, in plain Python.
Labels that cannot occur in a context are never given (`progsum.judge._judgement`): a rule or a
revision only from the person, nothing addressed to an assistant in a two-person chat, nothing
binding that ends in a question mark, and a tool's text is always machine text.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from progsum._memo import memoized
from progsum.errors import ConfigError
from progsum.judge._features import (
    FEATURE_VERSION,
    Reading,
    reading_after,
    sentence_features,
    word_features,
)
from progsum.judge._judgement import (
    AGENT_ONLY,
    ASKED_NEVER,
    LABELS,
    PERSON_ONLY,
    Context,
    Judgement,
    Label,
    Modality,
)
from progsum.judge._segment import sentences

__all__ = ["MODEL_PATH", "LinearJudge", "LinearModel", "load_model"]

MODEL_PATH = Path(__file__).resolve().parent / "data" / "model.json"

SUMMED = 384 * 1024
"""Bytes of summed weights (of a word's features, a previous message's) a model remembers."""
JUDGED = 512 * 1024
"""Bytes of verdicts (per sentence and context, per reading) a judge remembers."""


class LinearModel:
    """Weights per feature for an ordered set of classes; `probabilities` sums them."""

    __slots__ = ("_summed", "_worded", "bias", "classes", "weights")

    def __init__(
        self, classes: Sequence[str], bias: Sequence[float], weights: Mapping[str, Sequence[float]]
    ) -> None:
        self.classes = tuple(classes)
        self.bias = tuple(bias)
        self.weights = {name: tuple(row) for name, row in weights.items()}
        if len(self.bias) != len(self.classes) or any(
            len(row) != len(self.classes) for row in self.weights.values()
        ):
            raise ConfigError("a judge model's weights do not match its classes; retrain it")
        self._summed = memoized("progsum.judge._linear.LinearModel.summed", SUMMED)(self._sum)
        self._worded = memoized("progsum.judge._linear.LinearModel.worded", SUMMED)(self._sum_word)

    def probabilities(self, groups: Iterable[tuple[str, ...]]) -> list[float]:
        """Softmax of the bias and the summed weights of the features in ``groups``.

        Repeats count (`progsum.judge._features.chunks`); a group is summed once and remembered.
        """
        return self._softmax([self.bias, *map(self._summed, groups)])

    def read(self, read: Reading, rest: tuple[str, ...]) -> list[float]:
        """`probabilities` of the `progsum.judge._features.chunks` of ``read``.

        ``rest`` is its `progsum.judge._features.sentence_features`. A word's group is
        remembered by the word, so a known word costs one lookup of a short string.
        """
        return self._softmax(
            [
                self.bias,
                *map(self._worded, read.tokens),
                self._summed(rest),
                self._summed(read.previous),
            ]
        )

    def _softmax(self, rows: list[tuple[float, ...]]) -> list[float]:
        # one sum per class, left to right from the bias: the bits of a running total, in C
        total = [sum(column) for column in zip(*rows, strict=True)]
        top = max(total)
        exps = [math.exp(t - top) for t in total]
        norm = sum(exps)
        return [e / norm for e in exps]

    def _sum(self, group: tuple[str, ...]) -> tuple[float, ...]:
        """The summed weights of the features of ``group`` (0 for a feature the model lacks)."""
        rows = [row for row in map(self.weights.get, group) if row is not None]
        if not rows:
            return self._zero
        return tuple(sum(column) for column in zip(*rows, strict=True))

    def _sum_word(self, token: str) -> tuple[float, ...]:
        """`_sum` of the features of one word (`progsum.judge._features.word_features`)."""
        return self._sum(word_features(token))

    @property
    def _zero(self) -> tuple[float, ...]:
        return (0.0,) * len(self.classes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinearModel:
        """The model a model file's section describes."""
        return cls(data["classes"], data["bias"], data["weights"])


def load_model(path: Path = MODEL_PATH) -> tuple[LinearModel, LinearModel, Mapping[str, Any]]:
    """The label model, the modality model and the metadata of the model file at ``path``.

    Read once per file however its path is spelled (the weights take about 10 MB).

    Raises:
        ConfigError: the file is missing, not a judge model, or trained on other features.
    """
    return _load(Path(path).resolve())


@functools.cache
def _load(path: Path) -> tuple[LinearModel, LinearModel, Mapping[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"cannot read the judge model {path}: {error}; reinstall progsum or retrain it with "
            "python bench/judge_train.py"
        ) from error
    if data.get("feature_version") != FEATURE_VERSION:
        raise ConfigError(
            f"the judge model {path} was trained on feature version "
            f"{data.get('feature_version')!r}, this progsum reads version {FEATURE_VERSION}; "
            "retrain it with python bench/judge_train.py"
        )
    labels = LinearModel.from_dict(data["labels"])
    if set(labels.classes) != set(LABELS):
        raise ConfigError(f"the judge model {path} has classes {labels.classes}, not {LABELS}")
    return labels, LinearModel.from_dict(data["modality"]), data.get("meta", {})


def allowed(label: str, context: Context, sentence: str = "") -> bool:
    """Whether ``label`` can be said of ``sentence`` in ``context`` at all (module docstring)."""
    return _allowed(label, context.author, context.kind, asked=_asks(sentence))


def _asks(sentence: str) -> bool:
    """Whether ``sentence`` ends in a question mark (closing quotes and brackets aside)."""
    return sentence.rstrip(" \"')]").endswith(("?", "\uff1f"))


def _allowed(label: str, author: str, kind: str, *, asked: bool) -> bool:
    if author == "tool":
        return label == "machine"
    if label in ASKED_NEVER and asked:
        return False
    if label in PERSON_ONLY and author != "user":
        return False
    return not (label in AGENT_ONLY and kind == "chat")


class LinearJudge:
    """The shipped judge (`progsum.judge.Judge`): the corpus's labels from its trained weights.

    Args:
        path: Another model file trained by ``bench/judge_train.py`` (default: the shipped one).
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self._labels, self._modality, self.meta = load_model(Path(path) if path else MODEL_PATH)
        self._threshold = float(self.meta.get("rule_threshold", 0.0))
        self._cached = memoized("progsum.judge._linear.LinearJudge.judged", JUDGED)(self._judged)
        self._read = memoized("progsum.judge._linear.LinearJudge.read", JUDGED)(self._verdict)

    def sentences(self, text: str) -> tuple[str, ...]:
        """The shipped segmenter's sentences (`progsum.judge._segment`)."""
        return sentences(text)

    def judge(self, sentence: str, context: Context) -> Judgement:
        """The label of ``sentence`` in ``context`` (remembered: a sentence is asked often).

        Remembered by what the judgement reads of the context (its author, kind and previous
        message), so a context differing in speaker or day only is the same question.
        """
        if context.author == "tool":
            return _MACHINE
        return self._cached(sentence, context.author, context.kind, context.previous)

    def _judge(self, sentence: str, context: Context) -> Judgement:
        """`judge` without its memory of sentences (the memory of readings stays)."""
        if context.author == "tool":
            return _MACHINE
        return self._judged(sentence, context.author, context.kind, context.previous)

    def _judged(self, sentence: str, author: str, kind: str, previous: str) -> Judgement:
        """The verdict on the `Reading` of ``sentence`` (`progsum.judge._features.reading`)."""
        return self._read(reading_after(sentence, author, previous), kind, _asks(sentence))

    def _verdict(self, read: Reading, kind: str, asked: bool) -> Judgement:
        """The judgement of every sentence with this reading, in a conversation of ``kind``."""
        rest = sentence_features(read)
        probs = self._labels.read(read, rest)
        ranked = sorted((p, label) for p, label in zip(probs, self._labels.classes, strict=True))
        for p, label in reversed(ranked):
            if not _allowed(label, read.author, kind, asked=asked):
                continue
            if label == "rule" and p < self._threshold:
                continue
            label = cast("Label", label)
            if label != "rule":
                return Judgement(label, None, p)
            mods = self._modality.read(read, rest)
            best = max(range(len(mods)), key=mods.__getitem__)
            modality = cast("Modality", self._modality.classes[best])
            return Judgement("rule", modality, p)
        return Judgement("chatter", None, 0.0)


_MACHINE = Judgement("machine")
"""Every verdict on a tool's text."""
