"""Recall: the folded messages most relevant to the newest message, quoted in the request.

One tokenisation (`terms`), one scorer (`rank`, Okapi BM25) and one block (`excerpt`) serve
every place that holds folded messages: the state's own log (`Index`), `MemoryArchive`, and the
SQL stores' full-text indexes, so all of them recall the same excerpts. docs/recall.md explains
the method and its figures.

Internal: the modules here are private (underscore names) and may change; use recall through
`progsum.Compactor` and `progsum.tools.ConversationTools`.
"""

__all__: list[str] = []
