"""Sentences of a message's prose, and the lines that are never statements (code, markup, logs).

`sentences` is what the extractive pass and the extractive summarizer read. It works in two steps:

1. **Lines.** Text is cut into lines. A fenced code block (```` ``` ```` or ``~~~`` up to the
   closing fence, or to the end) and every line that is machine text are dropped whole: a markup
   tag (``<task-id>``, ``</summary>``), a code line (indented four spaces or a tab, a shell or REPL
   prompt, a statement keyword such as ``def``/``import``/``return``, a line ending in ``{``, ``}``
   or ``;``, or one in which a fifth or more of the characters are code symbols), a log line (a
   timestamp or a level such as ``[INFO]``/``ERROR:`` in front) and a stack trace line
   (``Traceback``, ``File "...", line N``, ``at pkg.Class(...)``, ``SomeError: ...``). A list
   marker (``-``, ``*``, ``•``, ``>``, ``1.``, ``2)``) is taken off its line.
2. **Sentences.** Each remaining line is split into sentences by syntok (segtok v2, a maintained
   rule-based segmenter) when it holds an ambiguous period (after a short token such as "Dr",
   "e.g", "J.K", "p.m", or before a lower-case word or a digit); otherwise by end punctuation
   alone, which is what syntok gives on such lines, at a fraction of the cost. Lines are cached.

A sentence is kept only when it is whole: brackets, backticks and double quotes balanced, not
ending in ``:`` (a lead-in such as "Run this:") or in a word that cannot end one ("... to", "...
the", "... because"), at most `MAX_SENTENCE` characters (longer ones
are pasted content). docs/segmenter.md compares the segmenters considered. The words (statement
keywords, log levels, abbreviations, the words that cannot end a sentence) are the lexicon's
(``machine`` and ``sentences`` in ``progsum/judge/data/lexicon.toml``).
"""

from __future__ import annotations

import functools
import re

from syntok import segmenter  # type: ignore[import-untyped]  # syntok ships no type hints

from progsum._memo import memoized
from progsum.judge._lexicon import alternation, expressions, words

__all__ = ["EMOTICON", "MAX_SENTENCE", "is_machine_line", "is_whole", "pieces", "sentences"]

MAX_SENTENCE = 400
"""Longer "sentences" are pasted content (logs, documents), not statements; they are skipped."""

_FENCE = re.compile(r"^\s*(?:```|~~~)")
_TAG = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>")


@functools.cache
def _code() -> re.Pattern[str]:
    """How a code line starts (matched at the start only).

    An indent, a prompt, a statement keyword or clause (the lexicon's ``machine.code_keywords``
    and ``code_clauses``), a closing bracket. A line ending in ``{``, ``}`` or ``;`` is code too
    (`is_machine_line`).
    """
    keywords = alternation("machine.code_keywords", any_space=False)
    return re.compile(
        r"(?: {4}|\t)|\s*(?:\$ |>>> |\.\.\. |#!|%\s)|"
        rf"\s*(?:{keywords}|{expressions('machine.code_clauses')})\b|"
        r"\s*[}\])]"
    )


_CODE_ENDS = ("{", "}", ";")


@functools.cache
def _log() -> re.Pattern[str]:
    """How a log or stack trace line starts.

    A timestamp, a level (the lexicon's ``machine.log_levels``), Python's and Java's trace lines,
    an exception's name.
    """
    return re.compile(
        r"^\s*(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?\d\d:\d\d:\d\d[\].,\s]|"
        rf"\[?(?:{alternation('machine.log_levels')})\]?[:\s]|"
        r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|at [\w.$<>]+\(|"
        r"[A-Z]\w*(?:Error|Exception|Warning):|\*\*\s*\(\w+Error\))"
    )


_SYMBOLS = frozenset("{}[]()<>=;$|\\/_*#@`~^&+")
_SYMBOL_BYTES = "".join(sorted(_SYMBOLS)).encode("ascii")
"""The code symbols as bytes: what a line's UTF-8 loses without them is its count of them, in C
(each symbol is one ASCII byte, and no byte of another character's encoding is ASCII)."""
_SYMBOL_SHARE = 0.2
_MIN_SYMBOL_LINE = 12
"""Lines shorter than this are not judged by their symbols ("1 + 1 = 2")."""
_MARKER = re.compile(r"^\s*(?:[-*•>]+|\(?\d{1,3}[.)]|\(?[a-z][.)](?=\s))\s+")
_NUMBERING = re.compile(r"\(?\d{1,3}[.)]")
"""A piece that is only a list's numbering ("2." between two items, "(3)")."""
_MAX_NUMBERING = 5
"""The longest numbering `_NUMBERING` matches ("(999)")."""
_END = re.compile(r"([.!?])[\"')\]]*\s+")
"""A sentence end: its punctuation (captured, so it stays with the sentence), then closing
quotes or brackets and spaces (dropped)."""


@functools.cache
def _abbreviation() -> re.Pattern[str]:
    """What before a period makes it ambiguous; lines with one go to syntok.

    An initial, a dotted abbreviation (e.g. J.K. p.m.) or a common abbreviation (Dr. Mrs. Jan.
    etc., the lexicon's ``sentences.abbreviations``).
    """
    return re.compile(rf"[A-Za-z](?:\.[A-Za-z])*|{alternation('sentences.abbreviations')}")


_PERIOD = re.compile(r"\.(?=\s)")
EMOTICON = re.compile(r"(?<!\S)(?:[:;=][-']?[()\[\]DPp/|]+|<3|\^_?\^)(?!\S)")
"""A smiley standing alone (``:)``, ``;-(``, ``:D``, ``=)``, ``:/``, ``<3``, ``^_^``): its bracket
pairs with nothing (`is_whole`), and a note leaves it out (`progsum.judge._notes.terse`)."""


def is_machine_line(line: str) -> bool:
    """Whether a line is markup (it opens with a tag), code, a log or a stack trace line."""
    if line.lstrip().startswith("<") and _TAG.match(line.lstrip()):
        return True
    if _code().match(line) or _log().match(line):
        return True
    stripped = line.strip()
    if stripped.endswith(_CODE_ENDS):
        return True
    if len(stripped) < _MIN_SYMBOL_LINE:
        return False
    encoded = stripped.encode("utf-8", "surrogatepass")
    symbols = len(encoded) - len(encoded.translate(None, _SYMBOL_BYTES))
    return symbols / len(stripped) >= _SYMBOL_SHARE


def is_whole(sentence: str) -> bool:
    """Whether a sentence stands alone: brackets and quotes balanced, no tag, not cut off."""
    if ":" in sentence or ";" in sentence or "=" in sentence:
        if _may_open_emoticon(sentence):  # ":)" closes no bracket, ends nothing
            sentence = EMOTICON.sub(" ", sentence)
        sentence = sentence.rstrip()
    if sentence.endswith(":") or sentence.count("`") % 2 or sentence.count('"') % 2:
        return False
    if "<" in sentence and _TAG.search(sentence):
        return False
    if _last_word(sentence).lower() in words("sentences.dangling"):
        return False
    return (
        sentence.count("(") == sentence.count(")")
        and sentence.count("[") == sentence.count("]")
        and sentence.count("{") == sentence.count("}")
    )  # each bracket pair balanced, counted in C


_EMOTICON_OPENERS = ":;=<^"
"""The characters an `EMOTICON` starts with."""


def _may_open_emoticon(text: str) -> bool:
    """Whether one of `_EMOTICON_OPENERS` opens a token of ``text``, where an emoticon starts.

    Most colons are inside a token ("09:43", "https://"): finding each with ``str.find`` is
    cheaper than trying `EMOTICON` at every position of the text.
    """
    for opener in _EMOTICON_OPENERS:
        at = text.find(opener)
        while at >= 0:
            if at == 0 or text[at - 1].isspace():
                return True
            at = text.find(opener, at + 1)
    return False


def _last_word(text: str) -> str:
    """The run of word characters that ends ``text`` (trailing spaces aside), or ``""``."""
    text = text.rstrip()
    start = len(text)
    while start and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    return text[start:]


def _ambiguous(line: str) -> bool:
    """Whether a period before a space in ``line`` follows an `_abbreviation` token."""
    for period in _PERIOD.finditer(line):
        end = start = period.start()
        while start and not (line[start - 1].isspace() or line[start - 1] == "("):
            start -= 1
        if _abbreviation().fullmatch(line, start, end):
            return True
    return False


@memoized("progsum.judge._segment.split_line", 512 * 1024)
def _split_line(line: str) -> tuple[str, ...]:
    """The sentences of one prose line (see the module docstring), whitespace collapsed."""
    if _ambiguous(line):
        pieces = [
            "".join(token.spacing + token.value for token in sentence)
            for paragraph in segmenter.analyze(line)
            for sentence in paragraph
        ]
    else:
        parts = _END.split(line)  # text, end, text, end, ..., text
        pieces = [text + end for text, end in zip(parts[::2], [*parts[1::2], ""], strict=True)]
    found: list[str] = []
    for piece in pieces:
        sentence = " ".join(piece.split())
        if (
            sentence
            and len(sentence) <= MAX_SENTENCE
            and not (len(sentence) <= _MAX_NUMBERING and _NUMBERING.fullmatch(sentence))
            and is_whole(sentence)
        ):
            found.append(sentence)
    return tuple(found)


@memoized("progsum.judge._segment.sentences", 256 * 1024)
def sentences(text: str) -> tuple[str, ...]:
    r"""The whole sentences of ``text``'s prose lines, in order (see the module docstring).

    Example:
        ``sentences("I saw Dr. Smith.\\n```\\nx = 1\\n```") == ("I saw Dr. Smith.",)``
    """
    found: list[str] = []
    fenced = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        if fenced or not raw.strip() or is_machine_line(raw):
            continue
        line = _MARKER.sub("", raw).strip()
        if line:
            found.extend(_split_line(line))
    return tuple(found)


_PIECES = re.compile(r"(?<=[.!?])\s+|\n+")


def pieces(text: str) -> tuple[str, ...]:
    """Every piece of ``text`` split at end punctuation and line breaks, nothing left out.

    For the exact-value ledger (`progsum.contract._ledger`): a value the user wrote inside code, a
    log line or a fragment is still the user's value and must be kept, even though it is never an
    item's sentence. Whitespace collapsed, list markers off (a numbering such as "2." is a piece
    only when it is all the text: then it is an answer), pieces over `MAX_SENTENCE` skipped.
    """
    found = [" ".join(piece.split()).lstrip("-*\u2022> ").strip() for piece in _PIECES.split(text)]
    kept = [piece for piece in found if piece and len(piece) <= MAX_SENTENCE]
    if len(kept) < 2:  # noqa: PLR2004 - a lone piece is the whole text
        return tuple(kept)
    return tuple(piece for piece in kept if not _NUMBERING.fullmatch(piece))
