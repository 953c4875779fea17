r"""The one tokenisation recall uses everywhere: every index and every store splits text this way.

A term is a run of word characters (``\\w``: letters, digits, underscore) of the text after
`fold` (Unicode NFKC, then case folding), cut to `MAX_TERM` characters. The indexes keep every
term of a message; a query drops the one stop-list's words (`progsum.judge._lexicon.stop_words`),
so that "What did I say about my dog?" asks for "dog" and not for "what" in every message.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from progsum.judge._lexicon import stop_words
from progsum.messages._formats import Message
from progsum.messages._transcript import source_text

__all__ = [
    "MAX_QUERY_TERMS",
    "MAX_TERM",
    "askable",
    "asked",
    "document",
    "fold",
    "query_terms",
    "term_counts",
    "terms",
]

MAX_TERM = 64
"""Characters of a term at most: longer runs (hashes, base64) are cut, the same way everywhere."""
MAX_QUERY_TERMS = 32
"""Distinct terms of a query at most (the first ones), so a pasted page costs a bounded lookup."""
_WORD = re.compile(r"\w+")


def fold(text: str) -> str:
    """``text`` as every search compares it: Unicode NFKC, then ``str.casefold``.

    NFKC makes compatibility forms one (the ligature U+FB01 is "fi", a fullwidth F is "F", a
    decomposed "É" the composed one); case folding then makes "Straße" and "STRASSE" one, and
    the final sigma a sigma. SQL's own ``lower`` does neither, so the SQL stores match in Python.
    """
    return unicodedata.normalize("NFKC", text).casefold()


def terms(text: str) -> list[str]:
    """Every term of ``text``, in order, repeats included."""
    return [word[:MAX_TERM] for word in _WORD.findall(fold(text))]


def term_counts(text: str) -> Counter[str]:
    """How often each term occurs in ``text``."""
    return Counter(terms(text))


def askable(term: str, stop: frozenset[str] | None = None) -> bool:
    """Whether a query may ask for ``term``: not a stop-list word, a single letter or underscores.

    ``stop``: the stop-list, when the caller has it at hand (`progsum.judge._lexicon.stop_words`).
    """
    if term in (stop_words() if stop is None else stop):
        return False
    return bool(term.strip("_")) and (len(term) > 1 or term.isdigit())


def asked(query: Sequence[str]) -> tuple[str, ...]:
    """The terms of ``query`` a search looks for: the `askable` ones, in order (repeats kept)."""
    stop = stop_words()
    return tuple(term for term in query if askable(term, stop))


def query_terms(text: str) -> tuple[str, ...]:
    """The distinct terms a query asks for, in order, at most `MAX_QUERY_TERMS`.

    Stop-list words, single letters and runs of underscores ask for nothing (`askable`); a query
    made only of them asks for nothing at all (recall then adds no excerpt).
    """
    stop = stop_words()
    found: dict[str, None] = {}
    for term in terms(text):
        if term in found or not askable(term, stop):
            continue
        found[term] = None
        if len(found) == MAX_QUERY_TERMS:
            break
    return tuple(found)


def document(message: Message) -> str:
    """The text of a message that recall indexes and quotes: what the model was shown of it."""
    if type(message) is dict and "type" not in message and "tool_calls" not in message:
        content = message.get("content")
        if type(content) is str and message.get("role") != "tool":
            return content  # a plain message: its one text part (`source_text` gives the same)
    return source_text([message])
