"""Consolidation: a summary that outgrew its header budget is brought back under it, safely.

Compaction after compaction, a summary only grows; past the policy's ``header_budget`` (about 15%
of the window) the engine consolidates it, once, right after the compaction that pushed it over.
A summarizer that implements `progsum.summary._request.Consolidator` proposes retirements of
near-duplicate and verbose items with condensed replacements; `screen` keeps only what is safe:

* binding items are never retired by consolidation;
* an item is retired only if every exact value it carries is still in the summary afterwards;
* a replacement may not introduce a value the summary did not hold.

Then, if the header is still over budget, the least telling non-binding parts go
(`least_telling`, `retire_parts`): the notes copied from the conversation one note at a time, by
what each adds per character, then the summarizer's items by salience, the oldest among equals;
each changed item is kept whole as a tombstone with the reason, and a joined note that keeps some
of its notes lives on under a new id. It stops when only binding items are left. The functions
are pure; the engine does the calling and records a ``consolidated`` event
(`progsum.engine._consolidate`).
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

from progsum._memo import memoized
from progsum.contract._artifacts import PROSE_TIER, weight
from progsum.judge._notes import SEPARATOR, joined, split_note
from progsum.judge._salience import salience
from progsum.judge._values import exact_values
from progsum.summary._merge import Refusal, fresh_number, retired_with
from progsum.summary._schema import BaseSummary, Item, SummaryT, Tombstone, spec_of
from progsum.summary._update import NewItem, SummaryUpdate

__all__ = [
    "Cut",
    "drop_least_telling",
    "in_order",
    "least_telling",
    "note_density",
    "retire_parts",
    "screen",
]


def screen(
    summary: BaseSummary, update: SummaryUpdate
) -> tuple[SummaryUpdate, tuple[Refusal, ...]]:
    """The part of a consolidation ``update`` that is safe to merge, and what was refused.

    Args:
        summary: The summary being consolidated.
        update: The consolidator's proposal.
    """
    spec = spec_of(type(summary))
    binding = {f.name for f in spec.binding}
    live = {item.id: (f.name, item) for f in spec.lists for item in getattr(summary, f.name)}
    known = {value for _, item in live.values() for value in exact_values(item.text)}
    refused: list[Refusal] = []

    added: dict[str, tuple[str | NewItem, ...]] = {}
    for name, entries in update.add.items():
        kept = []
        for entry in entries:
            text = entry.text if isinstance(entry, NewItem) else entry
            new_values = [v for v in exact_values(text) if v not in known]
            if new_values:
                refused.append(
                    Refusal(id=text[:60], why=f"adds {new_values[0]!r}, a value the summary lacks")
                )
                continue
            kept.append(entry)
        if kept:
            added[name] = tuple(kept)

    retiring = []
    for retirement in update.retire:
        found = live.get(retirement.id)
        if found is None:
            refused.append(Refusal(id=retirement.id, why="no such item"))
        elif found[0] in binding:
            refused.append(Refusal(id=retirement.id, why="binding item; consolidation keeps it"))
        elif not retirement.reason.strip():
            refused.append(Refusal(id=retirement.id, why="no reason given"))
        else:
            retiring.append(retirement)

    while True:  # drop retirements whose values would vanish, until the rest are consistent
        gone = {r.id for r in retiring}
        texts = [item.text for item_id, (_, item) in live.items() if item_id not in gone]
        texts += [e.text if isinstance(e, NewItem) else e for es in added.values() for e in es]
        remaining = {value for text in texts for value in exact_values(text)}
        lost = [r for r in retiring if not set(exact_values(live[r.id][1].text)) <= remaining]
        if not lost:
            break
        for r in lost:
            missing = sorted(set(exact_values(live[r.id][1].text)) - remaining)
            refused.append(Refusal(id=r.id, why=f"its value {missing[0]!r} would be lost"))
        retiring = [r for r in retiring if r not in lost]

    screened = SummaryUpdate(
        add=added,
        retire=tuple(retiring),
        usage=update.usage,
    )
    return screened, tuple(refused)


Cut = Mapping[str, frozenset[int] | None]
"""Parts of a summary to retire, by item id: the indexes of a joined note's notes that go
(`progsum.judge._notes.split_note`), or None for the whole item."""

_Key = tuple[int, int, float, int, int, int, int]


def in_order(
    summary: BaseSummary,
    *,
    keep: Collection[str] = (),
    whole: Collection[str] = (),
    holding: Mapping[str, Collection[int]] | None = None,
) -> Iterator[tuple[str, int | None]]:
    """The loose parts of ``summary`` in the order they are retired.

    Each is ``(id, None)``, a whole item, or ``(id, k)``, the k-th note of a joined note.

    Artifact-trail lines go by `progsum.contract._artifacts.weight` first: the working set (files,
    commands, errors, ids) after every other item, searches and fetched sources before them, and
    changed files last. Within that order:

    * **notes copied from the conversation** (``origin="extracted"``, not the trail's: the
      offline summarizer's, the ledger's) go first, the part that adds least per character
      first: each note of a joined note is a part of its own, worth its salience over its
      length (`note_density`'s terms), so the least telling note goes and the rest of its
      speaker's and day's notes stay; a note alone (or the last one left) goes with its label;
    * then the summarizer's own items, the one that adds least (`progsum.judge._salience.salience`
      of
      its text; an item the user wrote counts as the user's) first, so old facts are not lost for
      being old.

    Among equals the oldest goes: the one folded from the earliest messages (then the lower id,
    then schema order). Items whose ids are in ``keep`` never go. Items in ``holding`` (the last
    carriers of values the user stated, `progsum.contract._ledger.carrier_notes`) never go whole:
    the notes it names for them (those that carry the values) stay, and their other notes may
    go. Items in ``whole`` (a sentence quoted as it was said) go only whole.
    A heap of the parts: retiring one changes no other's rank, except that the last note left
    of a joined note is then ranked as a note alone.
    """
    heap: list[tuple[_Key, int, str, int | None]] = []
    joined_notes: dict[str, _Joined] = {}
    spec = spec_of(type(summary))
    seq = 0  # iteration order: among equal keys the first item seen goes first
    for order, f in enumerate(spec.lists):
        if f.binding:
            continue
        for item in getattr(summary, f.name):
            if item.id in keep:
                continue
            stays = holding.get(item.id) if holding else None
            seq += 1
            number = item.id[len(f.id_prefix) :]
            trailed = item.origin == "extracted" and item.author == "tool"
            tier = weight(item.text) if trailed else PROSE_TIER  # docs/artifacts.md
            where = (tier, item.source[0], int(number) if number.isdigit() else 0, order)
            if item.origin != "extracted" or trailed:
                if stays is None:
                    rank = float(salience(item.text, user=item.author == "user"))
                    heap.append((_key(where, 1, rank, -1), seq, item.id, None))
                continue
            joined_note = _note_parts(heap, item, where, seq, stays, whole=item.id in whole)
            if joined_note is not None:
                joined_notes[item.id] = joined_note
    heapq.heapify(heap)
    while heap:
        _, seq, item_id, part = heapq.heappop(heap)
        if part is None:
            yield item_id, None
            continue
        note = joined_notes.get(item_id)
        if note is None or part not in note.left:
            continue  # its item is now ranked as a note alone
        note.left.remove(part)
        yield item_id, part
        if len(note.left) == 1 and not note.kept:
            del joined_notes[item_id]
            rest = joined(note.label, note.notes[note.left[0]])
            density = note_density(rest, user=note.user)
            heapq.heappush(heap, (_key(note.where, 0, density, -1), seq, item_id, None))


def _note_parts(
    heap: list[tuple[_Key, int, str, int | None]],
    item: Item,
    where: tuple[int, int, int, int],
    seq: int,
    stays: Collection[int] | None,
    *,
    whole: bool,
) -> _Joined | None:
    """Push a note's parts on ``heap``: each note of a joined note, or the note whole.

    ``stays``: the notes of a last carrier of stated values that stay (None: it is none).
    Returns the joined note being cut, if the item is one.
    """
    user = item.author == "user"
    label, notes = _split(item.text)
    if len(notes) > 1 and not whole:
        spoken = bool(label) and not label.startswith("(")
        for k, body in enumerate(notes):
            if stays is None or k not in stays:
                density = _part_density(body, user=user, spoken=spoken)
                heap.append((_key(where, 0, density, k), seq, item.id, k))
        return _Joined(where, label, notes, user, list(range(len(notes))), stays is not None)
    if stays is None:
        density = note_density(item.text, user=user)
        heap.append((_key(where, 0, density, -1), seq, item.id, None))
    return None


@dataclass(slots=True)
class _Joined:
    """A joined note being cut in `in_order`: where it ranks, its notes and those left."""

    where: tuple[int, int, int, int]
    label: str
    notes: tuple[str, ...]
    user: bool
    left: list[int]
    kept: bool
    """A last carrier of stated values: it never goes whole, its carrying notes never go."""


def _key(where: tuple[int, int, int, int], group: int, rank: float, part: int) -> _Key:
    """A part's place in `in_order`: tier, group, rank, then the item's age, id and field."""
    tier, at, numeric, order = where
    return (tier, group, rank, at, numeric, order, part)


def least_telling(
    summary: BaseSummary, *, keep: Collection[str] = (), whole: Collection[str] = ()
) -> tuple[str, int | None] | None:
    """The part of ``summary`` to retire first (`in_order`); None when none may go."""
    return next(in_order(summary, keep=keep, whole=whole), None)


def retire_parts(
    summary: SummaryT, cut: Cut, *, reason: str, compaction: int
) -> tuple[SummaryT, dict[str, str]]:
    """``summary`` without the parts in ``cut``, each cut item kept whole as a tombstone.

    A joined note that keeps some of its notes is replaced, at its place, by a new item with a
    fresh id holding them (its provenance and author as before): an item's text never changes
    under its id. Returns the summary and each shortened item's new id by its old one.
    """
    spec = spec_of(type(summary))
    changes: dict[str, object] = {}
    tombstones = list(summary.retired)
    renamed: dict[str, str] = {}
    for f in spec.lists:
        items: tuple[Item, ...] = getattr(summary, f.name)
        if not any(item.id in cut for item in items):
            continue
        number = fresh_number(summary, f.name, f.id_prefix)
        kept: list[Item] = []
        for item in items:
            if item.id not in cut:
                kept.append(item)
                continue
            gone = cut[item.id]
            why = reason
            if gone is not None:
                new_id = f"{f.id_prefix}{number}"
                number += 1
                renamed[item.id] = new_id
                kept.append(_shortened(item, gone, new_id))
                why = f"{reason}; its other notes stay as {new_id}"
            tombstones.append(_tombstone(f.name, item, why, compaction))
        changes[f.name] = tuple(kept)
    changes["retired"] = retired_with(summary.retired, tombstones[len(summary.retired) :])
    return summary.model_copy(update=changes), renamed


@memoized("progsum.contract._consolidation.split", 256 * 1024)
def _split(text: str) -> tuple[str, tuple[str, ...]]:
    """`split_note`, remembered per text: the drop loop reads every note again after each cut."""
    label, notes = split_note(text)
    return label, tuple(notes)


@memoized("progsum.contract._consolidation.shortened", 256 * 1024)
def _shortened(item: Item, gone: frozenset[int], new_id: str) -> Item:
    """``item`` without its notes ``gone``, under ``new_id`` (asked again at each cut)."""
    label, notes = _split(item.text)
    rest = SEPARATOR.join(n for k, n in enumerate(notes) if k not in gone)
    return item.model_copy(update={"id": new_id, "text": joined(label, rest)})


@memoized("progsum.contract._consolidation.tombstone", 128 * 1024)
def _tombstone(field: str, item: Item, reason: str, compaction: int) -> Tombstone:
    """The tombstone of ``item`` (remembered like `_shortened`)."""
    return Tombstone(field=field, item=item, reason=reason, compaction=compaction)


def drop_least_telling(
    summary: SummaryT,
    *,
    reason: str,
    compaction: int,
    keep: Collection[str] = (),
    whole: Collection[str] = (),
) -> tuple[SummaryT, str] | None:
    """Retire the least telling part (`least_telling`, `retire_parts`); None when none may go.

    Returns the summary and the id of the item retired or shortened.
    """
    part = least_telling(summary, keep=keep, whole=whole)
    if part is None:
        return None
    item_id, note = part
    cut = {item_id: None if note is None else frozenset({note})}
    return retire_parts(summary, cut, reason=reason, compaction=compaction)[0], item_id


@memoized("progsum.contract._consolidation.part_density", 128 * 1024)
def _part_density(body: str, *, user: bool, spoken: bool) -> float:
    """What one note of a joined note adds per character: its worth over it and its separator."""
    return _worth(body, user=user, spoken=spoken) / (len(body) + len(SEPARATOR))


def _worth(body: str, *, user: bool, spoken: bool) -> int:
    """One note's worth: its salience, 1 more, and `SPEAKER_BONUS` for a resolved first person."""
    return salience(body, user=user) + 1 + SPEAKER_BONUS * (spoken and body[:1].islower())


SPEAKER_BONUS = 2
"""What a note under its speaker's name is worth beyond its salience: the first-person statement
it resolved ("works in marketing" was "I work in marketing")."""
ITEM_CHARS = 10
"""Characters an item costs in the header beyond its text (``- [F12] `` and the line break)."""


@memoized("progsum.contract._consolidation.note_density", 128 * 1024)
def note_density(text: str, *, user: bool) -> float:
    """What a note adds per character of the header: the sum over its notes, over its length.

    Each note of a joined note (`progsum.judge._notes.split_note`) is worth its salience, 1 more,
    and
    `SPEAKER_BONUS` more when it is a first-person statement resolved under its speaker's name;
    the item costs its characters and `ITEM_CHARS`. (Salience of the whole text counts at most
    three names and four new words, so a note of five facts scored like one of a single clause.)
    Remembered per text: the engine's drop loop asks for every item again after each drop.
    """
    label, notes = _split(text)
    spoken = bool(label) and not label.startswith("(")
    worth = sum(_worth(body, user=user, spoken=spoken) for body in notes)
    return worth / (len(text) + ITEM_CHARS)
