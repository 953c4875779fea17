"""Consolidation: a summary that outgrew its header budget is brought back under it, safely.

Compaction after compaction, a summary only grows; past the policy's ``header_budget`` (about 15%
of the window) the engine consolidates it, once, right after the compaction that pushed it over.
A summarizer that implements `progsum.summary.request.Consolidator` proposes retirements of
near-duplicate and verbose items with condensed replacements; `screen` keeps only what is safe:

* binding items are never retired by consolidation;
* an item is retired only if every exact value it carries is still in the summary afterwards;
* a replacement may not introduce a value the summary did not hold.

Then, if the header is still over budget, `drop_oldest` retires the least telling non-binding
item (notes copied from the conversation by what they add per character, then the summarizer's
items by salience; the oldest among equals), repeatedly, each as a tombstone with the reason; it
stops when only binding items are left. Both functions are pure; the engine does the calling and
records a ``consolidated`` event (`progsum.engine.consolidate`).
"""

from __future__ import annotations

import functools
from collections.abc import Collection

from progsum.contract.artifacts import weight
from progsum.judge.notes import split_note
from progsum.judge.salience import salience
from progsum.judge.values import exact_values
from progsum.summary.merge import Refusal
from progsum.summary.schema import BaseSummary, Item, SummaryT, Tombstone, spec_of
from progsum.summary.update import NewItem, SummaryUpdate

__all__ = ["drop_least_salient", "drop_oldest", "note_density", "screen"]


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


def drop_oldest(
    summary: SummaryT, *, reason: str, compaction: int, keep: Collection[str] = ()
) -> tuple[SummaryT, str] | None:
    """Retire the least telling non-binding item as a tombstone; None when no item may go.

    Artifact-trail lines go by `progsum.contract.artifacts.weight` first: expendable ones (a file
    only read, a passing command) before any other item, changed files after all others. Within that
    order:

    * **notes copied from the conversation** (``origin="extracted"``, not the trail's: the
      offline summarizer's, the ledger's) go first, the one that adds least per character
      (`note_density`) first: a joined note is worth the sum of its notes, so five short facts
      under one label outlast one long clause;
    * then the summarizer's own items, the one that adds least (`progsum.judge.salience.salience` of
      its text; an item the user wrote counts as the user's) first, so old facts are not lost for
      being old.

    Among equals the oldest goes: the one folded from the earliest messages (then the lower id,
    then schema order). Items whose ids are in ``keep`` (the last carriers of values the user
    stated) stay while another item can go. (The name stays for the engine's call;
    ``drop_least_salient`` is the same function.)
    """
    spec = spec_of(type(summary))
    candidates: list[tuple[tuple[int, int, float, int, int, int], str, Item]] = []
    for order, f in enumerate(spec.lists):
        if f.binding:
            continue
        for item in getattr(summary, f.name):
            if item.id in keep:
                continue
            number = item.id[len(f.id_prefix) :]
            trailed = item.origin == "extracted" and item.author == "tool"
            tier = weight(item.text) if trailed else 1  # docs/artifacts.md
            user = item.author == "user"
            if item.origin == "extracted" and not trailed:
                group, rank = 0, note_density(item.text, user=user)
            else:
                group, rank = 1, float(salience(item.text, user=user))
            numeric = int(number) if number.isdigit() else 0
            key = (tier, group, rank, item.source[0], numeric, order)
            candidates.append((key, f.name, item))
    if not candidates:
        return None
    _, name, oldest = min(candidates, key=lambda c: c[0])
    kept = tuple(item for item in getattr(summary, name) if item.id != oldest.id)
    tombstone = Tombstone(field=name, item=oldest, reason=reason, compaction=compaction)
    changed = summary.model_copy(update={name: kept, "retired": (*summary.retired, tombstone)})
    return changed, oldest.id


SPEAKER_BONUS = 2
"""What a note under its speaker's name is worth beyond its salience: the first-person statement
it resolved ("works in marketing" was "I work in marketing")."""
ITEM_CHARS = 10
"""Characters an item costs in the header beyond its text (``- [F12] `` and the line break)."""


@functools.lru_cache(maxsize=4_096)
def note_density(text: str, *, user: bool) -> float:
    """What a note adds per character of the header: the sum over its notes, over its length.

    Each note of a joined note (`progsum.judge.notes.split_note`) is worth its salience, 1 more, and
    `SPEAKER_BONUS` more when it is a first-person statement resolved under its speaker's name;
    the item costs its characters and `ITEM_CHARS`. (Salience of the whole text counts at most
    three names and four new words, so a note of five facts scored like one of a single clause.)
    Remembered per text: the engine's drop loop asks for every item again after each drop.
    """
    label, notes = split_note(text)
    spoken = bool(label) and not label.startswith("(")
    worth = sum(
        salience(body, user=user) + 1 + SPEAKER_BONUS * (spoken and body[:1].islower())
        for body in notes
    )
    return worth / (len(text) + ITEM_CHARS)


drop_least_salient = drop_oldest
