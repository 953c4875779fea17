"""Selection: the candidates that restate nothing said before, bounded by count and by share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from progsum.judge.extract import message_text
from progsum.judge.salience import content_words
from progsum.judge.seam import sentences
from progsum.judge.values import exact_values
from progsum.memo import memoized
from progsum.summarizers.extractive.candidates import Candidate
from progsum.summary.merge import normalise
from progsum.summary.request import Segment

__all__ = ["Known", "Said", "fit", "prose_size", "select", "size"]


@dataclass(frozen=True, slots=True)
class Said:
    """What an item is compared on: its field, normalised form, content words and exact values."""

    field: str
    key: tuple[str, tuple[str, ...]]
    words: frozenset[str]
    values: frozenset[str]

    @classmethod
    def of(cls, field: str, text: str) -> Said:
        """What ``text``, an item of ``field``, says (read once per field and text)."""
        return _said(field, text)

    def restates(self, other: Said) -> bool:
        """Whether ``self`` adds nothing to ``other``.

        It adds nothing when it has the same wording (in any field), or, in the same field, only
        content words and exact values ``other`` already has.
        """
        if self.key == other.key:
            return True
        return (
            self.field == other.field
            and bool(self.words)
            and self.words <= other.words
            and self.values <= other.values
        )


@memoized("progsum.summarizers.extractive.selection.said", 384 * 1024)  # read each item once
def _said(field: str, text: str) -> Said:
    return Said(field, normalise(text), content_words(text), frozenset(exact_values(text)))


class Known:
    """What was said, indexed: a restatement is found by lookups, not by a scan of everything.

    Wordings are a set; each field's items are listed under their content words, so an item
    whose words another one of its field holds is found among the items under its rarest word.
    """

    __slots__ = ("_keys", "_under")

    def __init__(self, said: Iterable[Said] = ()) -> None:
        self._keys: set[tuple[str, tuple[str, ...]]] = set()
        self._under: dict[str, dict[str, list[Said]]] = {}
        for one in said:
            self.add(one)

    def add(self, said: Said) -> None:
        """Remember ``said``."""
        self._keys.add(said.key)
        under = self._under.get(said.field)
        if under is None:
            under = self._under[said.field] = {}
        for word in said.words:
            listed = under.get(word)
            if listed is None:
                under[word] = [said]
            else:
                listed.append(said)

    def restated(self, said: Said) -> bool:
        """Whether ``said`` adds nothing to something remembered (`Said.restates`)."""
        if said.key in self._keys:
            return True
        under = self._under.get(said.field)
        if not said.words or under is None:
            return False
        rarest = min((under.get(word, ()) for word in said.words), key=len)
        return any(said.restates(old) for old in rarest)


def select(candidates: Sequence[Candidate], known: Known, bound: int | None) -> list[Candidate]:
    """The (at most ``bound``) most salient candidates restating nothing said before, in order.

    Nothing said before: nothing ``known`` holds, and no candidate chosen before it here. A
    note is read under its speaker's name (as the prior notes are), so the same words said by
    another person are news: "Bob: is nurse" after "Ann: is nurse".
    """
    chosen = Known()
    fresh: list[Candidate] = []
    for candidate in sorted(candidates, key=_rank):
        if len(fresh) == bound:
            break
        by = f"{candidate.speaker}: " if candidate.speaker else ""
        new = [
            Said.of(candidate.field, by + text) for text in {candidate.text, candidate.raw} if text
        ]
        if not any(known.restated(one) or chosen.restated(one) for one in new):
            for one in new:
                chosen.add(one)
            fresh.append(candidate)
    return sorted(fresh, key=lambda c: c.order)


def _rank(candidate: Candidate) -> tuple[int, int, int]:
    """Most salient first; then the shorter (more fit in the budget), then the earlier."""
    return (-candidate.weight, len(candidate.text), candidate.order)


def prose_size(segment: Segment) -> int:
    """Characters of the segment's prose sentences, a separator each (what items are copied from).

    With ``max_share=1`` every selection fits: an item is a sentence, or an answer joined to its
    question by one space.
    """
    return sum(
        len(sentence) + 1
        for info, message in zip(segment.infos, segment.messages, strict=True)
        if info.role in ("user", "assistant")
        for sentence in sentences(message_text(message))
    )


def fit(
    picked: Mapping[str, Sequence[Candidate]], binding: frozenset[str], room: float
) -> dict[str, list[Candidate]]:
    """Keep binding fields and kept candidates whole; fill what ``room`` is left by weight.

    Kept candidates are the user's questions nobody answered in the segment: an open thread
    stays open until answered, whatever the share.

    A candidate that does not fit is passed over for lighter, shorter ones that do. A note is
    charged its body and separator (`size`): it shares its label with the other notes of its
    speaker and day. (Filling by salience per character instead kept about as many chat facts and
    lost the coding example's long root-cause finding: bench/retention.md.)
    """
    used = sum(size(c) for name in binding for c in picked.get(name, ()))
    used += sum(
        size(c) for name, chosen in picked.items() if name not in binding for c in chosen if c.kept
    )
    rest = [
        c for name, chosen in picked.items() if name not in binding for c in chosen if not c.kept
    ]
    fitted: set[tuple[str, int]] = set()
    for candidate in sorted(rest, key=_rank):
        if used + size(candidate) <= room:
            used += size(candidate)
            fitted.add((candidate.field, candidate.order))
    return {
        name: [c for c in chosen if name in binding or c.kept or (name, c.order) in fitted]
        for name, chosen in picked.items()
    }


def size(candidate: Candidate) -> int:
    """Characters a candidate costs: a note its body and separator, other items their text."""
    return len(candidate.text) + 2 if candidate.label else len(candidate.raw or candidate.text)
