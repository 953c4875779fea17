"""The index's search and `rank`'s term-at-a-time scoring against plain computations, to the bit.

`Index.search` must return what `rank` returns over every document of the searched ranges (each
handed over as a candidate, the document frequencies counted from them), and `rank` what a
document-at-a-time loop over the same formula returns: the same documents, in the same order,
with scores equal as floats, not merely close. Small vocabularies make ties common; documents
arrive out of order and some are removed; searches cover several disjoint ranges; `SELECTIVE`
and the remembered-term limits are lowered so that common terms are counted both ways.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from random import Random
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from progsum.recall._index import Index, Ranges
from progsum.recall._rank import K1, SELECTIVE, B, Candidate, Stats, rank
from progsum.recall._shelf import SINGLES_BATCH, Shelf
from progsum.recall._terms import terms

COMMON = st.sampled_from(["dog", "beagle", "lisbon", "7", "été"])
RARE = st.sampled_from([f"w{n}" for n in range(30)])
WORDS = st.one_of(COMMON, COMMON, RARE)
TEXTS = st.lists(st.lists(WORDS, min_size=0, max_size=10).map(" ".join), min_size=1, max_size=40)
QUERIES = st.lists(st.lists(WORDS, min_size=1, max_size=5), min_size=1, max_size=4)


def brute_force(
    query: Sequence[str], documents: Mapping[int, str], ranges: Ranges, limit: int
) -> list[tuple[int, float]]:
    """`rank` over every document of ``ranges``, its frequencies counted from all of them."""
    inside = {i: t for i, t in documents.items() if any(a <= i < b for a, b in ranges)}
    counted = {i: Counter(terms(t)) for i, t in inside.items()}
    candidates = [
        Candidate(i, {t: c[t] for t in query if c[t]}, sum(c.values())) for i, c in counted.items()
    ]
    stats = Stats(len(inside), sum(c.length for c in candidates))
    return rank(query, candidates, stats, limit=limit)


def one_at_a_time(  # noqa: PLR0917 - rank's inputs, and the selective limit
    query: Sequence[str],
    candidates: Sequence[Candidate],
    stats: Stats,
    limit: int,
    frequency: Mapping[str, int] | None,
    selective: int,
) -> list[tuple[int, float]]:
    """BM25 a document at a time, each document's terms summed in the query's order."""
    found = [c for c in candidates if c.counts]
    if frequency is None:
        frequency = {t: sum(1 for c in found if c.counts.get(t)) for t in query}
        total = max(stats.documents, len(found))
    else:
        total = stats.documents
    picking = {t for t in query if 0 < frequency.get(t, 0) <= selective}
    weight = {
        t: math.log(1 + (total - df + 0.5) / (df + 0.5))
        for t in query
        if (df := frequency.get(t, 0))
    }
    scored = []
    for c in found:
        if picking.isdisjoint(c.counts):
            continue
        norm = K1 * (1 - B + B * c.length / stats.average)
        score = 0.0
        for t in query:
            tf = c.counts.get(t, 0)
            if t in weight and tf:
                score += weight[t] * tf * (K1 + 1) / (tf + norm)
        scored.append((c.index, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:limit]


@contextmanager
def small_limits(selective: int, remembered: int) -> Iterator[None]:
    """`SELECTIVE` and the remembered-term limits lowered, wherever they are read."""
    with (
        mock.patch("progsum.recall._rank.SELECTIVE", selective),
        mock.patch("progsum.recall._index.SELECTIVE", selective),
        mock.patch("progsum.recall._index.REMEMBERED_TERM", remembered),
        mock.patch("progsum.recall._index.REMEMBERED_POSTINGS", 4 * remembered),
    ):
        yield


def ranges_of(cuts: list[int], size: int) -> Ranges:
    """Disjoint ascending ranges within ``[0, size)`` from a list of cut points, pairwise."""
    points = sorted({min(c, size) for c in cuts})
    pairs = zip(points[::2], points[1::2], strict=False)
    return tuple((a, b) for a, b in pairs if a < b) or ((0, size),)


@settings(max_examples=300, deadline=None)
@given(
    TEXTS,
    QUERIES,
    st.lists(st.integers(0, 40), min_size=0, max_size=6),
    st.integers(1, 8),
    st.sampled_from([(SELECTIVE, 1_024), (3, 1_024), (3, 0), (5, 4), (1, 1)]),
    st.randoms(use_true_random=False),
    st.sampled_from([1, 3, SINGLES_BATCH]),
)
def test_the_index_searches_as_rank_over_every_document(  # noqa: PLR0917 - Hypothesis draws
    texts: list[str],
    queries: list[list[str]],
    cuts: list[int],
    limit: int,
    limits: tuple[int, int],
    random: Random,
    batch: int,
) -> None:
    """Added in any order, some removed, singles packed or not: `rank`'s result, float-equal."""
    index = Index()
    order = list(range(len(texts)))
    random.shuffle(order)
    held: dict[int, str] = {}
    with small_limits(*limits), mock.patch("progsum.recall._shelf.SINGLES_BATCH", batch):
        for step, n in enumerate(order):
            index.add(n, texts[n])
            held[n] = texts[n]
            if step % 4 == 3:  # now and then a document leaves
                gone = random.choice(sorted(held))
                index.remove(gone)
                del held[gone]
            ranges = ranges_of(cuts, len(texts))
            for words in queries:
                query = tuple(words)  # repeats kept: a caller may pass any sequence
                expected = brute_force(query, held, ranges, limit)
                assert index.search(query, ranges, limit=limit) == expected
                assert index.search(query, ranges, limit=limit) == expected  # remembered


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 12),
            st.dictionaries(WORDS, st.integers(0, 4), max_size=5),
            st.integers(0, 30),
        ),
        max_size=30,
    ),
    st.lists(WORDS, min_size=1, max_size=6),
    st.integers(0, 400),
    st.integers(1, 10),
    st.booleans(),
)
def test_rank_term_at_a_time_equals_a_document_at_a_time(
    rows: list[tuple[int, dict[str, int], int]],
    query: list[str],
    size: int,
    limit: int,
    given_frequency: bool,
) -> None:
    """The same documents, order and float scores, duplicates and zero counts included."""
    candidates = [Candidate(i, counts, length) for i, counts, length in rows]
    stats = Stats(size, sum(length for _, _, length in rows))
    frequency = (
        {t: sum(1 for c in candidates if c.counts.get(t)) for t in query}
        if given_frequency
        else None
    )
    with small_limits(3, 2):
        expected = one_at_a_time(query, candidates, stats, limit, frequency, 3)
        assert rank(query, candidates, stats, limit=limit, frequency=frequency) == expected


def test_a_query_whose_terms_pick_nothing_returns_nothing_and_changes_nothing() -> None:
    """Only common terms (or none held): no document, and a later search still sees new ones."""
    index = Index()
    for n in range(6):
        index.add(n, "hotel breakfast")
    everything = ((0, 10),)
    with small_limits(3, 2):
        assert index.search(("hotel",), everything, limit=5) == []
        assert index.search(("garden",), everything, limit=5) == []
        index.add(7, "hotel garden")
        assert [i for i, _ in index.search(("hotel", "garden"), everything, limit=5)] == [7]


def test_a_term_is_looked_up_once_per_set_of_ranges_until_the_index_changes() -> None:
    """Questions between two folds share their common words' postings lookups and weights."""
    index = Index()
    for n in range(6):
        index.add(n, f"hotel quote q{n}")
    everything = ((0, 10),)
    looked: Counter[str] = Counter()
    real = Shelf.held

    def counting(shelf: Shelf, term: str) -> Sequence[int]:
        looked[term] += 1
        return real(shelf, term)

    with mock.patch.object(Shelf, "held", counting):
        first = index.search(("hotel", "q1"), everything, limit=3)
        second = index.search(("hotel", "q2"), everything, limit=3)
        assert looked == {"hotel": 1, "q1": 1, "q2": 1}
        index.add(6, "hotel quote q1")
        third = index.search(("hotel", "q1"), everything, limit=3)
        assert looked == {"hotel": 2, "q1": 2, "q2": 1}
    held = {n: f"hotel quote q{n}" for n in range(6)}
    assert first == brute_force(("hotel", "q1"), held, everything, 3)
    assert second == brute_force(("hotel", "q2"), held, everything, 3)
    assert third == brute_force(("hotel", "q1"), {**held, 6: "hotel quote q1"}, everything, 3)
    assert first[0][0] == 1
    assert [i for i, _ in third[:2]] == [1, 6]


def test_packed_singles_are_found_by_their_bytes_when_hashes_collide() -> None:
    """Every term hashing alike: lookups compare bytes, so the search still equals a scan."""
    texts = {n: f"hotel w{n} été{n % 3} café" for n in range(12)}
    everything = ((0, 20),)
    with (
        mock.patch("progsum.recall._shelf.SINGLES_BATCH", 1),
        mock.patch("progsum.recall._shelf.hash", return_value=7, create=True),
    ):
        index = Index()
        for n, text in texts.items():
            index.add(n, text)
        index.add(12, "w3 w5 gamma")  # two packed singles move back to the dictionary
        texts[12] = "w3 w5 gamma"
        shelf = index._parts[0].shelf
        assert len(shelf.singles.hashes) > 0
        for query in (("w3",), ("w7", "été1"), ("w5", "gamma"), ("nowhere",), ("café", "w11")):
            assert index.search(query, everything, limit=5) == brute_force(
                query, texts, everything, 5
            )
