"""Okapi BM25 over folded messages, computed the same way whichever store holds them.

A store (or an in-memory `progsum.recall._index.Index`) finds the *candidates*: every document
of the searched set that holds at least one query term, with its term counts and length. With
the set's size and total length, that is all BM25 needs, and `rank` computes it in Python from
those integers, so every store orders the same documents the same way, to the last bit. The
in-memory index skips the candidates and scores through the same functions (`weights`, `norm`,
`summed`, `best`), a term at a time: each document's shares are added in the same order.

Only a *selective* term picks documents: one that at most `SELECTIVE` documents of the set hold.
A term in more messages than that cannot tell which of them a question is about (a block holds a
handful of excerpts); it still adds to the score of the documents the selective terms pick. So
a search reads at most `SELECTIVE` documents per query term, however long the history.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "K1",
    "SELECTIVE",
    "B",
    "Candidate",
    "Stats",
    "best",
    "norm",
    "rank",
    "summed",
    "weights",
]

K1 = 1.2
"""Term-frequency saturation (the usual BM25 value)."""
B = 0.75
"""Length normalisation (the usual BM25 value)."""
SELECTIVE = 128
"""Most documents of the searched set a query term may be in and still pick documents."""


@dataclass(frozen=True, slots=True)
class Stats:
    """The searched set: how many documents, and how many terms they hold in all."""

    documents: int
    terms: int

    @property
    def average(self) -> float:
        """Mean document length in terms (1 for an empty set, to avoid dividing by 0)."""
        return self.terms / self.documents if self.documents and self.terms else 1.0


@dataclass(frozen=True, slots=True)
class Candidate:
    """A document holding a query term: its log index, its count of each query term, its length."""

    index: int
    counts: Mapping[str, int]
    """Each query term the document holds, with how often (at least 1): no other term."""
    length: int


def rank(
    query: Sequence[str],
    candidates: Iterable[Candidate],
    stats: Stats,
    *,
    limit: int,
    frequency: Mapping[str, int] | None = None,
) -> list[tuple[int, float]]:
    """``(index, score)`` of the best ``limit`` candidates, best first; ties: the earlier message.

    ``candidates`` must hold every document of the set with a query term (the document
    frequencies are counted over them), unless ``frequency`` gives each query term's document
    frequency in the set; then they must hold every document with a selective term (`SELECTIVE`).
    """
    found = [c for c in candidates if c.counts]
    if frequency is None:
        frequency = {term: sum(1 for c in found if c.counts.get(term)) for term in query}
        total = max(stats.documents, len(found))
    else:
        total = stats.documents
    picking = {term for term in query if 0 < frequency.get(term, 0) <= SELECTIVE}
    weighted = weights(query, frequency, total)
    kept = [c for c in found if not picking.isdisjoint(c.counts)]
    postings: dict[str, list[tuple[int, int]]] = {term: [] for term, _ in weighted}
    for at, candidate in enumerate(kept):
        for term, tf in candidate.counts.items():
            pairs = postings.get(term)
            if pairs is not None and tf:
                pairs.append((at, tf))
    average = stats.average
    norms = [norm(c.length, average) for c in kept]
    return best([c.index for c in kept], summed(weighted, postings, norms), limit)


def weights(
    query: Sequence[str], frequency: Mapping[str, int], total: int
) -> list[tuple[str, float]]:
    """Each query term some document of the set holds, with its idf, in the query's order.

    A repeated query term is repeated here: every scorer sums a document's terms in this order,
    so every store computes the same score to the last bit. ``total`` is the set's size.
    """
    weight = {
        term: math.log(1 + (total - df + 0.5) / (df + 0.5))
        for term in query
        if (df := frequency.get(term, 0))
    }
    return [(term, weight[term]) for term in query if term in weight]


def norm(length: int, average: float) -> float:
    """BM25's length normalisation of ``length`` terms in a set whose mean is ``average``."""
    return K1 * (1 - B + B * length / average)


def summed(
    weighted: Sequence[tuple[str, float]],
    postings: Mapping[str, Sequence[tuple[int, int]]],
    norms: Sequence[float],
) -> list[float]:
    """The BM25 score of documents ``0 .. len(norms) - 1``, a term at a time.

    ``postings`` gives each term's ``(document, count)`` pairs, ``norms`` each document's `norm`.
    A pass per term of ``weighted`` adds its share to the documents holding it, so each document's
    shares are added in ``weighted``'s order, from 0.0, as a document at a time would add them:
    the same float. A term costs the documents that hold it, not every document.
    """
    scores = [0.0] * len(norms)
    saturation = K1 + 1
    for term, idf in weighted:
        for at, tf in postings.get(term, ()):
            scores[at] += idf * tf * saturation / (tf + norms[at])
    return scores


def best(indices: Sequence[int], scores: Sequence[float], limit: int) -> list[tuple[int, float]]:
    """``(index, score)`` of the best ``limit`` documents, best first; ties: the earlier message."""
    scored = sorted(zip(indices, scores, strict=True), key=lambda pair: (-pair[1], pair[0]))
    return scored[:limit]
