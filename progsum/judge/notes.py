"""Self-contained notes: a fact says who stated it and, when the message carries a day, when.

A message names its speaker with ``name`` and its day with ``timestamp``
(`progsum.messages.formats.speaker`, `progsum.messages.formats.moment`). `note` turns a verbatim
sentence into a note that stands on its own outside the conversation:

* **when**: a message with a day gets it after the speaker, as ``8 May 2023``;
* **who**: a sentence in the first person gets its speaker in front. Without a ``name`` the speaker
  is ``User`` or ``Assistant``. A leading "I" is resolved into the note's subject and its verb
  agrees: "I went yesterday" → ``Caroline (8 May 2023): went yesterday``, "I'm a nurse" → ``is a
  nurse``, "I love hiking" → ``loves hiking``, "I don't eat meat" → ``doesn't eat meat``;
  "my", "me" and a later "I" stay as written, read against the speaker in front. A leading "you"
  (the other speaker, when that speaker's name is known) is resolved the same way;
* a third-person sentence ("The red paint costs $40.") gets only the day, or nothing.

Exact values are never touched: only the words "I", "you" and a verb's ending change, so every value
of the sentence is in the note token-exactly. The day's values are in the message's `stamp`, which
the binding contract counts as shown by that message.
"""

from __future__ import annotations

import re
from datetime import date

from progsum.judge.segment import EMOTICON
from progsum.judge.values import exact_values
from progsum.messages.formats import moment, speaker

__all__ = ["SEPARATOR", "day_label", "joined", "note", "note_parts", "split_note", "stamp", "terse"]

SEPARATOR = "; "
"""What joins the notes of one label into one item: ``Speaker 1: has jeep; works in marketing``."""


def day_label(day: date) -> str:
    """A day as a note writes it: ``8 May 2023``."""
    return f"{day.day} {day:%B} {day.year}"


def stamp(message: object) -> str:
    """What a message says about itself: its speaker's name and its day, or an empty string."""
    day = moment(message)
    return " ".join(part for part in (speaker(message), day and day_label(day)) if part)


_LEAD = re.compile(
    r"^(?P<pre>(?:(?:well|yes|yeah|yep|no|nope|oh|ah|actually|honestly|so|and|but|also|haha|"
    r"lol|wow|ok|okay|sure|ya|yea|nah)\b[,!.]?\s+)*)"
    r"(?P<subject>i|you)(?P<contraction>['\u2019](?:m|ve|d|ll|re)|m\b|ve\b)?\s+(?P<rest>\S.*)$",
    re.IGNORECASE,
)
_CONTRACTED = {"m": "is", "re": "is", "ve": "has", "d": "would", "ll": "will"}
_AGREE = {
    "am": "is",
    "are": "is",
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "dont": "doesn't",
    "haven't": "hasn't",
    "havent": "hasn't",
    "were": "was",
    "weren't": "wasn't",
    "aren't": "isn't",
}
_KEEP = frozenset(
    {
        *("can", "can't", "cannot", "could", "couldn't", "will", "won't", "would", "wouldn't"),
        *("should", "shouldn't", "must", "might", "may", "did", "didn't", "was", "wasn't", "had"),
        *("hadn't", "used", "went", "got", "saw", "made", "took", "came", "ate", "drove", "ran"),
        *("bought", "found", "left", "met", "told", "thought", "felt", "knew", "began", "became"),
        *("won", "lost", "wrote", "gave", "grew", "kept", "sold", "spent", "taught", "heard"),
        *("brought", "built", "caught", "chose", "fell", "flew", "forgot", "paid", "sat", "slept"),
        *("spoke", "stood", "swam", "understood", "wore", "said", "sang", "drank", "broke"),
        *("shall", "need", "ought", "cant", "wont", "didnt", "wasnt", "couldnt", "wouldnt"),
    }
)
"""Words after "I" that do not change with the subject (modals and past tenses)."""
_ADVERBS = frozenset(
    {
        *("really", "also", "just", "usually", "always", "never", "actually", "still", "often"),
        *("sometimes", "recently", "currently", "mostly", "definitely", "only", "even", "too"),
        *("totally", "absolutely", "rarely", "occasionally", "finally", "already", "both", "all"),
        *("now", "mainly", "generally", "seriously", "truly", "probably"),
    }
)
_PERSON = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|im|ive|me|my|mine|myself|we|our|us)\b", re.IGNORECASE
)


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
    when = f" ({day_label(day)})" if day is not None else ""
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
    if _PERSON.search(sentence):
        return f"{who}{when}", sentence
    return (f"({day_label(day)})", sentence) if day is not None else ("", sentence)


# -- terse notes: a sentence without its discourse fillers --------------------------------------

_OPENERS = (
    r"well|oh|ah|aw|so|yes|yeah|yep|yup|haha+|hah|lol|wow|ok|okay|hmm+|um+|uh|honestly|actually|"
    r"anyway|anyways|anyhow|and|but|also|plus|finally|besides|by the way|in fact|of course|hey|hi|"
    r"hello|sure|alright|to be honest|you know|i mean|i think|i guess|i believe|"
    r"i suppose|i feel like|i'd say|i would say"
)
_REACTIONS = r"nice|cool|great|awesome|true|right|sorry|thanks|thank you|me too|same here|no way"
_OPENER = re.compile(
    rf"^(?:(?:{_OPENERS})\b(?: that\b)?[,!.]*|(?:{_REACTIONS})[,!.]+)\s+(?=\S)", re.IGNORECASE
)
_ASIDE = re.compile(
    r",?\s*\b(?:you know|to be honest|haha+|hah|lol|i think|i guess|i believe|i mean)\b,?"
    r"(?=\s|$)",
    re.IGNORECASE,
)
_SOFTENERS = re.compile(
    r"\s(?:really|actually|just|very|basically|literally|definitely|totally|absolutely|"
    r"honestly|kind of|sort of|so much)(?=[\s,.;!]|$)"
)
"""Intensifiers and softeners, lower case only (a name is never touched)."""
_ARTICLE = re.compile(r"\s(?:a|an|the)(?=\s)(?!\s(?:lot|few|little|bit|while|same)\b)")
_END = re.compile(r"[\s.!,;]+$")
_DANGLES = frozenset(
    {
        *("the", "a", "an", "and", "or", "but", "of", "to", "with", "for", "so", "in", "on"),
        *("at", "about", "from", "by", "into", "than", "as", "like", "e.g.", "i.e.", "etc."),
    }
)
"""Words a note does not end on without its full stop (it would read as cut off)."""


def terse(sentence: str) -> str:
    """``sentence`` as a person's note would have it: fillers, hedges and end marks taken out.

    Openers ("Well,", "Oh", "Haha", "I think", "To be honest"), asides ("you know", "lol"),
    lower-case intensifiers ("really", "just", "very", "so much"), articles inside the sentence,
    emoticons and the final ``.``/``!`` go; words are only ever removed, never changed, so
    every exact value and name is still there token-exactly. When removing them would leave a
    lone word or change the values, the sentence is returned as it was (less its final mark); a
    note ending on a function word ("easier to take care of.") keeps its full stop.
    """
    text = _END.sub("", sentence.strip())
    while (shorter := _OPENER.sub("", text, count=1)) != text:
        text = shorter[:1].upper() + shorter[1:] if shorter[:1] == "i" else shorter
    text = EMOTICON.sub("", text)
    text = _ASIDE.sub("", _END.sub("", text))
    text = _SOFTENERS.sub("", text)
    text = _ARTICLE.sub("", text)
    text = _END.sub("", " ".join(text.split()))
    if len(text.split()) < 2 or sorted(exact_values(text)) != sorted(exact_values(sentence)):  # noqa: PLR2004 - a lone word is no note
        text = _END.sub("", sentence.strip())
    last = text.rsplit(" ", 1)[-1].casefold() if text else ""
    if last in _DANGLES:  # "easier to take care of." keeps its full stop: it ends there
        mark = sentence.strip()[len(_END.sub("", sentence.strip())) :].strip()
        return text + (mark[:1] if mark[:1] in ".!" else ".")
    return text
