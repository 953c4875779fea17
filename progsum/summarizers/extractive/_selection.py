"""Selection: the candidates that restate nothing said before, bounded by count and by share."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from progsum._memo import memoized
from progsum.judge._extract import message_text
from progsum.judge._salience import content_words
from progsum.judge._seam import sentences
from progsum.judge._values import exact_values
from progsum.summarizers.extractive._candidates import Candidate
from progsum.summary._merge import normalise
from progsum.summary._request import Segment
from progsum.summary._schema import BaseSummary, SchemaSpec

__all__ = ["Known", "Prior", "Said", "fit", "prose_size", "select", "size"]


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


@memoized("progsum.summarizers.extractive._selection.said", 384 * 1024)  # read each item once
def _said(field: str, text: str) -> Said:
    return Said(field, normalise(text), content_words(text), frozenset(exact_values(text)))


class Known:
    """What was said, indexed: a restatement is found by lookups, not by a scan of everything.

    Wordings are counted; each field's items are listed under their content words, so an item
    whose words another one of its field holds is found among the items under its rarest word.
    What is added can be removed again (a prior summary's item retired since it was read), and
    an index made ``over`` another answers for both while adding only to itself.
    """

    __slots__ = ("_keys", "_over", "_under")

    def __init__(self, said: Iterable[Said] = (), *, over: Known | None = None) -> None:
        self._keys: dict[tuple[str, tuple[str, ...]], int] = {}
        self._under: dict[str, dict[str, dict[Said, int]]] = {}
        self._over = over
        for one in said:
            self.add(one)

    def add(self, said: Said) -> None:
        """Remember ``said`` (once more, if it is already remembered)."""
        self._keys[said.key] = self._keys.get(said.key, 0) + 1
        under = self._under.get(said.field)
        if under is None:
            under = self._under[said.field] = {}
        for word in said.words:
            listed = under.get(word)
            if listed is None:
                under[word] = {said: 1}
            else:
                listed[said] = listed.get(said, 0) + 1

    def remove(self, said: Said) -> None:
        """Forget ``said`` once (what `add` remembered).

        Raises:
            KeyError: ``said`` is not remembered here.
        """
        count = self._keys[said.key]
        under = self._under.get(said.field, {})
        if said.words and said not in under.get(next(iter(said.words)), {}):
            raise KeyError(said)
        if count == 1:
            del self._keys[said.key]
        else:
            self._keys[said.key] = count - 1
        for word in said.words:
            listed = under[word]
            if listed[said] == 1:
                del listed[said]
                if not listed:
                    del under[word]
            else:
                listed[said] -= 1

    def restated(self, said: Said) -> bool:
        """Whether ``said`` adds nothing to something remembered (`Said.restates`)."""
        if said.key in self._keys:
            return True
        under = self._under.get(said.field)
        if said.words and under is not None:
            rarest = min((under.get(word, ()) for word in said.words), key=len)
            if any(said.restates(old) for old in rarest):
                return True
        return self._over is not None and self._over.restated(said)


class Prior:
    """The prior summary's live items as last read, indexed (`Known`), their content words counted.

    A fold's prior summary is the last fold's plus a few items, less a few retired: `read`
    brings the index to a summary by the difference, so each item is read once in the session
    rather than once per fold. The owner (a summarizer) holds one and takes `lock` around a
    `read` and the lookups after it. Copies and pickles start empty.
    """

    __slots__ = ("_said", "_vocabulary", "_words", "known", "lock")

    def __init__(self) -> None:
        self.known = Known()
        """The items read last, indexed."""
        self.lock = threading.Lock()
        """Held from a `read` until the lookups that follow it are done."""
        self._said: dict[tuple[str, str], Said] = {}
        self._words: dict[str, int] = {}
        self._vocabulary: frozenset[str] | None = frozenset()

    def __reduce__(self) -> tuple[type[Prior], tuple[()]]:
        return Prior, ()

    def read(self, summary: BaseSummary, spec: SchemaSpec) -> None:
        """Index the live items of ``summary`` (schema ``spec``) instead of the last ones read."""
        now = {(f.name, item.text) for f in spec.lists for item in getattr(summary, f.name)}
        said, words = self._said, self._words
        for gone in said.keys() - now:
            old = said.pop(gone)
            self.known.remove(old)
            for word in old.words:
                if words[word] == 1:
                    del words[word]
                    self._vocabulary = None
                else:
                    words[word] -= 1
        for field, text in now - said.keys():
            new = said[field, text] = Said.of(field, text)
            self.known.add(new)
            for word in new.words:
                if word in words:
                    words[word] += 1
                else:
                    words[word] = 1
                    self._vocabulary = None

    @property
    def words(self) -> frozenset[str]:
        """The content words of the items read last."""
        if self._vocabulary is None:
            self._vocabulary = frozenset(self._words)
        return self._vocabulary


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
