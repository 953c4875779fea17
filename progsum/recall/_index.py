"""`Index`: an in-memory inverted index of messages by log index, grown one message at a time.

It serves the state's own log (the default when no store ranks) and `MemoryArchive`. Adding a
message costs its terms. A search costs a binary search per query term and searched range (a
term's document frequency; kept for the next search of the same ranges until the index changes),
and the documents of its selective terms (at most `progsum.recall._rank.SELECTIVE` each), never a
pass over the history.

**Shared by the branches of a log.** A retry, a rollback or a fork appends to an older state, and
the log's storage is copied from there (`progsum.state._log.Log.fork`); the folded messages below
that point are the same in both. `branch` gives the new log an index over the same storage that
sees only the documents below the point, in O(1): no message is indexed twice. The branch appends
to that storage while no other branch has appended past what it sees (a retry: the abandoned
attempt appends nothing more), and starts a storage of its own for its later documents when one
has (two branches both folding on); a search reads each storage it sees, clipped to its part.

**Compact postings** (`progsum.recall._shelf`): a posting is one machine integer, and the many
terms held by one document each are packed into sorted arrays. A term no query can ask for
(`progsum.recall._terms.askable`: stop-list words, single letters, runs of underscores) counts in
its document's length but has no postings.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from progsum.judge._lexicon import stop_words
from progsum.recall._rank import SELECTIVE, Stats, best, norm, summed, weights
from progsum.recall._shelf import COUNT, SHIFT, Shelf
from progsum.recall._terms import askable
from progsum.recall._terms import term_counts as term_counts  # noqa: PLC0414 - re-exported: tests count reads

__all__ = ["Index", "Ranges"]

REMEMBERED_TERM = 1_024
"""Most documents a common term may be in for a search to remember its counts (`Index`)."""
REMEMBERED_POSTINGS = 32_768
"""Postings of common terms an index remembers the counts of, at most (about 3 MB)."""
MAX_VIEWS = 4
"""Sets of ranges an index keeps its lookups for (`Index._view`); past it, they are dropped."""
VIEW_TERMS = 1_024
"""Terms a set of ranges keeps looked up (`_View.terms`); past it, they are dropped."""
MAX_PARTS = 8
"""Storages one index reads at most; past it, its documents are copied into one (`_flattened`)."""

Ranges = tuple[tuple[int, int], ...]
"""Log ranges ``[start, end)`` a search covers, ascending and disjoint."""
_Asked = tuple[tuple[str, ...], Ranges, int]
"""What a search is asked: its query terms, its ranges and its limit."""

_OPEN = 1 << 62
"""The end of a part that sees every document of its storage (an archive's index)."""


class _Part(NamedTuple):
    """The documents of ``shelf`` that an index sees: those in ``[start, stop)``."""

    shelf: Shelf
    start: int
    stop: int


_Spans = list[tuple[Shelf, "Sequence[int]", int, int]]
"""A term's postings in a searched set: ``(storage, postings, low, high)`` per storage holding
some, ``postings[low:high]`` those of the set."""


class _View:
    """What searches of one set of ranges read: the parts, the set's size, each term looked up."""

    __slots__ = ("clipped", "stats", "terms")

    def __init__(self, clipped: list[tuple[Shelf, int, int]], stats: Stats) -> None:
        self.clipped = clipped
        self.stats = stats
        self.terms: dict[str, tuple[int, _Spans, float]] = {}
        """Each term looked up: its document frequency in the set, its spans and its weight
        (`weights`' for that frequency; unused when 0); at most `VIEW_TERMS` terms."""

    def look(self, term: str) -> tuple[int, _Spans, float]:
        """``term``'s entry of `terms`, looked up in the postings and kept."""
        spans: _Spans = []
        df = 0
        left = bisect.bisect_left
        for shelf, start, end in self.clipped:
            held = shelf.held(term)
            low = left(held, start << SHIFT)
            high = left(held, end << SHIFT)
            if low < high:
                spans.append((shelf, held, low, high))
                df += high - low
        weight = weights((term,), {term: df}, self.stats.documents)
        looked = (df, spans, weight[0][1] if weight else 0.0)
        if len(self.terms) >= VIEW_TERMS:
            self.terms.clear()
        self.terms[term] = looked
        return looked


class Index:
    """Term postings and lengths of documents keyed by log index; thread-safe.

    Documents are given with their lengths (`add`): an index that only appends above its
    documents (a log's) can be shared by its branches (`branch`).
    """

    def __init__(self) -> None:
        self._parts: list[_Part] = []
        self._common: dict[tuple[str, Ranges], dict[int, int]] = {}
        """`_remembered` counts; emptied when a document is added or removed."""
        self._held = 0
        self._views: dict[Ranges, _View] = {}
        """What searches of each set of ranges read (`_view`); emptied when the index changes."""
        self._last: tuple[_Asked, list[tuple[int, float]]] | None = None
        """The last search (query, ranges, limit) and its result; None once the index changes."""
        self._lock = threading.Lock()

    @property
    def upto(self) -> int:
        """One past the highest document this index holds or was branched at (0: none)."""
        return self._parts[-1].stop if self._parts and self._parts[-1].stop < _OPEN else 0

    def __len__(self) -> int:
        return sum(_between(part.shelf.order, part.start, part.stop) for part in self._parts)

    def __contains__(self, index: object) -> bool:
        if not isinstance(index, int):
            return False
        for shelf, start, stop in self._parts:
            if start <= index < stop:
                order = shelf.order
                at = bisect.bisect_left(order, index)
                return at < len(order) and order[at] == index
        return False

    def shelves(self) -> int:
        """How many storages this index reads (one, unless its branches diverged)."""
        return len(self._parts)

    def add(self, index: int, text: str) -> None:
        """Index ``text`` as document ``index``; a document already indexed is kept as it is."""
        counts = term_counts(text)
        length = sum(counts.values())
        stop = stop_words()
        asked = {term: count for term, count in counts.items() if askable(term, stop)}
        with self._lock:
            if index in self:
                return
            self._changed()
            self._place(index, asked, length)

    def extend(self, start: int, texts: Iterable[str]) -> None:
        """`add` each of ``texts`` as documents ``start``, ``start + 1``, …, in order."""
        for offset, text in enumerate(texts):
            self.add(start + offset, text)

    def _place(self, index: int, counts: dict[str, int], length: int) -> None:
        """Put a new document where this index may write it (under the lock)."""
        parts = self._parts
        last = parts[-1] if parts else None
        if last is not None and index >= last.stop and last.stop < _OPEN:
            shelf = last.shelf
            with shelf.lock:
                if shelf.top <= last.stop:  # no other branch appended past what this one sees
                    shelf.append(index, counts, length)
                    parts[-1] = last._replace(stop=index + 1)
                    return
            if len(parts) >= MAX_PARTS:
                self._flatten()
                self._place(index, counts, length)
                return
            shelf = Shelf()
            shelf.append(index, counts, length)
            parts.append(_Part(shelf, last.stop, index + 1))
            return
        if last is None:
            shelf = Shelf()
            shelf.append(index, counts, length)
            parts.append(_Part(shelf, 0, index + 1))
            return
        # below this index's end (an archive adds in any order): only into a storage it alone sees
        self._own()
        shelf = self._parts[0].shelf
        with shelf.lock:
            if index >= shelf.top:
                shelf.append(index, counts, length)
            else:
                shelf.insert(index, counts, length)

    def remove(self, index: int) -> None:
        """Forget document ``index`` (nothing when it is not indexed)."""
        with self._lock:
            if index not in self:
                return
            self._changed()
            self._own()
            shelf = self._parts[0].shelf
            with shelf.lock:
                shelf.remove(index)

    def branch(self, limit: int) -> Index:
        """An index of the same documents below ``limit``, sharing their storage (O(parts)).

        What a log forked at ``limit`` messages is given: its folded messages below that point
        are this log's. The new index then grows on its own; neither sees the other's later
        documents.
        """
        child = Index()
        with self._lock:
            limit = min(limit, self.upto)
            for shelf, start, stop in self._parts:
                if start >= limit:
                    break
                with shelf.lock:
                    shelf.branched = True
                child._parts.append(_Part(shelf, start, min(stop, limit)))
        return child

    def _own(self) -> None:
        """Make this index the only reader of one storage holding its documents (under the lock).

        An archive's index (never branched) already is; otherwise its documents are copied.
        """
        parts = self._parts
        if len(parts) == 1 and not parts[0].shelf.branched:
            parts[0] = parts[0]._replace(stop=_OPEN)
            return
        self._flatten()
        self._parts[0] = self._parts[0]._replace(stop=_OPEN)

    def _flatten(self) -> None:
        """Copy the documents this index sees into one storage of its own (under the lock)."""
        merged = Shelf()
        stop = self.upto if self._parts[-1].stop < _OPEN else _OPEN
        for shelf, start, end in self._parts:
            with shelf.lock:
                totals = shelf.totals
                documents: dict[int, dict[str, int]] = {}
                for term, held in shelf.terms():
                    for packed in (held,) if isinstance(held, int) else held:
                        doc = packed >> SHIFT
                        if start <= doc < end:
                            documents.setdefault(doc, {})[term] = shelf.count(term, packed)
                low = bisect.bisect_left(shelf.order, start)
                for at in range(low, bisect.bisect_left(shelf.order, end)):
                    doc = shelf.order[at]
                    merged.append(doc, documents.get(doc, {}), totals[at + 1] - totals[at])
        self._parts = [_Part(merged, 0, stop)]

    def _changed(self) -> None:
        if self._common:
            self._common.clear()
            self._held = 0
        self._views.clear()
        self._last = None

    def search(
        self, query: Sequence[str], within: Ranges, *, limit: int
    ) -> list[tuple[int, float]]:
        """The best ``limit`` documents in ``within`` for ``query`` terms (`rank`'s order).

        Scored as `rank` scores (`weights`, `summed`, `best`), without a `Candidate` per
        document: the selective terms' postings name the documents and give their counts, and
        only the commoner terms are looked up, in those documents. A query none of whose terms
        picks a document costs its terms' document frequencies and nothing more. The last
        search is remembered until the index changes: the engine asks again, turn after turn,
        for a question that recalled nothing. A term no query asks for (`askable`) is in no
        document here (every store ignores it).
        """
        key = (tuple(query), within, limit)
        with self._lock:
            last = self._last
            if last is not None and last[0] == key:
                return list(last[1])
            found = self._search(key[0], within, limit)
            self._last = (key, found)
        return list(found)

    def _view(self, within: Ranges) -> _View:
        """What searches of ``within`` read, kept until the index changes (under the lock).

        Between two folds the engine searches the same ranges question after question, and
        the common words of questions recur: each term's postings in the ranges (two binary
        searches per storage) and its weight are looked up once per set of ranges.
        """
        view = self._views.get(within)
        if view is None:
            if len(self._views) >= MAX_VIEWS:
                self._views.clear()
            clipped = self._clipped(within)
            view = self._views[within] = _View(clipped, self._stats(clipped))
        return view

    def _clipped(self, within: Ranges) -> list[tuple[Shelf, int, int]]:
        """``within`` cut to the parts this index sees: ``(storage, start, end)``, ascending."""
        found = []
        for shelf, start, stop in self._parts:
            for a, b in within:
                low, high = max(a, start), min(b, stop)
                if low < high:
                    found.append((shelf, low, high))
        return found

    def _search(
        self, query: tuple[str, ...], within: Ranges, limit: int
    ) -> list[tuple[int, float]]:
        """`search`, under the lock, not remembered."""
        view = self._view(within)
        frequency: dict[str, int] = {}
        spans: dict[str, _Spans] = {}
        for term in dict.fromkeys(query):
            looked = view.terms.get(term)
            if looked is None:
                looked = view.look(term)
            frequency[term], spans[term], _ = looked
        picking = [term for term, df in frequency.items() if 0 < df <= SELECTIVE]
        if not picking:  # no selective term is in the set: nothing to rank
            return []
        stats = view.stats
        positions: dict[int, int] = {}  # each picked document's position among the candidates
        homes: list[Shelf] = []
        postings: dict[str, list[tuple[int, int]]] = {}
        for term in picking:
            pairs = postings[term] = []
            for shelf, held, low, high in spans[term]:
                for packed in held[low:high]:
                    index = packed >> SHIFT
                    at = positions.get(index)
                    if at is None:
                        at = positions[index] = len(positions)
                        homes.append(shelf)
                    count = packed & COUNT
                    pairs.append((at, count if count < COUNT else shelf.large[term, index]))
        for term, df in frequency.items():  # the common terms, counted in the documents picked
            if df <= SELECTIVE:
                continue
            counted = self._remembered(term, within, spans[term], df)
            if counted is None:
                postings[term] = _count(term, spans[term], positions)
            else:
                postings[term] = [
                    (at, counted[index]) for index, at in positions.items() if index in counted
                ]
        average = stats.average
        norms = [
            norm(self._length(shelf, index), average)
            for index, shelf in zip(positions, homes, strict=True)
        ]
        seen = view.terms
        weighted = [(term, seen[term][2]) for term in query if frequency[term]]
        scores = summed(weighted, postings, norms)
        return best(list(positions), scores, limit)

    def _length(self, shelf: Shelf, index: int) -> int:
        totals = shelf.totals
        at = bisect.bisect_left(shelf.order, index)
        return totals[at + 1] - totals[at]

    def _remembered(
        self,
        term: str,
        within: Ranges,
        spans: Sequence[tuple[Shelf, Sequence[int], int, int]],
        size: int,
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
            self._common.clear()
            self._held = 0
        found = {}
        for shelf, held, low, high in spans:
            for packed in held[low:high]:
                found[packed >> SHIFT] = shelf.count(term, packed)
        self._common[key] = found
        self._held += size
        return found

    def _stats(self, clipped: Sequence[tuple[Shelf, int, int]]) -> Stats:
        documents = terms = 0
        for shelf, start, end in clipped:
            totals = shelf.totals
            low = bisect.bisect_left(shelf.order, start)
            high = bisect.bisect_left(shelf.order, end)
            documents += high - low
            terms += totals[high] - totals[low]
        return Stats(documents, terms)


def _count(
    term: str,
    spans: Sequence[tuple[Shelf, Sequence[int], int, int]],
    positions: dict[int, int],
) -> list[tuple[int, int]]:
    """``(position, count)`` of ``term`` in each document of ``positions`` within ``spans``.

    A binary search per document, in the term's postings of the searched ranges: what a
    term held by many documents costs is what the rarer terms picked, not its frequency.
    """
    pairs: list[tuple[int, int]] = []
    left = bisect.bisect_left
    for shelf, held, low, high in spans:
        first, last = held[low] >> SHIFT, held[high - 1] >> SHIFT
        for index, at in positions.items():
            if first <= index <= last:
                found = left(held, index << SHIFT, low, high)
                packed = held[found]
                if packed >> SHIFT == index:
                    pairs.append((at, shelf.count(term, packed)))
    return pairs


def _between(order: array[int], start: int, stop: int) -> int:
    return bisect.bisect_left(order, stop) - bisect.bisect_left(order, start)
