"""Salience: how much a sentence adds, so the extractive summarizer keeps the most telling first.

`salience` scores a candidate (a whole number, so ties and order are deterministic):

* **exact values**: 3 each, at most 3 counted (amounts, dates, ids, codes, `progsum.judge.values`),
  and 2 more for each identifier or code among them (letters and digits: ``KX7Q2M``, ``W-12345``);
* **named entities**: 2 each, at most 3 counted: a capitalised word that does not open the sentence
  and is not "I" ("Paris", "NordicTrack", "Magic Sword");
* **the speaker's own statement** about themselves or the task ("I work in marketing", "my sister
  lives in Leeds"): 2 from the user, 1 from the other speaker; a user's sentence 1 more;
* **an answer** to the other speaker's question: 2;
* **novelty**: 1 per content word the prior summary and the update so far do not hold, at most 4;
* **a hedge** in front ("I think", "maybe", "probably", "I guess"): minus 2.

`is_pleasantry` says which sentences are never items: a greeting, thanks, an acknowledgement or a
reaction ("That sounds like fun!", "Thanks so much.", "Me too, haha.", "I see.") with no exact
value and fewer than two content words once its pleasantry words are set aside; a sentence that
opens with the speaker's own world ("I have a jeep.", "My dog is Rex.") needs only one. Rapport
with no value is one too, whatever its words ("We can keep in touch and share with each other",
"I'll keep your words in mind", an assistant's "As an AI, I can't go for a walk"), unless a "but"
goes on to say something ("As an AI, I can't taste food, but I can recommend ...").
"""

from __future__ import annotations

import re

from progsum.judge.values import exact_values

__all__ = ["content_words", "is_pleasantry", "plain", "salience"]

_WORD = re.compile(r"[a-z][a-z'-]*")
_MIN_LETTERS = 3
_STOP = frozenset(
    {
        *("the", "and", "for", "with", "from", "are", "was", "were", "been", "this", "that"),
        *("these", "those", "you", "your", "our", "they", "them", "she", "him", "her", "his"),
        *("its", "it's", "i'm", "i've", "i'll", "i'd", "we're", "you're", "that's", "there"),
        *("here", "what", "which", "who", "how", "when", "where", "why", "yes", "yeah", "not"),
        *("but", "all", "any", "some", "just", "also", "too", "very", "really", "then", "than"),
        *("will", "would", "can", "could", "should", "have", "has", "had", "does", "did", "get"),
        *("got", "one", "out", "about", "into", "okay", "alright", "sure", "well", "thanks"),
        "thank",
        *("please", "let's", "lets", "sounds", "good", "great", "haha", "lol", "wow", "hey"),
        *("nice", "cool", "like", "much", "more", "now", "don't", "dont", "can't", "won't"),
        *("didn't", "doesn't", "isn't", "wasn't", "it", "is", "be", "do", "so", "oh", "ok"),
    }
)
_PLEASANT = frozenset(
    {
        *("fun", "awesome", "amazing", "wonderful", "lovely", "fantastic", "awesome", "glad"),
        *("happy", "sorry", "hope", "hoping", "luck", "congrats", "congratulations", "welcome"),
        *("bye", "goodbye", "hello", "hi", "hey", "morning", "night", "evening", "day", "same"),
        *("agree", "agreed", "exactly", "true", "right", "indeed", "definitely", "totally"),
        *("absolutely", "course", "problem", "worries", "interesting", "cute", "sweet", "see"),
        *("understand", "know", "think", "guess", "mean", "totally", "hear", "heard", "talk"),
        *("talking", "chat", "chatting", "meet", "meeting", "nice", "enjoy", "tell", "hahaha"),
        *("yep", "nope", "yay", "omg", "wish", "wishes", "care", "soon", "again", "sound"),
        *("love", "loved", "loves", "lovely", "enjoyed", "enjoying", "fine", "thing", "things"),
        *("later", "next", "time", "company", "today", "goodbye", "bye-bye", "tonight"),
    }
)
_CAPITAL = re.compile(r"(?<=[\s(\"'])[A-Z][\w'-]*")
_NOT_ENTITY = frozenset({"I", "I'm", "I've", "I'd", "I'll", "Im", "Ive", "OK", "Ok"})
_OWN = re.compile(
    r"^(?:[\w ,]{0,20}\b)?(?:i|i'm|i've|im|ive|we|we're|my|our)\b|\b(?:my|our|mine)\b",
    re.IGNORECASE,
)
_SELF_START = re.compile(
    r"^(?:well,?\s+|oh,?\s+|yes,?\s+|yeah,?\s+)?(?:i|i'm|i've|im|ive|we|we're|my|our)\b(?!\s+(?:"
    r"think|guess|hope|mean|know|see|bet|agree|wish|suppose|feel|believe|understand|can't wait|"
    r"would love|'d love|love|like|enjoy)\b)",
    re.IGNORECASE,
)
"""A sentence opening with the speaker ("I have", "my dog", "we moved"), not with a reaction
("I think", "I hope", "I love that")."""
_HEDGE = re.compile(
    r"^(?:i think|i guess|i suppose|maybe|probably|perhaps|i feel like)\b", re.IGNORECASE
)
_RAPPORT = re.compile(
    r"\b(?:(?:we can|we'll|we will|we should|let's|let us|hope to|continue to) (?:\w+ )?"
    r"(?:keep|stay) in touch|share with each other|accompany each other|"
    r"(?:i'm|i am|i'll be|always|still) here (?:for|with) you|"
    r"my (?:honou?r|pleasure) to (?:be able to )?(?:help|assist|accompany|chat|talk|serve)|"
    r"look(?:s|ing)? forward to (?:our|the|your) next (?:chat|conversation|interaction|talk|time)|"
    r"(?:keep|bear) (?:your words|that|this|it|your advice) in mind|"
    r"take (?:your|the|that) advice to heart|tak(?:e|en) note of (?:that|it|this)[.!]?$|"
    r"as an? ai\b[^.]{0,30}?,\s*i (?:don't|do not|can't|cannot|am not|have no)\b)",
    re.IGNORECASE,
)
"""Rapport, not content: "We can keep in touch and share with each other", "always here for
you", "It's my honor to", "I look forward to our next chat", "I'll keep your words in mind", an
assistant's "As an AI, I can't ..." (with no "but" after it: "..., but I can recommend X" is
advice)."""
_BUT = re.compile(r"\bbut\b", re.IGNORECASE)
_GREETING = re.compile(
    r"^(?i:hello|hi|hey|dear|greetings|good (?:morning|afternoon|evening|night))\b[\s,!.]*"
    r"(?:(?i:(?:my\s+)?(?:dear\s+)?(?:friend|buddy|there|everyone|ai(?:\s+companion)?))\b|"
    r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)?[\s,!.]*$"
)
"""A greeting with at most a name or a form of address: "Good morning, John Zhang.", "Hello, AI
companion!", "Hi there!"."""
_MAX_VALUES = 3
_CODE = re.compile(r"(?=[A-Za-z-]*\d)(?=[\d-]*[A-Za-z])[A-Za-z\d-]{4,}")
"""An identifier or code (letters and digits: KX7Q2M, W-12345, UA881): 2 more than a value."""
_MAX_ENTITIES = 3
_MAX_NOVEL = 4
_PLEASANT_WORDS = 2


def plain(text: str) -> str:
    """``text`` with typographic apostrophes made ASCII, for matching only (items stay verbatim)."""
    return text.replace("\u2019", "'")


def content_words(text: str) -> frozenset[str]:
    """Case-folded words of 3+ letters that are not function words or pleasantries."""
    return frozenset(
        w
        for w in _WORD.findall(plain(text).casefold())
        if len(w) >= _MIN_LETTERS and w not in _STOP
    )


def is_pleasantry(sentence: str) -> bool:
    """Whether ``sentence`` is a greeting, thanks, acknowledgement or reaction (never an item)."""
    if exact_values(sentence):
        return False
    text = plain(sentence)
    if _GREETING.match(text) or (_RAPPORT.search(text) and not _BUT.search(text)):
        return True
    said = len(content_words(sentence) - _PLEASANT)
    if said and _SELF_START.match(text):
        return (
            False  # "I have a jeep.", "My dog is Rex.": one word of the speaker's world is a fact
        )
    return said < _PLEASANT_WORDS


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
