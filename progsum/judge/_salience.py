"""Salience: how much a sentence adds, so the extractive summarizer keeps the most telling first.

`salience` scores a candidate (a whole number, so ties and order are deterministic):

* **exact values**: 3 each, at most 3 counted (amounts, dates, ids, codes, `progsum.judge._values`),
  and 2 more for each identifier or code among them (letters and digits: ``KX7Q2M``, ``W-12345``);
* **named entities**: 2 each, at most 3 counted: a capitalised word that does not open the sentence
  and is not "I" ("Paris", "NordicTrack", "Magic Sword");
* **the speaker's own statement** about themselves or the task ("I work in marketing", "my sister
  lives in Leeds"): 2 from the user, 1 from the other speaker; a user's sentence 1 more;
* **an answer** to the other speaker's question: 2;
* **novelty**: 1 per content word the prior summary and the update so far do not hold, at most 4;
* **a hedge** in front ("I think", "maybe", "probably", "I guess"): minus 2.

The words (the hedges, the stop-list) are the lexicon's (`progsum.judge._lexicon`); whether a
sentence is an item at all is the judge's (`progsum.judge._seam`).
"""

from __future__ import annotations

import re

from progsum.judge._lexicon import alternation, content_words, entries
from progsum.judge._values import exact_values

__all__ = ["content_words", "plain", "salience"]


_CAPITAL = re.compile(r"(?<=[\s(\"'])[A-Z][\w'-]*")
_NOT_ENTITY = frozenset(entries("salience.not_entities"))
_OWN = re.compile(
    rf"^(?:[\w ,]{{0,20}}\b)?(?:{alternation('terse.first_person')})\b", re.IGNORECASE
)
_HEDGE = re.compile(rf"^(?:{alternation('salience.hedges')})\b", re.IGNORECASE)
_MAX_VALUES = 3
_CODE = re.compile(r"(?=[A-Za-z-]*\d)(?=[\d-]*[A-Za-z])[A-Za-z\d-]{4,}")
"""An identifier or code (letters and digits: KX7Q2M, W-12345, UA881): 2 more than a value."""
_MAX_ENTITIES = 3
_MAX_NOVEL = 4
_PLEASANT_WORDS = 2


def plain(text: str) -> str:
    """``text`` with typographic apostrophes made ASCII, for matching only (items stay verbatim)."""
    return text.replace("\u2019", "'")


def salience(
    sentence: str,
    *,
    user: bool,
    answer: bool = False,
    known: frozenset[str] = frozenset(),
) -> int:
    """How much ``sentence`` adds (see the module docstring); higher is kept first.

    Args:
        sentence: The candidate, verbatim.
        user: Whether the user wrote it.
        answer: Whether it answers the other speaker's question.
        known: Content words the prior summary and the update so far already hold.
    """
    text = plain(sentence)
    found = exact_values(text)
    values = min(len(found), _MAX_VALUES)
    codes = min(sum(bool(_CODE.fullmatch(value)) for value in found), _MAX_VALUES)
    entities = min(sum(w not in _NOT_ENTITY for w in _CAPITAL.findall(text)), _MAX_ENTITIES)
    own = bool(_OWN.search(text))
    novel = min(len(content_words(text) - known), _MAX_NOVEL)
    return (
        3 * values
        + 2 * codes
        + 2 * entities
        + (2 if user else 1) * own
        + user
        + 2 * answer
        + novel
        - 2 * bool(_HEDGE.match(text))
    )
