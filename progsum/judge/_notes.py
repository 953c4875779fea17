"""Self-contained notes: a fact says who stated it and, when the message carries a day, when.

A message names its speaker with ``name`` and its day with ``timestamp``
(`progsum.messages._formats.speaker`, `progsum.judge._dates`: a ``timestamp`` or a date stamp
opening an earlier message). `note` turns a verbatim
sentence into a note that stands on its own outside the conversation:

* **when**: a message with a day gets it after the speaker, as ``8 May 2023``;
* **who**: a sentence in the first person gets its speaker in front. Without a ``name`` the speaker
  is ``User`` or ``Assistant``. A leading "I" is resolved into the note's subject and its verb
  agrees: "I went yesterday" → ``Caroline (8 May 2023): went yesterday``, "I'm a nurse" → ``is a
  nurse``, "I love hiking" → ``loves hiking``, "I don't eat meat" → ``doesn't eat meat``;
  "my", "me" and a later "I" stay as written, read against the speaker in front. A leading "you"
  (the other speaker, when that speaker's name is known) is resolved the same way;
* a third-person sentence ("The red paint costs $40.") keeps its words and gets its speaker and
  day in front too: every note says who said it, and when wherever the message carries a day.

Exact values are never touched: only the words "I", "you" and a verb's ending change, so every value
of the sentence is in the note token-exactly. The day's values are in the message's `stamp`, which
the binding contract counts as shown by that message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date

from progsum.judge._dates import day_of
from progsum.judge._lexicon import alternation, table, words
from progsum.judge._segment import EMOTICON
from progsum.judge._values import exact_values
from progsum.messages._formats import speaker

__all__ = [
    "SEPARATOR",
    "day_label",
    "joined",
    "label",
    "note",
    "note_parts",
    "split_note",
    "stamp",
    "terse",
]

SEPARATOR = "; "
"""What joins the notes of one label into one item: ``Speaker 1: has jeep; works in marketing``."""


def day_label(day: date) -> str:
    """A day as a note writes it: ``8 May 2023``."""
    return f"{day.day} {day:%B} {day.year}"


def label(who: str, day: date | None) -> str:
    """A note's label: its speaker, and its day when known (``Caroline (8 May 2023)``)."""
    return f"{who} ({day_label(day)})" if day is not None else who


def stamp(message: object, day: date | None = None) -> str:
    """What a message says about itself: its speaker's name and its day, or an empty string.

    ``day`` is the message's day when it comes from an earlier message (`carried_days`); else
    its own (`day_of`).
    """
    day = day or day_of(message)
    return " ".join(part for part in (speaker(message), day and day_label(day)) if part)


_LEAD = re.compile(
    rf"^(?P<pre>(?:(?:{alternation('terse.lead')})\b[,!.]?\s+)*)"
    r"(?P<subject>i|you)(?P<contraction>['\u2019](?:m|ve|d|ll|re)|m\b|ve\b)?\s+(?P<rest>\S.*)$",
    re.IGNORECASE,
)
_CONTRACTED = {"m": "is", "re": "is", "ve": "has", "d": "would", "ll": "will"}
_AGREE = table("notes.agree")
_KEEP = words("notes.invariant")
"""Words after "I" that do not change with the subject (modals and past tenses)."""
_ADVERBS = words("notes.adverbs")


def _third_person(verb: str) -> str:
    """A base verb in the third person singular: love → loves, watch → watches, try → tries."""
    lower = verb.casefold()
    if lower in _AGREE:
        return _AGREE[lower]
    if lower in _KEEP or lower.endswith(("ed", "ing")) or not lower.isalpha():
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return f"{verb}es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return f"{verb[:-1]}ies"
    return f"{verb}s"


def _agree(rest: str) -> str:
    """``rest`` (what followed "I") with its first verb made to agree with a third person."""
    words = rest.split(" ")
    for index, word in enumerate(words):
        bare = word.casefold().rstrip(",.!;")
        if bare in _ADVERBS and index + 1 < len(words):
            continue
        tail = word[len(word.rstrip(",.!;")) :]
        words[index] = _third_person(word[: len(word) - len(tail)]) + tail
        break
    return " ".join(words)


def note(
    sentence: str,
    *,
    who: str,
    day: date | None = None,
    other: str | None = None,
) -> str:
    """``sentence`` as a self-contained note by ``who`` (see the module docstring).

    Args:
        sentence: The verbatim sentence.
        who: Its speaker.
        day: The day its message carries, if any.
        other: The name of the speaker addressed as "you", if known.

    Example:
        ``note("I went yesterday.", who="Caroline", day=date(2023, 5, 8))
        == "Caroline (8 May 2023): went yesterday."``
    """
    return joined(*note_parts(sentence, who=who, day=day, other=other))


def joined(label: str, body: str) -> str:
    """A note from its label and body: ``who (day): body``, ``(day) body`` or the bare body."""
    if not label:
        return body
    return f"{label} {body}" if label.startswith("(") else f"{label}: {body}"


_LABEL = re.compile(
    r"^(?:(?P<who>[^\s:;()?!.][^:;()?!.]{0,40}?(?: \(\d{1,2} [A-Z][a-z]+ \d{4}\))?): |"
    r"(?P<day>\(\d{1,2} [A-Z][a-z]+ \d{4}\)) )(?=\S)"
)
"""A note's label as `joined` writes it: ``Speaker 1: ``, ``Caroline (8 May 2023): ``, or a day
alone, ``(8 May 2023) ``. A speaker's name has no sentence mark, so an answer joined to its
question ("Is it far? Yes: an hour.") has no label."""


def split_note(text: str) -> tuple[str, list[str]]:
    """A note's label (or ``""``) and its bodies, as `joined` and `SEPARATOR` put them together.

    Example:
        ``split_note("Speaker 1: has jeep; works in marketing")
        == ("Speaker 1", ["has jeep", "works in marketing"])``
    """
    match = _LABEL.match(text)
    if match is None:
        return "", text.split(SEPARATOR)
    return match["who"] or match["day"], text[match.end() :].split(SEPARATOR)


def note_parts(
    sentence: str,
    *,
    who: str,
    day: date | None = None,
    other: str | None = None,
) -> tuple[str, str]:
    """`note` in two parts, its label (``Caroline (8 May 2023)``, or empty) and its body.

    A label that is only a day is written in parentheses (``(8 May 2023)``): `note` then joins
    the two with a space, not a colon. Notes of one label can share it: ``label: body; body``.
    """
    when = label("", day)
    lead = _LEAD.match(sentence)
    if lead is not None and lead["pre"] == "":
        subject = lead["subject"].casefold()
        contraction = (lead["contraction"] or "").lstrip("'\u2019").casefold()
        rest = lead["rest"]
        if subject == "i" or (other is not None and contraction in ("", "re", "ve", "d", "ll")):
            verb = _CONTRACTED.get(contraction)
            body = f"{verb} {rest}" if verb else _agree(rest)
            if subject == "i":
                return f"{who}{when}", body
            return f"{who}{when}", f"{other} {body}"
    return f"{who}{when}", sentence


# -- terse notes: a sentence without its discourse fillers --------------------------------------

_OPENERS = alternation("terse.openers")
_REACTIONS = alternation("terse.reactions")
_OPENER = re.compile(
    rf"^(?:(?:{_OPENERS})\b(?: that\b)?[,!.]*|(?:{_REACTIONS})[,!.]+)\s+(?=\S)", re.IGNORECASE
)
_ASIDE = re.compile(rf",?\s*\b(?:{alternation('terse.asides')})\b,?(?=\s|$)", re.IGNORECASE)
_SOFTENERS = re.compile(rf"\s(?:{alternation('terse.softeners')})(?=[\s,.;!]|$)")
"""Intensifiers and softeners, lower case only (a name is never touched)."""
_ARTICLE = re.compile(
    rf"\s(?:{alternation('terse.articles')})(?=\s)(?!\s(?:{alternation('terse.article_keeps')})\b)"
)
_END = re.compile(r"[\s.!,;]+$")
_QUOTED = re.compile(r'"[^"\n]*"|\u201c[^\u201d\n]*\u201d')
"""A span in double quotes (straight or curly): a title or a saying, kept word for word."""
_DANGLES = words("terse.dangles")
"""Words a note does not end on without its full stop (it would read as cut off)."""


def _squeezed(text: str) -> str:
    """``text`` without asides, lower-case softeners and articles."""
    return _ARTICLE.sub("", _SOFTENERS.sub("", _ASIDE.sub("", text)))


def _unquoted(change: Callable[[str], str], text: str) -> str:
    """``change`` applied to ``text`` outside double quotes; quoted spans stay as they are."""
    parts, start = [], 0
    for quoted in _QUOTED.finditer(text):
        parts += [change(text[start : quoted.start()]), quoted[0]]
        start = quoted.end()
    return "".join([*parts, change(text[start:])])


def terse(sentence: str) -> str:
    """``sentence`` as a person's note would have it: fillers, hedges and end marks taken out.

    Openers ("Well,", "Oh", "Haha", "I think", "To be honest"), asides ("you know", "lol"),
    lower-case intensifiers ("really", "just", "very", "so much"), articles inside the sentence,
    emoticons and the final ``.``/``!`` go, but never inside double quotes ("Gone with the
    Wind" is a title); words are only ever removed, never changed, so every exact value and
    name is still there token-exactly. When removing them would leave a lone word or change the
    values, the sentence is returned as it was (less its final mark); a note ending on a
    function word ("easier to take care of.") keeps its full stop.
    """
    text = _END.sub("", sentence.strip())
    while (shorter := _OPENER.sub("", text, count=1)) != text:
        text = shorter[:1].upper() + shorter[1:] if shorter[:1] == "i" else shorter
    text = EMOTICON.sub("", text)
    text = _unquoted(_squeezed, _END.sub("", text))
    text = _END.sub("", " ".join(text.split()))
    if len(text.split()) < 2 or sorted(exact_values(text)) != sorted(exact_values(sentence)):  # noqa: PLR2004 - a lone word is no note
        text = _END.sub("", sentence.strip())
    last = text.rsplit(" ", 1)[-1].casefold() if text else ""
    if last in _DANGLES:  # "easier to take care of." keeps its full stop: it ends there
        mark = sentence.strip()[len(_END.sub("", sentence.strip())) :].strip()
        return text + (mark[:1] if mark[:1] in ".!" else ".")
    return text
