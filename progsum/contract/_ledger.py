"""The exact-value ledger: every value the user stated stays in the context, token-exactly.

When a segment is folded, each exact value the user stated in it (amounts, dates, times, ids and
codes, paths, URLs, e-mail addresses, versions, quantities, and a number with its proper name: a
street address, a named place, a postcode; `progsum.judge._values`) goes on the
ledger with the sentence that stated it; a value only asked about ("what does it cost on
2027-05-03?") is not a statement and stays off the ledger. After every merge, consolidation, drop
and repair the engine asks `lost` which ledger values no live item and no kept message carries any
more (token-exactly: "$3" does not carry "$3,000"; the header's own text such as "Messages 2-14"
never counts), and `restore` puts the user's sentence back, verbatim, as an extracted item: into the
rules field when the sentence is a rule (a prohibition or an obligation), else into the facts field.
Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from progsum.contract._guards import BUDGET_FULL, constraint_field, fact_field
from progsum.judge._dates import without_stamp
from progsum.judge._extract import Extraction
from progsum.judge._notes import split_note
from progsum.judge._provenance import user_prose
from progsum.judge._segment import pieces
from progsum.judge._values import StatedValue as Entry
from progsum.judge._values import carried, named_keys, named_values, stated_values, value_keys
from progsum.summary._merge import MergeReport, Refusal, merge
from progsum.summary._request import Segment
from progsum.summary._schema import BaseSummary, Item, SummaryT, spec_of
from progsum.summary._update import NewItem, SummaryUpdate

__all__ = [
    "Entry",
    "carrier_items",
    "carrier_notes",
    "carriers",
    "entries",
    "keys",
    "lost",
    "restore",
    "values",
]


def values(sentence: str) -> tuple[str, ...]:
    """The values a user's sentence states, to the ledger: a number with its name stands whole.

    "Ship it to 12 Rua Augusta by 2027-05-03" states ``("12 Rua Augusta", "2027-05-03")``: the
    address is one value (`progsum.judge._values.named_values`), so a context that keeps "12" and
    drops the street no longer carries it.
    """
    named = named_values(sentence)
    if not named:
        return stated_values(sentence)
    numbers = {part for value in named for part in value.split() if any(c.isdigit() for c in part)}
    return (*named, *(v for v in stated_values(sentence) if v not in numbers))


def keys(text: str) -> frozenset[str]:
    """The ledger values ``text`` carries: its value keys and its named values' keys."""
    return value_keys(text) | named_keys(text)


def entries(segment: Segment, extraction: Extraction) -> tuple[Entry, ...]:
    """The ledger entries of a folded segment: each value the user stated, with its sentence.

    One entry per value, from the first sentence that states it (a question only asks).
    """
    rules = {(s.at, s.text) for s in (*extraction.prohibitions, *extraction.obligations)}
    found: list[Entry] = []
    seen: set[str] = set()
    for (at, message), author in zip(segment, segment.authors, strict=True):
        if author != "user":
            continue
        # code and fragments too: a value is a value; a date stamp is the message's day
        for sentence in pieces(without_stamp(user_prose(message))):
            if sentence.endswith("?"):
                continue
            for value in values(sentence):
                if value not in seen:
                    seen.add(value)
                    found.append(Entry(value, at, sentence, (at, sentence) in rules))
    return tuple(found)


def carriers(
    summary: BaseSummary | None, kept: Iterable[str], ledger: Sequence[Entry] | None = None
) -> frozenset[str]:
    """The value keys the context carries: live items' texts and the kept messages' prose.

    Each text is read on its own (an item's reading is remembered, `short_text_cache`), so a
    fold reads what is new, not the whole summary again.

    Named values' keys are read only when ``ledger`` holds one (or no ledger is given): most
    ledgers hold none, and their check costs one pass of `value_keys`.
    """
    texts = list(kept)
    if summary is not None:
        spec = spec_of(type(summary))
        texts += [item.text for f in spec.lists for item in getattr(summary, f.name)]
    read = _reader(ledger)
    return frozenset().union(*(read(text) for text in texts))


def _reader(ledger: Sequence[Entry] | None) -> Callable[[str], frozenset[str]]:
    """`keys` when ``ledger`` may hold a named value (or is not given), else `value_keys`.

    A named value is words, one of them capitalised; most ledgers hold none.
    """
    if ledger is None or any(
        " " in e.value and any(word[:1].isupper() for word in e.value.split()) for e in ledger
    ):
        return keys
    return value_keys


def lost(ledger: Sequence[Entry], keys: frozenset[str]) -> tuple[Entry, ...]:
    """The ledger entries whose value ``keys`` (from `carriers`) no longer hold."""
    return tuple(entry for entry in ledger if not carried(entry.value, keys))


def restore(
    summary: SummaryT,
    missing: Sequence[Entry],
    *,
    compaction: int,
    label: Callable[[int], str] | None = None,
    notes: frozenset[str] = frozenset(),
    room: int | None = None,
    cost: Callable[[str], int] | None = None,
) -> tuple[SummaryT, MergeReport, tuple[Entry, ...]]:
    """Put each missing value's sentence back, verbatim; also return entries with no home.

    A rule goes to the rules field while the binding budget has ``room`` for it (``cost``: the
    tokens an item takes; None: no budget), anything else (and a rule past the budget, named in
    the report's ``demoted``) to the facts field (`progsum.contract`); an entry whose field the
    schema lacks is returned as unplaced. In a field written as notes (``notes``) the sentence
    follows its message's ``label`` (``Caroline (9 June 2023)``), so the restored fact says who
    stated it and when, as the summarizer's notes do.
    """
    spec = spec_of(type(summary))
    rules, facts = constraint_field(spec), fact_field(spec)
    add: dict[str, list[NewItem]] = {}
    unplaced: list[Entry] = []
    demoted: list[Refusal] = []
    seen: set[tuple[int, str]] = set()
    for entry in missing:
        if (entry.at, entry.sentence) in seen:
            continue
        seen.add((entry.at, entry.sentence))
        target = rules if entry.rule and rules is not None else facts or rules
        if target is rules and facts is not None and room is not None and cost is not None:
            if cost(entry.sentence) > room:
                target = facts
                demoted.append(Refusal(id=entry.sentence[:80], why=BUDGET_FULL))
            else:
                room -= cost(entry.sentence)
        if target is None:
            unplaced.append(entry)
            continue
        text = entry.sentence
        if label is not None and target.name in notes and (lead := label(entry.at)):
            text = f"{lead}: {text}"
        add.setdefault(target.name, []).append(
            NewItem(
                text=text,
                at=entry.at,
                origin="extracted",
                cites=(entry.at,),
                author="user",
            )
        )
    if not add:
        return summary, MergeReport(), tuple(unplaced)
    update = SummaryUpdate(add={name: tuple(items) for name, items in add.items()})
    ats = [e.at for e in missing]
    restored, report = merge(
        summary, update, source=(min(ats), max(ats) + 1), compaction=compaction
    )
    return restored, report.model_copy(update={"demoted": tuple(demoted)}), tuple(unplaced)


def carrier_items(summary: BaseSummary, ledger: Sequence[Entry]) -> frozenset[str]:
    """Ids of live items that are the last carrier of some ledger value in the summary."""
    return frozenset(_last_carriers(summary, ledger, _reader(ledger)))


def carrier_notes(summary: BaseSummary, ledger: Sequence[Entry]) -> dict[str, frozenset[int]]:
    """The last carriers of ledger values, by id, each with the notes that carry those values.

    The notes are the indexes of the item's notes (`progsum.judge._notes.split_note`; an item
    that is not a joined note is one note) whose own text carries a value the item alone
    carries: the other notes of a joined note may leave the header without taking a value with
    them. When no single note carries such a value (it is read only across notes, or only in
    the label they share), every note is named.
    """
    read = _reader(ledger)
    alone = _last_carriers(summary, ledger, read)
    return {item_id: _holding(item, values, read) for item_id, (item, values) in alone.items()}


def _last_carriers(
    summary: BaseSummary, ledger: Sequence[Entry], read: Callable[[str], frozenset[str]]
) -> dict[str, tuple[Item, list[str]]]:
    """Each live item that alone carries some ledger values, by id, with those values."""
    spec = spec_of(type(summary))
    holders: dict[str, list[Item]] = {}
    for item in (item for f in spec.lists for item in getattr(summary, f.name)):
        held = read(item.text)
        for entry in ledger:
            if carried(entry.value, held):
                holders.setdefault(entry.value, []).append(item)
    alone: dict[str, tuple[Item, list[str]]] = {}
    for value, found in holders.items():
        if len(found) == 1:
            alone.setdefault(found[0].id, (found[0], []))[1].append(value)
    return alone


def _holding(
    item: Item, values: Sequence[str], read: Callable[[str], frozenset[str]]
) -> frozenset[int]:
    """The indexes of ``item``'s notes that carry ``values``; all of them when no note holds one."""
    _, notes = split_note(item.text)
    found: set[int] = set()
    for value in values:
        holding = [k for k, note in enumerate(notes) if carried(value, read(note))]
        if not holding:
            return frozenset(range(len(notes)))
        found.update(holding)
    return frozenset(found)
