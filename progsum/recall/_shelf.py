"""`Shelf`: the postings and lengths of documents that one or more recall indexes read.

**Compact postings.** Each posting is one machine integer, the document's log index shifted left
`SHIFT` bits with its count in the low bits (4 bytes while documents are below `NARROW`, else 8);
a count from `COUNT` up is kept exactly beside it. A term held by several documents keeps an
ascending array of postings. Most terms of a long history are held by one document (ids, numbers,
names said once): such a term is first kept as one int beside its string, and every
`SINGLES_BATCH` of them are packed into `_Singles`, sorted arrays of the terms' hashes, their
UTF-8 bytes end to end and their one posting each (about 30 bytes a term instead of about 120 for
a string, a dictionary slot and an int). A packed term that a later document also holds moves
back to the dictionary with both postings. A lookup is exact: the term's bytes are compared.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from typing import NamedTuple, TypeAlias

__all__ = ["COUNT", "NARROW", "SHIFT", "SINGLES_BATCH", "Held", "Shelf"]

SHIFT = 8
COUNT = (1 << SHIFT) - 1
"""The low bits of a posting: its count, or this value when the count is in `Shelf.large`."""
NARROW = 1 << (32 - SHIFT)
"""Documents below this pack into 4 bytes (``array('I')``)."""
SINGLES_BATCH = 1_024
"""Terms held by one document kept as strings before they are packed (`Shelf.pack`); the
packed table is rebuilt when a quarter of its size or this many have come since."""

Held: TypeAlias = "int | array[int]"
"""A term's postings: one packed posting, or an ascending array of them."""
_GONE = 0
"""The posting of a packed term that moved back to the dictionary (a real one counts at least 1)."""


class _Singles(NamedTuple):
    """Terms held by one document each, sorted by hash: parallel arrays and the terms' bytes."""

    hashes: array[int]
    ends: array[int]
    """Where each term's bytes end in `text` (it starts where the previous one ends)."""
    text: bytes
    postings: array[int]
    """Each term's one posting, or `_GONE`."""


_NONE = _Singles(array("q"), array("Q"), b"", array("Q"))


class Shelf:
    """Postings and lengths of documents: the storage one or more indexes read.

    Documents are appended in ascending order by whichever index holds the storage's end
    (`top`); an index that alone sees a storage may also insert and remove anywhere (an
    archive's forks). Writers hold `lock`; readers do not, and see each term either in
    `postings` or in the packed singles (a pack is published before its terms leave `postings`).
    """

    __slots__ = (
        "branched",
        "large",
        "lock",
        "order",
        "postings",
        "single",
        "singles",
        "top",
        "totals",
    )

    def __init__(self) -> None:
        self.postings: dict[str, Held] = {}
        """Each askable term's postings, ascending by document, but the packed `singles`."""
        self.single = 0
        """Terms of `postings` held by one document (an int), not packed yet."""
        self.singles = _NONE
        self.large: dict[tuple[str, int], int] = {}
        """Counts of `COUNT` and more, by term and document."""
        self.order: array[int] = array("Q")
        """The documents, ascending."""
        self.totals: array[int] = array("Q", (0,))
        """Running totals of the documents' lengths: the first ``n`` hold ``totals[n]`` terms."""
        self.top = 0
        """One past the last document appended: the next append must be at or above it."""
        self.branched = False
        """Another index sees part of it: nothing below `top` may change any more."""
        self.lock = threading.Lock()

    def _packed(self, term: str, index: int, count: int) -> int:
        """The posting of ``term`` in document ``index``: its index and count in one integer.

        A count too large for the posting's bits is kept in `large` too.
        """
        if count >= COUNT:
            self.large[term, index] = count
        return index << SHIFT | min(count, COUNT)

    def append(self, index: int, counts: dict[str, int], length: int) -> None:
        """Add document ``index`` above every document held (``index >= top``)."""
        postings = self.postings
        for term, count in counts.items():
            packed = self._packed(term, index, count)
            held = postings.get(term)
            if held is None:
                at, earlier = self._find(term)
                if at < 0:
                    postings[term] = packed
                    self.single += 1
                else:  # a packed single: back to the dictionary with both, then out of the pack
                    postings[term] = array("I" if index < NARROW else "Q", (earlier, packed))
                    self.singles.postings[at] = _GONE
            elif isinstance(held, int):
                postings[term] = array("I" if index < NARROW else "Q", (held, packed))
                self.single -= 1
            else:
                if index >= NARROW and held.typecode == "I":
                    held = postings[term] = array("Q", held)
                held.append(packed)
        self.order.append(index)
        self.totals.append(self.totals[-1] + length)
        self.top = index + 1
        if self.single >= max(SINGLES_BATCH, len(self.singles.hashes) // 4):
            self.pack()

    def insert(self, index: int, counts: dict[str, int], length: int) -> None:
        """Add document ``index`` below some document held (an index that alone sees this)."""
        postings = self.postings
        for term, count in counts.items():
            packed = self._packed(term, index, count)
            held = postings.get(term)
            at = -1
            if held is None:
                at, held = self._find(term)
                if at < 0:
                    postings[term] = packed
                    self.single += 1
                    continue
            elif isinstance(held, int):
                self.single -= 1
            found = array("Q", (held,)) if isinstance(held, int) else array("Q", held)
            found.insert(bisect.bisect_left(found, packed), packed)
            postings[term] = found
            if at >= 0:  # a packed single, now in the dictionary
                self.singles.postings[at] = _GONE
        at = bisect.bisect_left(self.order, index)
        self.order.insert(at, index)
        self.totals.insert(at + 1, self.totals[at])
        self._shift(at + 1, length)

    def remove(self, index: int) -> None:
        """Forget document ``index`` (an index that alone sees this storage)."""
        low, high = index << SHIFT, (index + 1) << SHIFT
        for term in list(self.postings):
            held = self.postings[term]
            if isinstance(held, int):
                if low <= held < high:
                    del self.postings[term]
                    self.single -= 1
                    self.large.pop((term, index), None)
                continue
            at = bisect.bisect_left(held, low)
            if at < len(held) and held[at] < high:
                del held[at]
                if len(held) == 1:
                    self.postings[term] = held[0]
                    self.single += 1
            self.large.pop((term, index), None)
        packed = self.singles.postings
        for at, posting in enumerate(packed):
            if low <= posting < high:
                packed[at] = _GONE
                self.large.pop((self._term(at), index), None)
        at = bisect.bisect_left(self.order, index)
        del self.order[at]
        totals = self.totals
        length = totals[at + 1] - totals[at]
        del totals[at + 1]
        self._shift(at + 1, -length)

    def _shift(self, at: int, change: int) -> None:
        """Add ``change`` to the running totals from ``at`` on (a document went in or out)."""
        totals = self.totals
        totals[at:] = array("Q", (total + change for total in totals[at:]))

    def held(self, term: str) -> tuple[int, ...] | array[int]:
        """``term``'s postings as a sequence (empty when no document holds it)."""
        found = self.postings.get(term)
        if found is None:
            posting = self._find(term)[1]
            return () if posting == _GONE else (posting,)
        return (found,) if isinstance(found, int) else found

    def count(self, term: str, packed: int) -> int:
        """The count a posting of ``term`` carries."""
        count = packed & COUNT
        return count if count < COUNT else self.large[term, packed >> SHIFT]

    def terms(self) -> list[tuple[str, Held]]:
        """Every term with its postings: the dictionary's, then the packed singles'."""
        found = list(self.postings.items())
        for at, posting in enumerate(self.singles.postings):
            if posting != _GONE:
                found.append((self._term(at), posting))
        return found

    def pack(self) -> None:
        """Move the terms held by one document from `postings` into a new packed table."""
        singles = self.singles
        rows = [
            (singles.hashes[at], _bytes(singles, at), posting)
            for at, posting in enumerate(singles.postings)
            if posting != _GONE
        ]
        moving = [(term, held) for term, held in self.postings.items() if isinstance(held, int)]
        rows += [(hash(term), term.encode(), held) for term, held in moving]
        rows.sort(key=lambda row: row[0])
        ends: list[int] = []
        end = 0
        for _, encoded, _ in rows:
            end += len(encoded)
            ends.append(end)
        self.singles = _Singles(
            array("q", [row[0] for row in rows]),
            array("Q", ends),
            b"".join(row[1] for row in rows),
            array("Q", [row[2] for row in rows]),
        )
        for term, _ in moving:  # published first: a reader finds each term in one or the other
            del self.postings[term]
        self.single = 0

    def _find(self, term: str) -> tuple[int, int]:
        """``term``'s position among the packed singles and its posting, read once.

        ``(-1, _GONE)`` when it is not there or moved back. One table and one read of the
        posting: a writer may pack or move the term back meanwhile (the term is then in
        `postings` too, and the posting read is the one this reader's documents hold).
        """
        singles = self.singles
        hashes = singles.hashes
        if not hashes:
            return -1, _GONE
        key = hash(term)
        at = bisect.bisect_left(hashes, key)
        encoded = None
        while at < len(hashes) and hashes[at] == key:
            encoded = encoded or term.encode()
            posting = singles.postings[at]
            if posting != _GONE and _bytes(singles, at) == encoded:
                return at, posting
            at += 1
        return -1, _GONE

    def _term(self, at: int) -> str:
        return _bytes(self.singles, at).decode()


def _bytes(singles: _Singles, at: int) -> bytes:
    """The UTF-8 bytes of the packed term at ``at``."""
    return singles.text[singles.ends[at - 1] if at else 0 : singles.ends[at]]
