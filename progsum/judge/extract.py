"""The extractive pass: what a segment states that must not be lost, found by rule, without a model.

Run on every segment before the summarizer is called. It finds the user's prohibitions ("never",
"do not", "must not", ...), obligations and limits ("must", "only", "at most", budgets, deadlines),
the questions asked, and the exact values the user stated. A negation that is a remark or a fact
rather than a rule ("I don't know", "can't wait", "never been", "I don't have the id") is not a
prohibition; typographic apostrophes count like ASCII ones. Summarizers receive it as must-keep
candidates (``request.extraction``); the engine's guards use it after the call, so a negative
constraint can never be lost to paraphrase.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from progsum.judge.provenance import Author, classify, user_prose
from progsum.judge.segment import sentences
from progsum.judge.values import stated_values
from progsum.messages.formats import MessageInfo, Role, field
from progsum.messages.responses import as_chat

__all__ = ["Extraction", "Statement", "addressed", "extract", "message_text", "sentences"]


def _rule(pattern: str) -> re.Pattern[str]:
    """Compile a case-insensitive pattern whose ASCII apostrophes also match typographic ones."""
    return re.compile(pattern.replace("'", "['\u2019]"), re.IGNORECASE)


_NOT_A_RULE = (
    r"(?!\s+(?:really\s+|even\s+|actually\s+|ever\s+)?(?:know|knew|think|thought|remember|"
    r"recall|mind|worry|care|blame|matter|wait|believe|imagine|complain|lie|seem|sound|look|mean|"
    r"get me wrong|understand|expect|realize|realise|been|heard|seen|see|had|have|tried|feel|"
    r"guess|bet|need to|got to|hurt|help|make sense|tell\s+(?:the|a|any|much)\s+difference|"
    r"tell\s+(?:if|whether))\b)"
)
"""Words after a negation that make it a remark or a fact, not a rule: "I don't know", "can't
wait", "never been", "I don't have the id" (a fact), "you don't have to" (a relaxation), "can't
tell the difference"."""
_PROHIBITION = _rule(
    r"\b(?:never|do not|don't|dont|must not|mustn't|may not|cannot|can't|should not|shouldn't|"
    r"shall not|not allowed|no longer allowed|forbidden|prohibited|avoid|under no circumstances|"
    r"stay away from|do not want|don't want|refuse)\b" + _NOT_A_RULE + "|"
    r"\b(?:does not|doesn't|will not|won't)\b" + _NOT_A_RULE + r"(?!\s+work)|"
    r"\bnot to\b(?!\s+mention\b)|"
    r"^(?:(?:and|so|then|also|ok|okay|oh),?\s+)?(?:skip|no)\s+"
    r"(?!(?:problem|problems|worries|worry|thanks|idea|way|need|rush|one|doubt|matter|kidding|"
    r"offense|offence|clue|big deal|wonder|more|longer|luck|chance|pressure|kids|children|pets|"
    r"actually|really|sorry|"
    r"i|it|that|this)\b)[a-z]"
)
"""A failure ("it doesn't work", which the summarizer files as rejected) and "not to mention" are
not rules either; "don't work on main" still is. A sentence that opens with "skip" or "no" and a
thing ("Skip Airbnbs entirely.", "Then no JR Pass.") is a rule; "No problem", "No way" are not."""
_OBLIGATION = _rule(
    r"\b(?:(?<!n't )(?<!not )(?<!as you )(?<!since you )(?<!because you )(?<!when you )"
    r"(?:must|have to|has to|need to|needs to)"
    r"(?<!it must)(?<!that must)(?<!this must)(?<!there must)(?<!you must)(?<!he must)"
    r"(?<!she must)(?<!they must)(?!\s+(?:be|have been)\b)|"
    r"required|requires|requirement|make sure|ensure|"
    r"always(?!\s+(?:wanted|loved|liked|been|thought|wondered|enjoyed|had|felt|feel|worry|"
    r"seems?|seemed|"
    r"looking|found|love|like|enjoy|fun|nice|good)\b)|"
    r"(?<!\bthe )(?<!\bif )(?<!\bnot )(?<!\ban )only(?!\s+(?:thing|time|just|child|kid)\b)|"
    r"at most|at least|no more than|not more than|no later than|up to(?=\s*[$\u20ac\u00a3\d])|"
    r"maximum|minimum|budget|deadline|due(?!\s+to)|limit|prefer|insist|"
    r"(?:before|after|until|by|no later than)\s+(?:\d+|noon|midnight|tomorrow|tonight|the end|eod|"
    r"(?:next|this)\s+\w+|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"january|february|march|april|may|june|july|august|september|october|november|december))\b"
)
_VERBS = (
    r"(?:book|use|keep|stay|skip|stop|avoid|watch|remember|make|ensure|get|find|choose|pick|"
    r"buy|send|tell|call|check|leave|bring|take|give|go|put|add|remove|cancel|change|move|plan|"
    r"reserve|look|try|note|mind|limit|include|exclude|run|touch|deploy|push|merge|delete|"
    r"drop|write|edit|commit|install|fly|pay|spend|charge|order|ship|schedule|share|post|"
    r"reply|email|contact|open|close|be|do|let|wait|ask|follow|respect|stick|hold)"
)
_ADDRESSED = _rule(
    r"(?:^|[,;:]\s*|\b(?:so|and|but|then|also)\s+)(?:(?:please|just|also|and|so|then|ok|okay|"
    r"oh|well)\W+)*(?:"
    r"(?:never|always|only)\s+" + _VERBS + r"\b|"
    r"(?:don't|dont|do not|no|skip|avoid|please|make sure|let's|let us)\b|"
    + _VERBS
    + r"\b(?!\s+(?:is|are|was|were|'s)\b)|"
    r"(?:i|we)(?:'d| would)?\s+(?:really\s+|also\s+|just\s+|do\s+|always\s+)?(?:need|want|"
    r"must|have to|"
    r"prefer|insist|require|like to|refuse|don't want|do not want|won't|will not|can't accept|"
    r"only accept|cannot accept|would like|'d like)\b|"
    r"(?:i|we)(?:'m| am|'re| are) not (?:going to|willing to|able to pay)\b|"
    r"(?:i|we)\s+(?:can't|cannot|don't|do not|never|won't)\s+(?:eat|drink|fly|travel)\b|"
    r"you (?:must|need to|have to|should|shouldn't|should not|may not|must not|cannot|can't|"
    r"are not allowed|aren't allowed)\b"
    r")"
)
_GUESS = (
    r"(?!\s+(?:feel|feels|seem|look|sound|taste|mean|have been|be\s+(?:really\s+|so\s+|very\s+|"
    r"pretty\s+|quite\s+)?(?:nice|hard|fun|great|awesome|tough|difficult|amazing|cool|lovely|"
    r"exciting|poor|rich|tiring|scary|crazy|busy|boring|interesting|wonderful|beautiful|a lot|"
    r"lonely|sad|frustrating|stressful|expensive|tired|exhausting|relaxing|peaceful)\b))"
)
"""What follows an epistemic "must", a guess rather than a requirement: "It must feel like ...",
"That must have been hard", "I must be really poor"; "It must be in PDF" is still a rule."""
_MODAL = _rule(
    r"\b(?<!will )(?<!'ll )(?<!would )(?<!going to )(?<!\bto )(?<!may )(?<!might )(?<!could )"
    rf"(?:must(?:\s+not)?{_GUESS}|mustn't|has to|have to|can only|may only|may not|"
    r"not allowed|no longer allowed)\b"
)
"""A requirement on the task with any subject ("Work can only happen on weekdays", "The report has
to be ready by Friday"); "I will have to check" and "I may have to drive" are the speaker's plan
or guess, not a rule, and so is an epistemic "must" (`_GUESS`)."""
_DEADLINE = _rule(
    r"\b(?:by|before|until|no later than)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday|tomorrow|tonight|noon|midnight|eod|the end)\b"
)
_LIMIT = _rule(
    r"\b(?:budget|at most|at least|no more than|not more than|maximum|minimum|max|min|limit|"
    r"deadline|before|after|by|until|no later than|under|over)\b"
)


_PERSONA = _rule(
    r"\bbut\s+(?:i|we)\s+(?:do\s+|really\s+|still\s+|also\s+|definitely\s+)*"
    r"(?:like|love|enjoy|prefer|want to keep|try)\b|"
    r"\b(?:don't|do not)\s+want\s+to\s+have\s+to\b|"
    r"\b(?:i|we)(?:'d| would)\s+(?:\w+\s+)?be\s+open\s+to\b|"
    r"^no\s+\w+ing\s+(?:is|was)\b|"
    r"\b(?:i|we)\s+(?:really\s+)?need\s+to\s+(?:look for|find|get|figure out|start|stop|lose|"
    r"learn|take care of)\s+(?:someone|somebody|something|some|my|a|an|more|out|myself|back)\b|"
    r"\b(?:i|we)\s+(?:\w+\s+)?(?:have|need|got)\s+to\s+go\s*(?:[.!,]|$|"
    r"(?:rest|sleep|to bed|to work|to school|to class|home|now|soon|out|give|get|pick|see|"
    r"shopping|eat|run|walk)\b)|"
    r"\b(?:can|could)\s+only\s+(?:hope|imagine|dream|wish|guess)\b"
)
"""The speaker describing their own life: a taste beside a habit, a wish, an openness, a personal
need, an errand ("so I have to go rest", "I have to go to work later"; not "we have to go with
the cheaper vendor"), a hope ("I can only hope"). A persona fact, not a rule for the assistant's
work."""


def addressed(sentence: str) -> bool:
    """Whether a sentence is shaped like a rule the user sets, not a remark about the world.

    It is when a clause is an imperative ("Never book red-eye flights", "so watch out for dashi"),
    a want or need of the speaker's ("We'd like to change hotels at most twice", "I can't eat
    gluten"), an order to the addressee ("You must not deploy"), a requirement on the task ("Work
    can only happen on weekdays", "ready by Friday"), or a limit with an exact value ("Total budget
    is $6,500").
    Third-person remarks with cue words ("Oil always looks best", "Tasha always made sure") are
    not rules, and neither is the speaker describing their own life (`_PERSONA`): "I don't eat
    meat but I do like grilled veggies", "I don't want to have to depend on the weather", "I'd be
    open to it", "No running is not helping".
    """
    if _PERSONA.search(sentence):
        return False
    if _ADDRESSED.search(sentence) or _MODAL.search(sentence) or _DEADLINE.search(sentence):
        return True
    return bool(_LIMIT.search(sentence)) and bool(stated_values(sentence))


@dataclass(frozen=True, slots=True)
class Statement:
    """One sentence of the segment, verbatim (inner whitespace collapsed), with where it was."""

    at: int
    """Log index of the message."""
    role: Role
    text: str


@dataclass(frozen=True, slots=True)
class Extraction:
    """What the extractive pass found in a segment."""

    prohibitions: tuple[Statement, ...] = ()
    """User sentences that forbid something: never, do not, must not, avoid, ..."""
    obligations: tuple[Statement, ...] = ()
    """User sentences that require or bound something: must, only, at most, budgets, deadlines."""
    questions: tuple[Statement, ...] = ()
    """Questions asked in the segment, by the user or the assistant."""
    values: tuple[tuple[int, str], ...] = ()
    """Exact values the user stated, as ``(log index, value)``, first occurrence only."""

    @property
    def user_values(self) -> tuple[str, ...]:
        """The values alone, in order."""
        return tuple(value for _, value in self.values)


def message_text(message: object) -> str:
    """The prose of a message: string content and text blocks (not tool data or thinking)."""
    content = field(as_chat(message), "content")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [
            str(field(block, "text") or "") for block in content if field(block, "type") == "text"
        ]
        return "\n".join(text for text in texts if text)
    return ""


_RULE_WORDS = 2
"""Fewest words a prohibition or obligation has ("Avoid Airbnbs.")."""


def extract(
    messages: Sequence[object],
    infos: Sequence[MessageInfo],
    *,
    start: int,
    authors: Sequence[Author] | None = None,
) -> Extraction:
    """Run the extractive pass over ``messages`` (log indices from ``start``).

    Only user-authored messages (``authors``, else `progsum.judge.provenance.classify`) yield
    prohibitions, obligations and values, and only their prose (`user_prose`): machine text in a
    user-role message never becomes a rule.
    """
    prohibitions: list[Statement] = []
    obligations: list[Statement] = []
    questions: list[Statement] = []
    values: list[tuple[int, str]] = []
    seen_values: set[str] = set()
    seen_sentences: set[str] = set()
    for offset, (message, info) in enumerate(zip(messages, infos, strict=True)):
        author = authors[offset] if authors is not None else classify(message, info)
        if author == "tool" or info.role not in ("user", "assistant"):
            continue
        at = start + offset
        text = user_prose(message) if author == "user" else message_text(message)
        for sentence in sentences(text):
            key = sentence.casefold()
            if sentence.endswith("?"):
                if key not in seen_sentences:
                    questions.append(Statement(at, info.role, sentence))
                    seen_sentences.add(key)
                continue
            if author != "user" or key in seen_sentences or len(sentence.split()) < _RULE_WORDS:
                continue  # a bare "dont" or "never!" is a reply, not a rule
            if not addressed(sentence):
                continue  # "Oil always looks best", "You only live once!": remarks, not rules
            if _PROHIBITION.search(sentence):
                prohibitions.append(Statement(at, info.role, sentence))
                seen_sentences.add(key)
            elif _OBLIGATION.search(sentence):
                obligations.append(Statement(at, info.role, sentence))
                seen_sentences.add(key)
        if author == "user":
            for value in stated_values(text):
                if value not in seen_values:
                    seen_values.add(value)
                    values.append((at, value))
    return Extraction(tuple(prohibitions), tuple(obligations), tuple(questions), tuple(values))
