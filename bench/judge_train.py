"""Train the default judge on the labelled corpus and write ``progsum/judge/data/model.json``.

    python -m pip install -e ".[train]"   # scikit-learn, for training only
    python bench/judge_train.py            # compare the methods, write the winner
    python bench/judge_train.py --compare  # only print the comparison

Every method is fitted on the train split and judged on the held-back split (by conversation,
`tests/data/judge/corpus.jsonl`'s ``split``); hyper-parameters are chosen by cross-validation
grouped by conversation inside the train split, never on the held-back one. The written model is
a multinomial logistic regression over `progsum.judge.features` (the comparison in
docs/judge.md says why), with features seen in fewer than `MIN_COUNT` train sentences dropped
and weights rounded to `DIGITS` places, and a second one for a rule's modality. The rule
threshold is the one with the best out-of-fold rule F-beta on the train split (`RULE_BETA`).
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
from judge_corpus import context, load
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.naive_bayes import MultinomialNB
from sklearn.svm import LinearSVC

from progsum.judge.features import FEATURE_VERSION, features
from progsum.judge.judgement import LABELS, MODALITIES
from progsum.judge.linear import MODEL_PATH, allowed

MIN_COUNT = 2
DIGITS = 3
RULE_BETA = 1.0
C_GRID = (1.0, 4.0, 16.0)


def _all(_: str) -> bool:
    return True


def counts(row: dict[str, Any], keep: Callable[[str], bool] = _all) -> dict[str, float]:
    """A row's feature counts (those ``keep`` accepts)."""
    found = Counter(f for f in features(row["text"], context(row)) if keep(f))
    return {k: float(v) for k, v in found.items()}


def masked_predict(
    probs: np.ndarray,
    classes: Sequence[str],
    rows: Sequence[dict[str, Any]],
    threshold: float = 0.0,
) -> list[str]:
    """The most probable label each row's context allows (`progsum.judge.linear.allowed`)."""
    out = []
    for p, row in zip(probs, rows, strict=True):
        ctx = context(row)
        order = np.argsort(-p)
        label = "chatter"
        for n in order:
            name = classes[n]
            if allowed(name, ctx, row["text"]) and not (name == "rule" and p[n] < threshold):
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
    """The C with the best grouped-CV accuracy on train, and its out-of-fold probabilities."""
    best: tuple[float, float, np.ndarray] | None = None
    y_arr = np.array(y)
    for c in C_GRID:
        oof = np.zeros((x.shape[0], len(LABELS)))
        for train, test in GroupKFold(n_splits=5).split(x, y_arr, groups):
            model = _fit_lr(x[train], y_arr[train], c)
            probs = model.predict_proba(x[test])
            for n, name in enumerate(model.classes_):
                oof[test, LABELS.index(name)] = probs[:, n]
        accuracy = float(np.mean(np.array(LABELS)[oof.argmax(1)] == y_arr))
        if best is None or accuracy > best[1]:
            best = (c, accuracy, oof)
    if best is None:
        raise ValueError(C_GRID)
    return best[0], best[2]


def rule_threshold(oof: np.ndarray, y: Sequence[str], rows: Sequence[dict[str, Any]]) -> float:
    """The threshold with the best out-of-fold rule F-beta (beta `RULE_BETA`)."""
    best = (-1.0, 0.0)
    for threshold in np.arange(0.0, 0.96, 0.02):
        predicted = masked_predict(oof, LABELS, rows, float(threshold))
        tp = sum(t == "rule" and p == "rule" for t, p in zip(y, predicted, strict=True))
        said, real = predicted.count("rule"), list(y).count("rule")
        if not tp:
            continue
        precision, recall = tp / said, tp / real
        b2 = RULE_BETA**2
        score = (1 + b2) * precision * recall / (b2 * precision + recall)
        if score > best[0] + 1e-9:
            best = (score, round(float(threshold), 2))
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
        threshold = rule_threshold(oof, y, train)
        reports.append(
            report(
                f"logistic regression, {name} (C={c}, rule>={threshold})",
                truth,
                masked_predict(_ordered(lr, xt), LABELS, test, threshold),
            )
        )
    shipped = export(train, c, threshold)
    return reports, shipped


def _ordered(model: Any, x: Any) -> np.ndarray:
    return _reorder(model.predict_proba(x), model.classes_)


def _reorder(scores: np.ndarray, classes: Sequence[str]) -> np.ndarray:
    out = np.full((scores.shape[0], len(LABELS)), -1e9)
    for n, name in enumerate(classes):
        out[:, LABELS.index(name)] = scores[:, n]
    return out


def export(train: list[dict[str, Any]], c: float, threshold: float) -> dict[str, Any]:
    """The shipped model: label and modality weights over features seen in `MIN_COUNT`+ rows."""
    seen = Counter(f for r in train for f in set(features(r["text"], context(r))))
    keep = lambda f: seen[f] >= MIN_COUNT  # noqa: E731
    vec = DictVectorizer()
    x = vec.fit_transform([counts(r, keep) for r in train])
    y = [r["label"] for r in train]
    labels = _weights(_fit_lr(x, y, c), vec, LABELS)
    rules = [r for r in train if r["label"] == "rule"]
    mvec = DictVectorizer()
    mx = mvec.fit_transform([counts(r, keep) for r in rules])
    modality = _weights(_fit_lr(mx, [r["modality"] for r in rules], 2.0), mvec, MODALITIES)
    return {
        "feature_version": FEATURE_VERSION,
        "meta": {
            "rule_threshold": threshold,
            "C": c,
            "train_rows": len(train),
            "min_count": MIN_COUNT,
        },
        "labels": labels,
        "modality": modality,
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
