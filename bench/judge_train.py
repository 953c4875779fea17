"""Train the default judge on the labelled corpus and write ``progsum/judge/data/model.json``.

    python -m pip install -e ".[train]"   # scikit-learn, for training only
    python bench/judge_train.py            # compare the methods, write the winner
    python bench/judge_train.py --compare  # only print the comparison

Every method is fitted on the train split and judged on the held-back split (by conversation,
`tests/data/judge/corpus.jsonl`'s ``split``); hyper-parameters are chosen by cross-validation
grouped by conversation inside the train split, never on the held-back one. The written model is
two multinomial logistic regressions, one over all of `progsum.judge._features` and one over
its word features only, their logits mixed in the share with the best grouped-CV accuracy
(`MIX_GRID`; a mix of logits is one linear model, so one weight table ships; the comparison in
docs/judge.md says why), with features seen in fewer than `MIN_COUNT` train sentences dropped
and weights rounded to `DIGITS` places, and a second one for a rule's modality. The rule
threshold is the one with the best out-of-fold rule precision on the train split among those
that keep its out-of-fold rule recall at `RULE_RECALL` (the gate's floor, docs/judge.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# ruff: noqa: ANN401 - scikit-learn's matrices and models are untyped
import numpy as np
from judge_corpus import context, load, sentence
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.naive_bayes import MultinomialNB
from sklearn.svm import LinearSVC

from progsum.judge._features import FEATURE_VERSION, features
from progsum.judge._judgement import LABELS, MODALITIES
from progsum.judge._linear import MODEL_PATH, allowed

MIN_COUNT = 2
DIGITS = 3
RULE_RECALL = 0.85
C_GRID = (1.0, 4.0, 16.0)
MIX_GRID = (1.0, 0.7, 0.5, 0.3)


def _all(_: str) -> bool:
    return True


def counts(row: dict[str, Any], keep: Callable[[str], bool] = _all) -> dict[str, float]:
    """A row's feature counts (those ``keep`` accepts)."""
    found = Counter(f for f in features(sentence(row), context(row)) if keep(f))
    return {k: float(v) for k, v in found.items()}


def masked_predict(
    probs: np.ndarray,
    classes: Sequence[str],
    rows: Sequence[dict[str, Any]],
    threshold: float = 0.0,
) -> list[str]:
    """The most probable label each row's context allows (`progsum.judge._linear.allowed`)."""
    out = []
    for p, row in zip(probs, rows, strict=True):
        ctx = context(row)
        order = np.argsort(-p)
        label = "chatter"
        for n in order:
            name = classes[n]
            if allowed(name, ctx, sentence(row)) and not (name == "rule" and p[n] < threshold):
                label = name
                break
        out.append(label)
    return out


def _int32(x: Any) -> Any:
    """``x`` with 32-bit sparse indices (LinearSVC refuses 64-bit ones)."""
    x = x.tocsr()
    x.indices = x.indices.astype(np.int32)
    x.indptr = x.indptr.astype(np.int32)
    return x


def _fit_lr(x: Any, y: Sequence[str], c: float) -> LogisticRegression:
    model = LogisticRegression(C=c, max_iter=3_000, class_weight="balanced")
    return model.fit(x, y)


def choose_c(x: Any, y: Sequence[str], groups: Sequence[str]) -> tuple[float, np.ndarray]:
    """The C with the best grouped-CV accuracy on train, and its out-of-fold logits."""
    best: tuple[float, float, np.ndarray] | None = None
    y_arr = np.array(y)
    for c in C_GRID:
        oof = np.zeros((x.shape[0], len(LABELS)))
        for train, test in GroupKFold(n_splits=5).split(x, y_arr, groups):
            model = _fit_lr(x[train], y_arr[train], c)
            oof[test] = _logits(model, x[test])
        accuracy = float(np.mean(np.array(LABELS)[oof.argmax(1)] == y_arr))
        if best is None or accuracy > best[1]:
            best = (c, accuracy, oof)
    if best is None:
        raise ValueError(C_GRID)
    return best[0], best[2]


def _logits(model: LogisticRegression, x: Any) -> np.ndarray:
    """The model's logits per label of `LABELS` (a label it never saw: -30)."""
    return _reorder(model.decision_function(x), model.classes_, missing=-30.0)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax."""
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return probabilities


def choose_mix(full: np.ndarray, words: np.ndarray, y: Sequence[str]) -> tuple[float, np.ndarray]:
    """The full model's share of the logits with the best out-of-fold accuracy, and the mix."""
    y_arr = np.array(y)
    scored = []
    for mix in MIX_GRID:
        probs = softmax(mix * full + (1 - mix) * words)
        scored.append((float(np.mean(np.array(LABELS)[probs.argmax(1)] == y_arr)), mix, probs))
    _, mix, probs = max(scored, key=lambda t: t[0])
    return mix, probs


def rule_threshold(oof: np.ndarray, y: Sequence[str], rows: Sequence[dict[str, Any]]) -> float:
    """The threshold with the best out-of-fold rule precision at recall `RULE_RECALL` or more."""
    best = (-1.0, 0.0)
    real = list(y).count("rule")
    for threshold in np.arange(0.0, 0.96, 0.02):
        predicted = masked_predict(oof, LABELS, rows, float(threshold))
        tp = sum(t == "rule" and p == "rule" for t, p in zip(y, predicted, strict=True))
        if not tp or tp / real < RULE_RECALL:
            continue
        precision = tp / predicted.count("rule")
        if precision > best[0] + 1e-9:
            best = (precision, round(float(threshold), 2))
    return best[1]


def report(name: str, truth: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    """Accuracy, macro-F1 and per-label precision/recall of one method on the held-back split."""
    per = {}
    for label in LABELS:
        tp = sum(t == label and p == label for t, p in zip(truth, predicted, strict=True))
        said = sum(p == label for p in predicted)
        real = sum(t == label for t in truth)
        precision = tp / said if said else 1.0
        recall = tp / real if real else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per[label] = {"precision": precision, "recall": recall, "f1": f1, "support": real}
    present = [label for label in LABELS if per[label]["support"]]
    macro = sum(per[label]["f1"] for label in present) / len(present)
    accuracy = sum(t == p for t, p in zip(truth, predicted, strict=True)) / len(truth)
    return {"method": name, "accuracy": accuracy, "macro_f1": macro, "labels": per}


def _words_only(name: str) -> bool:
    return name.startswith(("w:", "b:", "f:", "f2:")) or name == "bias"


def compare(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Fit every method on train, judge on held-back; return the reports and the model to ship."""
    train = [r for r in rows if r["split"] == "train"]
    test = [r for r in rows if r["split"] == "test"]
    y, truth = [r["label"] for r in train], [r["label"] for r in test]
    groups = [r["conversation"] for r in train]
    reports = []
    fitted: dict[str, tuple[float, np.ndarray, np.ndarray]] = {}
    for name, keep in (("words", _words_only), ("words+chars+context", _all)):
        vec = DictVectorizer()
        x = vec.fit_transform([counts(r, keep) for r in train])
        xt = vec.transform([counts(r, keep) for r in test])
        nb = MultinomialNB(alpha=0.3).fit(x, y)
        reports.append(
            report(f"naive Bayes, {name}", truth, masked_predict(_ordered(nb, xt), LABELS, test))
        )
        svm = LinearSVC(C=0.5).fit(_int32(x), y)
        scores = svm.decision_function(_int32(xt))
        reports.append(
            report(
                f"linear SVM, {name}",
                truth,
                masked_predict(_reorder(scores, svm.classes_), LABELS, test),
            )
        )
        c, oof = choose_c(x, y, groups)
        lr = _fit_lr(x, y, c)
        threshold = rule_threshold(softmax(oof), y, train)
        reports.append(
            report(
                f"logistic regression, {name} (C={c}, rule>={threshold})",
                truth,
                masked_predict(_ordered(lr, xt), LABELS, test, threshold),
            )
        )
        fitted[name] = (c, oof, _logits(lr, xt))
    (c_words, oof_words, test_words), (c_full, oof_full, test_full) = fitted.values()
    mix, oof_mixed = choose_mix(oof_full, oof_words, y)
    threshold = rule_threshold(oof_mixed, y, train)
    mixed = softmax(mix * test_full + (1 - mix) * test_words)
    reports.append(
        report(
            f"logistic regression, both, logits {mix}:{1 - mix:.1f} (rule>={threshold})",
            truth,
            masked_predict(mixed, LABELS, test, threshold),
        )
    )
    shipped = export(train, (c_full, c_words, mix), threshold)
    return reports, shipped


def _ordered(model: Any, x: Any) -> np.ndarray:
    return _reorder(model.predict_proba(x), model.classes_)


def _reorder(scores: np.ndarray, classes: Sequence[str], missing: float = -1e9) -> np.ndarray:
    out = np.full((scores.shape[0], len(LABELS)), missing)
    for n, name in enumerate(classes):
        out[:, LABELS.index(name)] = scores[:, n]
    return out


def export(
    train: list[dict[str, Any]], fit: tuple[float, float, float], threshold: float
) -> dict[str, Any]:
    """The shipped model: label and modality weights over features seen in `MIN_COUNT`+ rows.

    ``fit`` is ``(C of the full model, C of the words model, the full model's share)``: the
    label weights are the two models' weights mixed in that share (their logits, averaged, are
    one linear model), so inference reads one table.
    """
    c_full, c_words, mix = fit
    seen = Counter(f for r in train for f in set(features(sentence(r), context(r))))

    def keep(feature: str) -> bool:
        return seen[feature] >= MIN_COUNT

    def keep_words(feature: str) -> bool:
        return keep(feature) and _words_only(feature)

    y = [r["label"] for r in train]
    parts = []
    for c, share, kept in ((c_full, mix, keep), (c_words, 1 - mix, keep_words)):
        vec = DictVectorizer()
        x = vec.fit_transform([counts(r, kept) for r in train])
        parts.append((share, _fit_lr(x, y, c), vec))
    labels = _mixed_weights(parts, LABELS)
    rules = [r for r in train if r["label"] == "rule"]
    mvec = DictVectorizer()
    mx = mvec.fit_transform([counts(r, keep) for r in rules])
    modality = _weights(_fit_lr(mx, [r["modality"] for r in rules], 2.0), mvec, MODALITIES)
    return {
        "feature_version": FEATURE_VERSION,
        "meta": {
            "rule_threshold": threshold,
            "C": c_full,
            "C_words": c_words,
            "mix": mix,
            "train_rows": len(train),
            "min_count": MIN_COUNT,
        },
        "labels": labels,
        "modality": modality,
    }


def _mixed_weights(
    parts: Sequence[tuple[float, LogisticRegression, DictVectorizer]], classes: Sequence[str]
) -> dict[str, Any]:
    """``share * weights`` summed over multinomial models that all know every class."""
    bias = np.zeros(len(classes))
    weights: dict[str, np.ndarray] = {}
    for share, model, vec in parts:
        order = [list(model.classes_).index(name) for name in classes]
        coef = model.coef_[order]
        bias += share * model.intercept_[order]
        for j, name in enumerate(vec.get_feature_names_out()):
            weights[str(name)] = weights.get(str(name), np.zeros(len(classes))) + share * coef[:, j]
    rounded = {k: [round(float(v), DIGITS) for v in row] for k, row in weights.items()}
    return {
        "classes": list(classes),
        "bias": [round(float(b), DIGITS) for b in bias],
        "weights": dict(sorted((k, row) for k, row in rounded.items() if any(row))),
    }


def _weights(
    model: LogisticRegression, vec: DictVectorizer, classes: Sequence[str]
) -> dict[str, Any]:
    order = [
        list(model.classes_).index(name) if name in model.classes_ else None for name in classes
    ]
    binary = len(model.classes_) == 2  # noqa: PLR2004 - scikit-learn's two-class shape
    coef = np.vstack([-model.coef_[0], model.coef_[0]]) if binary else model.coef_
    bias = np.array([-model.intercept_[0], model.intercept_[0]]) if binary else model.intercept_
    weights = {}
    for j, name in enumerate(vec.get_feature_names_out()):
        row = [round(float(coef[n, j]), DIGITS) if n is not None else 0.0 for n in order]
        if any(row):
            weights[str(name)] = row
    return {
        "classes": list(classes),
        "bias": [round(float(bias[n]), DIGITS) if n is not None else -30.0 for n in order],
        "weights": dict(sorted(weights.items())),
    }


def main(argv: list[str] | None = None) -> int:
    """Compare the methods and write the winner."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", action="store_true", help="print the comparison only")
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    args = parser.parse_args(argv)
    rows = load()
    reports, shipped = compare(rows)
    for r in reports:
        rule = r["labels"]["rule"]
        print(
            f"{r['method']:<62} acc {r['accuracy']:.3f}  macro-F1 {r['macro_f1']:.3f}  "
            f"rule P {rule['precision']:.3f} R {rule['recall']:.3f}"
        )
    if not args.compare:
        args.out.write_text(json.dumps(shipped, separators=(",", ":"), sort_keys=True) + "\n")
        print(
            f"wrote {args.out} ({args.out.stat().st_size // 1024} KB, "
            f"{len(shipped['labels']['weights'])} features)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
