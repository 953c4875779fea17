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

from progsum.recall.rank import SELECTIVE, Stats, best, norm, summed, weights
from progsum.recall.terms import term_counts

__all__ = ["Index", "Ranges"]

_NONE: array[int] = array("q")

REMEMBERED_TERM = 1_024
"""Most documents a common term may be in for a search to remember its counts (`Index`)."""
REMEMBERED_POSTINGS = 32_768
"""Postings of common terms an index remembers the counts of, at most (about 3 MB)."""

Ranges = tuple[tuple[int, int], ...]
"""Log ranges ``[start, end)`` a search covers, ascending and disjoint."""
_Asked = tuple[tuple[str, ...], Ranges, int]
"""What a search is asked: its query terms, its ranges and its limit."""


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
        self._last: tuple[_Asked, list[tuple[int, float]]] | None = None
        """The last search (query, ranges, limit) and its result; None once the index changes."""
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
            self._last = None
            documents, counts_of = self._documents, self._counts_of
            after = not self._order or index > self._order[-1]
            for term, count in counts.items():
                held = documents.get(term)
                if held is None:
                    documents[term] = array("q", (index,))
                    counts_of[term] = array("q", (count,))
                elif after:  # after every indexed document, so after each of the term's
                    held.append(index)
                    counts_of[term].append(count)
                else:
                    at = bisect.bisect_left(held, index)
                    held.insert(at, index)
                    counts_of[term].insert(at, count)
            length = sum(counts.values())
            self._lengths[index] = length
            if after:
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
            self._last = None
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
        """The best ``limit`` documents in ``within`` for ``query`` terms (`rank`'s order).

        Scored as `rank` scores (`weights`, `summed`, `best`), without a `Candidate` per
        document: the selective terms' postings name the documents and give their counts, and
        only the commoner terms are looked up, in those documents. A query none of whose terms
        picks a document costs its terms' document frequencies and nothing more. The last
        search is remembered until the index changes: the engine asks again, turn after turn,
        for a question that recalled nothing.
        """
        key = (tuple(query), within, limit)
        with self._lock:
            last = self._last
            if last is not None and last[0] == key:
                return list(last[1])
            found = self._search(key[0], within, limit)
            self._last = (key, found)
        return list(found)

    def _search(
        self, query: tuple[str, ...], within: Ranges, limit: int
    ) -> list[tuple[int, float]]:
        """`search`, under the lock, not remembered."""
        frequency: dict[str, int] = {}
        spans: dict[str, list[tuple[int, int]]] = {}
        documents = self._documents
        left = bisect.bisect_left
        for term in dict.fromkeys(query):
            held = documents.get(term, _NONE)
            spans[term] = found = []
            df = 0
            for start, end in within:
                low = left(held, start)
                high = left(held, end)
                found.append((low, high))
                df += high - low
            frequency[term] = df
        picking = [term for term, df in frequency.items() if 0 < df <= SELECTIVE]
        if not picking:  # no selective term is in the set: nothing to rank
            return []
        stats = self._stats(within)
        positions: dict[int, int] = {}  # each picked document's position among the candidates
        postings: dict[str, list[tuple[int, int]]] = {}
        for term in picking:
            held, tallies = documents[term], self._counts_of[term]
            pairs = postings[term] = []
            for low, high in spans[term]:
                for index, tally in zip(held[low:high], tallies[low:high], strict=True):
                    pairs.append((positions.setdefault(index, len(positions)), tally))
        for term, df in frequency.items():  # the common terms, counted in the documents picked
            if df <= SELECTIVE:
                continue
            counted = self._remembered(term, within, spans[term], df)
            if counted is None:
                postings[term] = self._count(term, spans[term], positions)
            else:
                postings[term] = [
                    (at, counted[index]) for index, at in positions.items() if index in counted
                ]
        average, lengths = stats.average, self._lengths
        norms = [norm(lengths[index], average) for index in positions]
        scores = summed(weights(query, frequency, stats.documents), postings, norms)
        return best(list(positions), scores, limit)

    def _count(
        self, term: str, spans: Sequence[tuple[int, int]], positions: dict[int, int]
    ) -> list[tuple[int, int]]:
        """``(position, count)`` of ``term`` in each document of ``positions`` within ``spans``.

        A binary search per document, in the term's postings of the searched ranges: what a
        term held by many documents costs is what the rarer terms picked, not its frequency.
        """
        held, tallies = self._documents[term], self._counts_of[term]
        pairs: list[tuple[int, int]] = []
        for low, high in spans:
            if low == high:
                continue
            first, last = held[low], held[high - 1]
            for index, at in positions.items():
                if first <= index <= last:
                    found = bisect.bisect_left(held, index, low, high)
                    if held[found] == index:
                        pairs.append((at, tallies[found]))
        return pairs

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
