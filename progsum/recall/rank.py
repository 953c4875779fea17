"""Okapi BM25 over folded messages, computed the same way whichever store holds them.

A store (or an in-memory `progsum.recall.index.Index`) finds the *candidates*: every document
of the searched set that holds at least one query term, with its term counts and length. With
the set's size and total length, that is all BM25 needs, and `rank` computes it in Python from
those integers, so every store orders the same documents the same way, to the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["K1", "B", "Candidate", "Stats", "rank"]

K1 = 1.2
"""Term-frequency saturation (the usual BM25 value)."""
B = 0.75
"""Length normalisation (the usual BM25 value)."""


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
    length: int


def rank(
    query: Sequence[str], candidates: Iterable[Candidate], stats: Stats, *, limit: int
) -> list[tuple[int, float]]:
    """``(index, score)`` of the best ``limit`` candidates, best first; ties: the earlier message.

    ``candidates`` must hold every document of the set with a query term (the document
    frequencies are counted over them).
    """
    found = [c for c in candidates if any(c.counts.get(term) for term in query)]
    frequency = {term: sum(1 for c in found if c.counts.get(term)) for term in query}
    total = max(stats.documents, len(found))
    weight = {
        term: math.log(1 + (total - df + 0.5) / (df + 0.5)) for term, df in frequency.items() if df
    }
    average = stats.average
    scored = []
    for candidate in found:
        norm = K1 * (1 - B + B * candidate.length / average)
        score = 0.0
        for term in query:  # a fixed order: the same sum, to the last bit, in every store
            tf = candidate.counts.get(term, 0)
            if tf:
                score += weight[term] * tf * (K1 + 1) / (tf + norm)
        scored.append((candidate.index, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:limit]
