"""The day a message belongs to: its ``timestamp``, else a date stamp leading its text.

Chat exports often date a session only in the text of its first message:
``[7:55 pm on 9 June, 2023] Hey Melanie!``. Such a stamp is read by structure: a bracket opening
the text, holding a day, a month (a name from the lexicon's ``kinds.months``, or a number in an
ISO date) and a four-digit year, with anything else inside the bracket (a time, "on") ignored. A
date elsewhere in the text is what a sentence says, not the message's day.

A stamp dates its message and every later message that has no day of its own
(`carried_days`): the facts told after a stamped greeting are the ones it should date. The stamp
is never prose (`without_stamp`), so it never turns a greeting into a fact. Text whose later
lines open with stamps too is a pasted log, each line with its time: none of them is the
message's day, and the text keeps them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from datetime import date

from progsum._memo import memoized
from progsum.judge._lexicon import alternation, entries
from progsum.messages._formats import field, moment
from progsum.messages._responses import as_chat

__all__ = ["carried_days", "day_of", "leading_day", "without_stamp"]

_BRACKETS = {"[": "]", "(": ")", "{": "}"}
_STAMP = re.compile(r"\s*([\[({])([^\])}\n]{4,60})([\])}])[ \t]*\n?")
_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")
_WORD = re.compile(r"[^\W\d_]+")
_LOOKED_AT = 80
"""Characters of a message's text read for a stamp: a stamp opens the text."""
_OPENING = 400
"""Characters of a message's text read for its stamp and for stamps opening the lines after."""


@functools.cache
def _day() -> re.Pattern[str]:
    """A day's number, with its ordinal suffix (the lexicon's ``kinds.ordinals``)."""
    return re.compile(
        rf"(?<![\d:])(\d{{1,2}})(?:{alternation('kinds.ordinals')})?(?![\d:])", re.IGNORECASE
    )


@functools.cache
def _months() -> dict[str, int]:
    """Each month word of the lexicon, by its number (the first twelve are the full names)."""
    names = entries("kinds.months")
    full = names[:12]
    months = {name: n for n, name in enumerate(full, 1)}
    for name in names[12:]:
        months[name] = next(n for n, whole in enumerate(full, 1) if whole.startswith(name[:3]))
    return months


def _date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _inside(inner: str) -> date | None:
    """The date a stamp's inside gives, or None when it holds no whole date."""
    iso = _ISO.search(inner)
    if iso is not None:
        return _date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    months = _months()
    month = next((months[w.casefold()] for w in _WORD.findall(inner) if w.casefold() in months), 0)
    year = _YEAR.search(inner)
    if not month or year is None:
        return None
    rest = inner[: year.start()] + " " + inner[year.end() :]
    day = _day().search(rest)
    return None if day is None else _date(int(year.group(1)), month, int(day.group(1)))


@memoized("progsum.judge._dates.stamp", 128 * 1024)
def _stamp(head: str) -> tuple[date, int] | None:
    """The day of the stamp opening ``head`` and where the text after it starts, or None."""
    match = _STAMP.match(head)
    if match is None or _BRACKETS[match.group(1)] != match.group(3):
        return None
    day = _inside(match.group(2))
    return None if day is None else (day, match.end())


def _leading(text: str) -> tuple[date, int] | None:
    """`_stamp` of ``text``, unless a later line of its opening opens with a stamp too (a log)."""
    if not _may_open(text):
        return None
    found = _stamp(text[:_LOOKED_AT])
    if found is None:
        return None
    later = text[found[1] : _OPENING].split("\n")[1:]
    if any(_stamp(line[:_LOOKED_AT]) is not None for line in later):
        return None
    return found


def _may_open(text: str) -> bool:
    """Whether ``text`` starts as a stamp can (`_STAMP`): a bracket, or a space before one.

    Most texts start with a word: they are passed over without slicing or remembering them.
    """
    return bool(text) and (text[0] in _BRACKETS or text[0].isspace())


def leading_day(text: str) -> date | None:
    """The day of a date stamp opening ``text``, or None."""
    found = _leading(text)
    return None if found is None else found[0]


def without_stamp(text: str) -> str:
    """``text`` without the date stamp that opens it (unchanged when none does)."""
    found = _leading(text)
    return text if found is None else text[found[1] :]


def _opening(message: object) -> str:
    """The start of a message's first text.

    Read as `progsum.judge._extract.message_text` reads text: string content or the ``text``
    blocks of the message's Chat view (`as_chat`).
    """
    content = field(as_chat(message), "content")
    if isinstance(content, str):
        return content[:_OPENING]
    if isinstance(content, Sequence):
        for block in content:
            if field(block, "type") == "text":
                return str(field(block, "text") or "")[:_OPENING]
    return ""


def day_of(message: object) -> date | None:
    """The message's own day: its ``timestamp`` (`moment`), else the stamp opening its text."""
    return moment(message) or leading_day(_opening(message))


def carried_days(
    messages: Sequence[object], *, before: date | None = None
) -> tuple[date | None, ...]:
    """Each message's day: its own, else that of the latest message before it with one.

    ``before`` is the day in force before the first message (None: no day yet).
    """
    days: list[date | None] = []
    current = before
    for message in messages:
        current = day_of(message) or current
        days.append(current)
    return tuple(days)
