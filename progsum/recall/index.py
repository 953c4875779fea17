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
from array import array
from collections.abc import Sequence

from progsum.recall.rank import SELECTIVE, Candidate, Stats, rank
from progsum.recall.terms import term_counts

__all__ = ["Index", "Ranges"]

_NONE: array[int] = array("q")

REMEMBERED_TERM = 1_024
"""Most documents a common term may be in for a search to remember its counts (`Index`)."""
REMEMBERED_POSTINGS = 32_768
"""Postings of common terms an index remembers the counts of, at most (about 3 MB)."""

Ranges = tuple[tuple[int, int], ...]
"""Log ranges ``[start, end)`` a search covers, ascending and disjoint."""


class Index:
    """Term postings and lengths of documents keyed by log index; thread-safe."""

    def __init__(self) -> None:
        self._documents: dict[str, array[int]] = {}
        """Each term's documents, ascending (machine integers: 8 bytes a posting)."""
        self._counts_of: dict[str, array[int]] = {}
        """How often the term occurs in each of those documents, in the same order."""
        self._lengths: dict[int, int] = {}
        self._order: list[int] = []
        self._totals: list[int] | None = [0]
        self._common: dict[tuple[str, Ranges], dict[int, int]] = {}
        """`_remembered` counts; emptied when a document is added or removed."""
        self._held = 0
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
            self._forget()
            for term, count in counts.items():
                held = self._documents.get(term)
                if held is None:
                    self._documents[term] = array("q", (index,))
                    self._counts_of[term] = array("q", (count,))
                elif index > held[-1]:
                    held.append(index)
                    self._counts_of[term].append(count)
                else:
                    at = bisect.bisect_left(held, index)
                    held.insert(at, index)
                    self._counts_of[term].insert(at, count)
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
            self._forget()
            for term, held in self._documents.items():
                at = bisect.bisect_left(held, index)
                if at < len(held) and held[at] == index:
                    del held[at]
                    del self._counts_of[term][at]
            self._order.remove(index)
            self._totals = None

    def _forget(self) -> None:
        if self._common:
            self._common.clear()
            self._held = 0

    def search(
        self, query: Sequence[str], within: Ranges, *, limit: int
    ) -> list[tuple[int, float]]:
        """The best ``limit`` documents in ``within`` for ``query`` terms (`rank`'s order)."""
        with self._lock:
            stats = self._stats(within)
            frequency: dict[str, int] = {}
            spans: dict[str, list[tuple[int, int]]] = {}
            for term in dict.fromkeys(query):
                held = self._documents.get(term, _NONE)
                spans[term] = [
                    (bisect.bisect_left(held, start), bisect.bisect_left(held, end))
                    for start, end in within
                ]
                frequency[term] = sum(high - low for low, high in spans[term])
            found: dict[int, dict[str, int]] = {}
            common: list[str] = []
            for term, df in frequency.items():
                if df > SELECTIVE:
                    common.append(term)
                    continue
                held, tallies = self._documents.get(term, _NONE), self._counts_of.get(term, _NONE)
                for low, high in spans[term]:
                    for index, tally in zip(held[low:high], tallies[low:high], strict=True):
                        found.setdefault(index, {})[term] = tally
            if not found:  # no selective term is in the set: nothing to rank
                return []
            for term in common:  # counted in the documents picked
                counted = self._remembered(term, within, spans[term], frequency[term])
                if counted is None:
                    self._count(term, spans[term], found)
                    continue
                for index, counts in found.items():
                    remembered = counted.get(index)
                    if remembered is not None:
                        counts[term] = remembered
            candidates = [Candidate(i, c, self._lengths[i]) for i, c in found.items()]
        return rank(query, candidates, stats, limit=limit, frequency=frequency)

    def _count(
        self, term: str, spans: Sequence[tuple[int, int]], found: dict[int, dict[str, int]]
    ) -> None:
        """Add ``term``'s count to each document of ``found`` that holds it, within ``spans``.

        A binary search per document, in the term's postings of the searched ranges: what a
        term held by many documents costs is what the rarer terms picked, not its frequency.
        """
        held, tallies = self._documents[term], self._counts_of[term]
        for low, high in spans:
            if low == high:
                continue
            first, last = held[low], held[high - 1]
            for index, counts in found.items():
                if first <= index <= last:
                    at = bisect.bisect_left(held, index, low, high)
                    if held[at] == index:
                        counts[term] = tallies[at]

    def _remembered(
        self, term: str, within: Ranges, spans: Sequence[tuple[int, int]], size: int
    ) -> dict[int, int] | None:
        """``term``'s count per document of ``within`` when few documents hold it, remembered.

        A common term that is not too common recurs in question after question, and the
        searched ranges stay the same until the next fold; the counts of at most
        `REMEMBERED_POSTINGS` postings are kept, until the index changes. None for a term in more
        than `REMEMBERED_TERM` documents (a binary search per picked document is cheaper).
        ``size`` is how many documents of ``within`` hold the term (its ``spans``' postings).
        """
        key = (term, within)
        found = self._common.get(key)
        if found is not None:
            return found
        if size > REMEMBERED_TERM:
            return None
        if self._held + size > REMEMBERED_POSTINGS:
            self._forget()
        held, tallies = self._documents[term], self._counts_of[term]
        found = {}
        for low, high in spans:
            found.update(zip(held[low:high], tallies[low:high], strict=True))
        self._common[key] = found
        self._held += size
        return found

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
