"""The default judge's word lists, read from ``progsum/judge/data/lexicon.toml``.

Knowledge is data: the stop-list (one for all of progsum), the words a note changes or drops and
every other English word progsum judges text by (docs/judge.md lists them) live in the data file,
versioned with the model; code only reads them, through `words` (a case-folded set), `entries`
(as written), `table`, `alternation` (for a pattern) and `expressions` (entries that are patterns),
each read once and remembered. `content_words` is what every part of progsum compares texts by.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from progsum.errors import ConfigError
from progsum.judge._memo import short_text_cache

__all__ = [
    "LEXICON_PATH",
    "alternation",
    "content_words",
    "entries",
    "expressions",
    "lexicon",
    "stop_words",
    "table",
    "words",
]

LEXICON_PATH = Path(__file__).resolve().parent / "data" / "lexicon.toml"
MIN_LETTERS = 3
_WORD = re.compile(r"[a-z][a-z'-]*")


@functools.cache
def lexicon() -> Mapping[str, Any]:
    """The parsed lexicon file.

    Raises:
        ConfigError: it is missing or not TOML.
    """
    try:
        return tomllib.loads(LEXICON_PATH.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(
            f"cannot read progsum's lexicon {LEXICON_PATH}: {error}; reinstall progsum"
        ) from error


def _entry(path: str) -> Any:  # noqa: ANN401 - TOML values
    node: Any = lexicon()
    for part in path.split("."):
        node = node[part]
    return node


def entries(path: str) -> tuple[str, ...]:
    """The list at ``path`` as written."""
    return tuple(str(w) for w in _entry(path))


@functools.cache
def words(path: str) -> frozenset[str]:
    """The word list at ``path`` (``"stop"``, ``"terse.openers"``), case-folded."""
    return frozenset(str(w).casefold() for w in _entry(path))


@functools.cache
def table(path: str) -> Mapping[str, str]:
    """The word table at ``path`` (``"notes.agree"``)."""
    return {str(k): str(v) for k, v in _entry(path).items()}


@functools.cache
def alternation(path: str, *, any_space: bool = True) -> str:
    """The list at ``path`` as a regular-expression alternation, longest entries first.

    Entries are literal except a trailing ``+`` (a repeated letter: ``haha+``) and spaces, which
    match any run of whitespace (with ``any_space=False``: one space, also in a verbose pattern).
    """
    found = []
    for entry in sorted((str(w) for w in _entry(path)), key=lambda w: (-len(w), w)):
        plus = entry.endswith("+")
        body = re.escape(entry.rstrip("+"))
        if any_space:
            body = body.replace(r"\ ", r"\s+")
        found.append(body + "+" if plus else body)
    return "|".join(found)


@functools.cache
def expressions(path: str) -> str:
    r"""The list at ``path``, whose entries are regular expressions, as one alternation.

    For the few entries that are a pattern rather than words (``from\s+\S+\s+import``); in
    the order written, each in a group of its own.
    """
    return "|".join(f"(?:{entry})" for entry in entries(path))


def stop_words() -> frozenset[str]:
    """The one stop-list."""
    return words("stop")


@short_text_cache
def content_words(text: str) -> frozenset[str]:
    """Case-folded words of `MIN_LETTERS`+ letters of ``text`` that are not on the stop-list."""
    stop = stop_words()
    return frozenset(
        w
        for w in _WORD.findall(text.replace("\u2019", "'").casefold())
        if len(w) >= MIN_LETTERS and w not in stop
    )
