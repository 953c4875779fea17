"""Inert text: a value that cannot change the structure of the Markdown it is rendered into.

`render_header` passes every string it gives a header template through `inert`, so an item, the
objective, the thread id or a label can never open a section, a fence or a list item of its own
(DESIGN invariant 11), whichever template renders it. Ordinary one-line text comes out unchanged.
"""

from __future__ import annotations

import re
import unicodedata

from progsum.judge._memo import short_text_cache
from progsum.messages._reading import read

__all__ = ["LINE_SEPARATOR", "inert", "inert_item"]

LINE_SEPARATOR = " / "
"""What a line break inside a value becomes: the value stays on one line."""

_ANSI = re.compile(
    r"""
    (?:\x1b[\]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)  # OSC, DCS
    | (?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]                                           # CSI (colours)
    | \x1b[ -/]*[0-~]                                                            # other escapes
    """,
    re.VERBOSE,
)
"""Terminal escape sequences (ECMA-48): colours, cursor moves, window titles. What a terminal
showed is the text around them, so they are removed."""
_ESCAPE_STARTS = "\x1b\x90\x98\x9b\x9d\x9e\x9f"
"""The characters an escape sequence starts with (ESC and the C1 introducers)."""
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x85\u2028\u2029]")
"""Everything Unicode counts as a line break (UAX #14 mandatory breaks)."""
_FENCE_RUN = re.compile(r"`{3,}|~{3,}")
"""Three or more backticks or tildes: a code fence, wherever a template places the value."""
_BLOCK_MARKER = re.compile(
    r"""
    (?P<first>\#{1,6}(?=[ \t]|$)|>)                     # heading, block quote
    | (?P<bullet>[-+*])(?=[ \t]|$)                     # bullet list item
    | \d{1,9}(?P<ordered>[.)])(?=[ \t]|$)              # ordered list item
    | (?P<rule>[-*_=])(?=(?:[ \t]*[-*_=]){2,}[ \t]*$)  # thematic break, setext underline
    """,
    re.VERBOSE,
)
"""The start of a Markdown block (CommonMark 0.31 ATX headings, block quotes, list items,
thematic breaks), which a value placed at the start of a line would open."""


def inert(text: str) -> str:
    r"""``text`` as one line that renders as plain text in Markdown.

    - terminal escape sequences are removed;
    - line breaks become `LINE_SEPARATOR`; each line is stripped and blank lines are skipped;
    - a tab becomes a space; other control characters (C0, DEL, C1) show as ``\xNN``;
    - format characters (bidi embeddings, overrides, isolates and marks, zero-width spaces and
      joiners, the byte-order mark, tag characters) are removed: what remains is the text in
      the order it was stored; a lone surrogate becomes U+FFFD;
    - runs of three or more backticks or tildes are backslash-escaped, so no fence opens;
    - a leading heading, quote, list or rule marker is backslash-escaped.
    """
    if text.isprintable():  # the common case: no control, format or line-break character
        one_line = text.strip()
    else:
        if any(c in text for c in _ESCAPE_STARTS):
            text = _ANSI.sub("", text)
        lines = (_visible(line).strip() for line in _LINE_BREAK.split(text))
        one_line = LINE_SEPARATOR.join(line for line in lines if line)
    if "```" in one_line or "~~~" in one_line:
        one_line = _FENCE_RUN.sub(lambda m: "".join("\\" + c for c in m.group()), one_line)
    return _escape_block_marker(one_line)


def _visible(line: str) -> str:
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() else _visible_char(c) for c in line)


def _visible_char(char: str) -> str:
    category = unicodedata.category(char)
    if char == "\t":
        return " "
    if category == "Cc":
        return f"\\x{ord(char):02x}"
    if category == "Cf":
        return ""
    if category == "Cs":
        return "\ufffd"
    return char


def _escape_block_marker(line: str) -> str:
    match = _BLOCK_MARKER.match(line)
    if match is None:
        return line
    at = match.start(match.lastgroup or 0)
    return line[:at] + "\\" + line[at:]


_REF_CHARS = 8
"""The longest bracketed token `inert_item` reads as an id (brackets included)."""
_ASCII_OPENERS = "[{"
"""ASCII opening brackets other than the parenthesis (Unicode category Ps)."""


@short_text_cache
def inert_item(text: str) -> str:
    """An item's text made `inert`, without a bracketed id of its own anywhere in it.

    The header writes each item as ``- [ID] text``; a text holding what reads as another id
    (``[C9]``, in fullwidth or lenticular brackets, with a Cyrillic letter: any opening and
    closing brackets around letters and at least one digit, read as `progsum.messages._reading`
    folds them), at its start or further on, would show a forged id. Each such token keeps its
    letters between parentheses, which no header reads as an id.
    """
    line = inert(text)
    if line.isascii() and not any(bracket in line for bracket in _ASCII_OPENERS):
        return line
    spans = _refs(line)
    if not spans:
        return line
    chars = list(line)
    for start, end in spans:
        chars[start], chars[end] = "(", ")"
    return "".join(chars)


def _refs(line: str) -> list[tuple[int, int]]:
    """Positions of the brackets of each id-like token in ``line``."""
    found = []
    at = 0
    while at < len(line):
        char = line[at]
        if char != "(" and unicodedata.category(char) == "Ps":
            end = _closing(line, at)
            if end is not None:
                found.append((at, end))
                at = end
        at += 1
    return found


def _closing(line: str, start: int) -> int | None:
    """The closing bracket of an id-like token opened at ``start``, or None."""
    for end in range(start + 2, min(len(line), start + _REF_CHARS)):
        if unicodedata.category(line[end]) == "Pe":
            inside = read(line[start + 1 : end])
            is_ref = (
                inside.isalnum()
                and any(c.isdigit() for c in inside)
                and any(c.isalpha() for c in inside)
            )
            return end if is_ref else None
    return None
