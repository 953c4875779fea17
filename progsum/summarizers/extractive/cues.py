"""The extractive summarizer's cues: the English patterns that say what a sentence states.

Each pattern is read by `progsum.summarizers.extractive.kinds` (a decision, a ruled-out option, a
fact and its sort: a date, a person, a preference, the speaker's own statement) or by
`progsum.summarizers.extractive.candidates` (an obligation that is only a remark).
"""

from __future__ import annotations

import re

from progsum.judge.salience import plain

__all__ = [
    "ADVICE",
    "DATES",
    "DECISION",
    "NAMES",
    "NEXT_STEP",
    "NOT_OURS",
    "PEOPLE",
    "PERSONAL",
    "PREFERENCE",
    "REJECTED",
    "RESULT",
    "SELF",
    "remark",
]

DATES = re.compile(
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?\s+\d{1,2}\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:january|february|march|april|may|june|july|"
    r"august|september|october|november|december)\b|\b\d{4}-\d\d-\d\d\b|"
    r"\b(?:birthday|anniversary|appointment|wedding|graduation)\b",
    re.IGNORECASE,
)
PEOPLE = re.compile(
    r"\b(?:my|our|his|her|their)\s+(?:\w+\s+)?(?:wife|husband|partner|boyfriend|girlfriend|"
    r"sister|brother|mom|mum|mother|dad|father|parents|son|daughter|kids?|children|friend|"
    r"friends|boss|coworker|colleague|aunt|uncle|cousin|grandma|grandpa|grandmother|"
    r"grandfather|neighbou?r|roommate|fiancee?)\b",
    re.IGNORECASE,
)
PREFERENCE = re.compile(
    r"\b(?:i|we)(?:'m|'d| am| would)?\s+(?:really\s+|also\s+|just\s+|do\s+|don't\s+|"
    r"do not\s+|absolutely\s+)*(?:like|love|enjoy|prefer|hate|dislike|adore|can't stand|"
    r"fond of|into|a fan of)\b|\b(?:my|our)\s+favou?rite\b",
    re.IGNORECASE,
)

_I = r"(?:i|we|im|ive)(?:'(?:m|ve|d|ll|re))?"
"""A first-person subject: I, I'm, I've, I'd, I'll, we, we're, ... (also unpunctuated Im, Ive)."""
_AUX = (
    r"(?:really|also|actually|just|still|usually|always|never|often|sometimes|recently|"
    r"currently|mostly|definitely|totally|only|even|too|do|don't|dont|did|didn't|does|can|can't|"
    r"cannot|could|couldn't|will|won't|would|wouldn't|have|haven't|had|used to|kind of|kinda|am|"
    r"is|are|was|were|not|now|already|both|all)"
)
"""Words that may stand between a subject and what it says."""
_HEDGE = (
    r"(?:think|thought|guess|know|knew|hope|see|mean|bet|wish|agree|suppose|wonder|wondered|"
    r"understand|believe|imagine|feel|felt|hear|heard|remember|forgot|appreciate|sorry|glad|sure|"
    r"afraid|happy|excited|good|great|fine|well|okay|ok|doing|kidding|joking|jealous|curious|so|"
    r"very|hoping|thinking|going to|gonna|looking forward|say|said|tell|told|get it|got it|wait|"
    r"recommend|suggest|apologize|apologise)"
)
"""Hedges and pleasantries: "I think ...", "I'm sure", "I hope you ...": no fact follows."""
_STATEMENT = rf"(?:\s+{_AUX})*\s+(?!(?:{_HEDGE}|{_AUX})\b)[a-z]"
SELF = re.compile(rf"\b{_I}{_STATEMENT}", re.IGNORECASE)
PERSONAL = re.compile(
    r"\b(?:my|our)\s+(?:[\w']+\s+){0,2}?(?:is|are|was|were|has|have|had|lives|works|loves|"
    r"likes|plays|makes)\b|\b(?:is|are|was|were|'s|'re)\s+(?:my|our)\s+[a-z]|"
    rf"\b(?:he|she|they)(?:'(?:s|re|d|ll|ve))?{_STATEMENT}|"
    r"\bshes\s+[a-z]|\b(?:his|her|their)\s+(?:name|job|work|family|favou?rite|age)\b|"
    r"\bmine (?:is|are|was|were)\b|^there(?:'s| is| are| was| were)\b",
    re.IGNORECASE,
)
RESULT = re.compile(
    r"\b(?:found|passes|passed|fails|failed|succeeded|returns|returned|shows|showed|"
    r"costs|is available|are available|is booked|is confirmed|completed|finished|added|removed|"
    r"updated|cancell?ed|changed|modified|processed|issued|refunded|created|deleted|"
    r"fixed|successfully)\b",
    re.IGNORECASE,
)
ADVICE = re.compile(
    r"\b(?:i (?:would |'d )?(?:recommend|suggest)|recommended|a good choice|worth (?:a )?(?:visit|"
    r"try|read|watch)|you (?:could|can|might|should|may) (?:try|visit|read|watch|listen to|"
    r"check out|consider|go to|cook|make)|how about|why not try)\b",
    re.IGNORECASE,
)
"""The assistant's named advice ("I recommend One Hundred Years of Solitude", "you could visit
Huangshan"): what a user later asks about ("what did you recommend?"). A fact when it names
something (a capitalised word past the first, or a value)."""
NEXT_STEP = re.compile(
    r"^(?:let me|let us|i'll|i will|i'm going to|i am going to)\s+"
    r"(?:look|check|see|search|find|try|think|get back)\b",
    re.IGNORECASE,
)
"""The speaker's next step ("Let me look for flights around April 3"): what they will do, not a
fact; the result that follows is."""
NAMES = re.compile(r"(?<=\s)[A-Z][\w'-]+")
DECISION = re.compile(
    r"\b(?:let's|lets|let us)\s+(?:go with|go for|use|book|take|pick|stick with|do)\b|"
    r"\b(?:we|i)(?:'ll| will| are going to| shall)\s+"
    r"(?:use|go with|go for|book|take(?! a look| a break| care)|stick with)\b|"
    r"\b(?:decided|decide to|our decision|agreed|agree to go|book it|go ahead|confirmed|"
    r"chose|chosen|settled on|opted for|going with|we picked|i picked)\b",
    re.IGNORECASE,
)
_OTHERS = (
    r"(?:(?i:he|she|they|it|my \w+|his \w+|her \w+|their \w+)|"
    r"(?!(?:We|You|Let|Then|So|And|But)\b)[A-Z][a-z]+)(?:\s+\w+)?"
)
NOT_OURS = re.compile(
    rf"\b(?i:what|which|why|how|when|where|who)\b.*\b(?:decided|chose|picked|agreed)\b|"
    rf"(?:^|[,;]\s*|\b(?i:and|but|then|so)\s+){_OTHERS}\s+(?:decided|chose|picked|agreed|"
    rf"confirmed|opted)\b|"
    r"\b(?i:haven't|have not|hasn't|has not|not yet|didn't|did not|can't|cannot)\s+(?:\w+\s+)?"
    r"(?i:decided?|chosen|agreed)\b|\b(?i:take|took)\s+(?i:your|my|his|her|the)\s+(?i:advice)\b",
)
"""A decision cue that is not the speakers' decision: someone else's ("my boss decided to sell
online", "they chose"), asked about ("what was your major that you decided on"), not taken ("we
haven't decided yet") or advice taken to heart ("I will take your advice")."""
_HEDGED = re.compile(
    r"\b(?:might|maybe|perhaps|probably|not sure|i think|i guess|lol|haha\w*|must say|"
    r"have to say|have to admit|a must|will (?:just )?have to|'ll (?:just )?have to|"
    r"(?:talk|chat) (?:to you |with you )?(?:again )?(?:later|soon|next time|tomorrow))\b|"
    rf"^(?:{_OTHERS})\s+(?:like|likes|tell|tells|said|says|thought|think|want|wants)\b",
    re.IGNORECASE,
)
"""An obligation that is a remark, not a rule for the work: hedged ("I might have to"), a plan
("I'll have to look around"), an idiom ("I must say", "a must") or about someone else ("They like
to keep the classes to no more than 12"). It is sorted like any other sentence (a fact)."""


_FAREWELL = re.compile(
    r"\b(?:have|need) to (?:go|leave|run|get going|rest|sleep|head out|log off)"
    r"(?:(?:\s+\w+){0,3}\s+now\b|\W*$)",
    re.IGNORECASE,
)
"""Leaving the chat: "I have to go now", "I have to go prepare dinner now", "I have to leave."."""


def remark(sentence: str) -> bool:
    """Whether an obligation the extractive pass marked is a remark, not a rule (`_HEDGED`)."""
    text = plain(sentence)
    return _HEDGED.search(text) is not None or _FAREWELL.search(text) is not None


REJECTED = re.compile(
    r"\b(?:instead of|rather than|ruled out|rule out|rules out|won't work|will not work|"
    r"wouldn't work|doesn't work|does not work|didn't work|did not work|"
    r"too (?:expensive|pricey|costly|slow|risky|far|complicated)|rejected|reject|"
    r"decided against|not an option|no longer an option|gave up on|give up on|"
    r"not going with|scrapped|abandoned)\b",
    re.IGNORECASE,
)
