"""`Index`: an in-memory inverted index of messages by log index, grown one message at a time.

It serves the state's own log (the default when no store ranks) and `MemoryArchive`. Adding a
message costs its terms. A search costs a binary search per query term and searched range (a
term's document frequency), and the documents of its selective terms (at most
`progsum.recall.rank.SELECTIVE` each), never a pass over the history.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Iterable, Sequence

from progsum.recall.rank import SELECTIVE, Candidate, Stats, rank
from progsum.recall.terms import term_counts

__all__ = ["Index", "Ranges"]

Ranges = tuple[tuple[int, int], ...]
"""Log ranges ``[start, end)`` a search covers, ascending and disjoint."""


class Index:
    """Term postings and lengths of documents keyed by log index; thread-safe."""

    def __init__(self) -> None:
        self._postings: dict[str, dict[int, int]] = {}
        self._sorted: dict[str, list[int]] = {}
        """Each term's documents, ascending."""
        self._lengths: dict[int, int] = {}
        self._order: list[int] = []
        self._totals: list[int] | None = [0]
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._lengths)

    def __contains__(self, index: object) -> bool:
        return index in self._lengths

    def add(self, index: int, text: str) -> None:
        """Index ``text`` as document ``index``; a document already indexed is kept as it is."""
        counts = term_counts(text)
        with self._lock:
            if index in self._lengths:
                return
            for term, count in counts.items():
                self._postings.setdefault(term, {})[index] = count
                held = self._sorted.setdefault(term, [])
                if not held or index > held[-1]:
                    held.append(index)
                else:
                    bisect.insort(held, index)
            length = sum(counts.values())
            self._lengths[index] = length
            if not self._order or index > self._order[-1]:
                self._order.append(index)
                if self._totals is not None:
                    self._totals.append(self._totals[-1] + length)
            else:
                bisect.insort(self._order, index)
                self._totals = None  # rebuilt by the next search

    def remove(self, index: int) -> None:
        """Forget document ``index`` (nothing when it is not indexed)."""
        with self._lock:
            length = self._lengths.pop(index, None)
            if length is None:
                return
            for term, postings in self._postings.items():
                if postings.pop(index, None) is not None:
                    self._sorted[term].remove(index)
            self._order.remove(index)
            self._totals = None

    def search(
        self, query: Sequence[str], within: Ranges, *, limit: int
    ) -> list[tuple[int, float]]:
        """The best ``limit`` documents in ``within`` for ``query`` terms (`rank`'s order)."""
        with self._lock:
            stats = self._stats(within)
            frequency: dict[str, int] = {}
            spans: dict[str, list[tuple[int, int]]] = {}
            for term in dict.fromkeys(query):
                held = self._sorted.get(term, [])
                spans[term] = [
                    (bisect.bisect_left(held, start), bisect.bisect_left(held, end))
                    for start, end in within
                ]
                frequency[term] = sum(high - low for low, high in spans[term])
            found: dict[int, dict[str, int]] = {}
            for term, df in frequency.items():
                if not 0 < df <= SELECTIVE:
                    continue
                held = self._sorted[term]
                for low, high in spans[term]:
                    for index in held[low:high]:
                        if index not in found:
                            found[index] = self._counts(index, frequency)
            candidates = [Candidate(i, counts, self._lengths[i]) for i, counts in found.items()]
        return rank(query, candidates, stats, limit=limit, frequency=frequency)

    def _counts(self, index: int, terms: Iterable[str]) -> dict[str, int]:
        """Document ``index``'s count of each of ``terms`` it holds."""
        postings = self._postings
        counts: dict[str, int] = {}
        for term in terms:
            count = postings.get(term, {}).get(index)
            if count:
                counts[term] = count
        return counts

    def _stats(self, within: Ranges) -> Stats:
        totals = self._totals
        if totals is None:
            lengths = (self._lengths[i] for i in self._order)
            totals = self._totals = [0, *itertools.accumulate(lengths)]
        documents = terms = 0
        for start, end in within:
            low = bisect.bisect_left(self._order, start)
            high = bisect.bisect_left(self._order, end)
            documents += high - low
            terms += totals[high] - totals[low]
        return Stats(documents, terms)
