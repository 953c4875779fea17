"""What a reader sees in a text: the one folding that forgery checks match against.

A model reads ``</segment>`` written with single angle quotation marks (U+2039, U+203A) or
with Cyrillic letters, or ``[C9]`` in fullwidth brackets with a Cyrillic Es, as the delimiter or
the item id it resembles, so text is folded before such a thing is looked for in it: format
characters (zero-width spaces, soft hyphens, bidi marks) vanish, then each character is taken
through Unicode NFKC and case folding, then through the table of look-alikes
(``data/lookalikes.tsv``, written by ``bench/lookalikes.py`` from Unicode's UTS #39 confusables
and character names), which maps a character to the ASCII letter, digit or delimiter
(``< > / _``) it reads as. The summarizer prompt's and the recall block's markup
(`progsum.messages._transcript.escape`) and the header's item ids (`progsum.summary._inert`) are
matched on this reading; only the matched character of the original text is then neutralised.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from progsum._memo import memoized

__all__ = ["LOOKALIKES_PATH", "lookalikes", "read", "read_char", "reading", "reads_as"]

LOOKALIKES_PATH = Path(__file__).resolve().parent / "data" / "lookalikes.tsv"


@functools.cache
def lookalikes() -> Mapping[str, str]:
    """Each look-alike character and the ASCII character it reads as (read once)."""
    table: dict[str, str] = {}
    for line in LOOKALIKES_PATH.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            code, read_as = line.split("\t")
            table[chr(int(code, 16))] = read_as
    return MappingProxyType(table)


@memoized("progsum.messages._reading.read_char", 128 * 1024)
def read_char(char: str) -> str:
    """What one character reads as: nothing for a format character, else its folded form."""
    table = lookalikes()
    found = table.get(char)
    if found is not None:
        return found
    if unicodedata.category(char) == "Cf":
        return ""
    folded = unicodedata.normalize("NFKC", char).casefold()
    return "".join(table.get(piece, piece) for piece in folded)


def reading(text: str) -> tuple[str, tuple[int, ...]]:
    """``text`` as read, and for each character of the reading, the index it was read from."""
    pieces: list[str] = []
    origin: list[int] = []
    for at, char in enumerate(text):
        read_as = char if char.isascii() else read_char(char)
        if char.isascii() and "A" <= char <= "Z":
            read_as = char.lower()
        pieces.append(read_as)
        origin.extend([at] * len(read_as))
    return "".join(pieces), tuple(origin)


def read(text: str) -> str:
    """``text`` as read (`reading` without the indices)."""
    if text.isascii():
        return text.lower()
    return "".join(read_char(char) if not char.isascii() else char.lower() for char in text)


@functools.cache
def reads_as(target: str) -> str:
    """Every character that reads as ``target`` (one ASCII character), itself included."""
    return target + "".join(c for c, found in lookalikes().items() if found == target)
