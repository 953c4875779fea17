"""Recall: the folded messages most relevant to the newest message, quoted in the request.

One tokenisation (`terms`), one scorer (`rank`, Okapi BM25) and one block (`excerpt`) serve
every place that holds folded messages: the state's own log (`Index`), `MemoryArchive`, and the
SQL stores' full-text indexes, so all of them recall the same excerpts. docs/recall.md explains
the method and its figures.
"""

from progsum.recall.excerpt import Excerpt, Recall, block_text
from progsum.recall.index import Index, Ranges
from progsum.recall.rank import Candidate, Stats, rank
from progsum.recall.terms import document, fold, query_terms, terms

__all__ = [
    "Candidate",
    "Excerpt",
    "Index",
    "Ranges",
    "Recall",
    "Stats",
    "block_text",
    "document",
    "fold",
    "query_terms",
    "rank",
    "terms",
]
