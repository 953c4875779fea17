"""Who wrote a message: the person, the assistant, or a machine (tools, harnesses, command output).

Only what the person typed may bind (DESIGN invariant 5). A message's author class is decided once,
when it is appended or imported, and kept on the state beside the message:

* ``user``: text the person typed;
* ``assistant``: the model's replies;
* ``tool``: machine text, wherever it sits: tool results, OpenAI ``system``/``developer``/``tool``
  messages, and harness text sent in the user role: every tag-delimited block, whatever the tag's
  name (``<system-reminder>``, ``<environment_context>``, look-alike spellings included;
  `progsum.judge._machine`), coloured command output, "[Request interrupted by user]" markers,
  and the "Read the output file to retrieve the result: PATH" line Claude Code adds to a task
  notification.

Importers mark what they know (a SWE-agent observation is ``tool`` although its role is ``user``);
a caller marks a message with ``state.append(message, author="tool")``. Otherwise `classify`
decides, by these documented rules: the role first (assistant, system and tool roles decide
alone); a user-role message is ``tool`` when it holds only tool results, or when no prose is left
once harness tags, ANSI-coloured lines, fenced code and log-like lines are taken out of its text
(`user_prose`).

`user_prose` is also what the extractive pass reads from a user message: the person's sentences
without the machine text a harness appended to them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Literal, TypeAlias

from progsum._memo import memoized
from progsum.errors import ConfigError
from progsum.judge._lexicon import alternation
from progsum.judge._machine import prose_tags, strip_blocks
from progsum.messages._formats import MessageInfo, field
from progsum.messages._responses import as_chat

__all__ = ["AUTHORS", "Author", "check_author", "classify", "user_prose"]

Author: TypeAlias = Literal["user", "assistant", "tool"]
"""Who wrote a message: the person, the model, or a machine."""

AUTHORS: tuple[Author, ...] = ("user", "assistant", "tool")

_FENCE = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)", re.DOTALL | re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_MARKER = re.compile(
    r"^\s*(?:\[Request interrupted by user[^\]]*\]|"
    r"Read the output file to retrieve the result: \S+)\s*$",
    re.MULTILINE,
)
"""Lines a harness writes in its own words: Claude Code's interruption marker and the line it
puts after a ``<task-notification>``."""


@functools.cache
def _log_line() -> re.Pattern[str]:
    """Lines that are command output, logs, code or prompts rather than what a person writes.

    The installer's words and the levels are the lexicon's (``machine.output_openers``,
    ``machine.output_levels``); the trace lines are Python's and Java's, the last three
    SWE-agent's prompt footer.
    """
    openers = alternation("machine.output_openers", any_space=False)
    levels = alternation("machine.output_levels", any_space=False)
    return re.compile(
        r"""^\s*(?:
        Traceback\ \(most\ recent\ call\ last\) | File\ ".*",\ line\ \d+ | at\ [\w.$<>]+\(.*\)$ |
        \$\ \S | >>>\ | \.\.\.\ | \d+:(?!\d) | \d{4}-\d\d-\d\d[T\ ]\d\d:\d\d | \[[+x*!-]\]\ |"""
        rf"""
        (?:{openers})\b |
        (?:{levels})(?::|\]|\s+-\s) |"""
        r"""
        [{\[<(][^\s]*$ | [-=_*#~]{4,}\s*$ | \(Open\ file:|\(Current\ directory:|bash-\$
    )""",
        re.VERBOSE,
    )


_NO_SYMBOLS = str.maketrans("", "", "{}()[];=<>|\\/$#@`^~_")
"""Deletes the code symbols: what a line loses under it is its count of them, in C."""
_SYMBOL_SHARE = 0.12
"""A line with more than this share of code symbols is code or a log, not prose."""
_WORDS = re.compile(r"[^\W\d_]{2,}")


def check_author(author: object, index: int | None = None) -> Author:
    """``author`` if it is an author class.

    Raises:
        ConfigError: it is not ``user``, ``assistant`` or ``tool``.
    """
    if author not in AUTHORS:
        where = "" if index is None else f" for message {index}"
        raise ConfigError(
            f"author={author!r}{where} is not an author class; use 'user' (typed by the "
            "person), 'assistant' (the model) or 'tool' (tool output and harness text)"
        )
    return author


def classify(message: object, info: MessageInfo) -> Author:
    """The default author class of a message (see the module docstring for the rules)."""
    if info.role == "assistant":
        return "assistant"
    if info.role != "user":
        return "tool"
    return "user" if user_prose(message).strip() else "tool"


def user_prose(message: object) -> str:
    """The person's own prose in a user-role message: text blocks without machine text.

    Tag-delimited blocks (`progsum.judge._machine.strip_blocks`; the caller's ``prose_tags``
    excepted, `progsum.judge._machine.keeping`), "[Request interrupted …]"
    markers, fenced code, lines holding ANSI escapes and lines that look like logs, code or
    command output are left out.
    """
    content = field(as_chat(message), "content")
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, Sequence):
        texts = [
            str(field(block, "text") or "") for block in content if field(block, "type") == "text"
        ]
    else:
        return ""
    keep = prose_tags()
    return "\n".join(kept for text in texts if (kept := _prose(text, keep)))


@memoized("progsum.judge._provenance.prose", 256 * 1024)
def _prose(text: str, keep: frozenset[str]) -> str:
    """``text`` without machine lines (the blocks of ``keep``'s tags are prose).

    Remembered: the contract, the ledger and the extract pass of one compaction read the same
    messages.
    """
    text = strip_blocks(text, keep)
    text = _FENCE.sub("\n", text)
    text = _MARKER.sub("", text)
    lines = [line for line in text.split("\n") if _is_prose_line(line)]
    return "\n".join(lines).strip()


def _is_prose_line(line: str) -> bool:
    if not line.strip():
        return True  # paragraph breaks survive
    if _ANSI.search(line) or "\x00" in line or _log_line().match(line):
        return False
    stripped = line.strip()
    if _WORDS.search(stripped) is None:
        return False
    symbols = len(stripped) - len(stripped.translate(_NO_SYMBOLS))
    return symbols <= _SYMBOL_SHARE * len(stripped)
