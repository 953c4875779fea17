"""Merging a summarizer's update into the prior summary, as typed lists, by our code.

`merge` is pure and deterministic. Every prior item is carried forward unchanged (so its exact
values survive any number of compactions); new items are appended with fresh ids; duplicates are
dropped; retirements apply by id and leave tombstones; a binding item is retired only with a stated
reason. Two schema rules then apply, each leaving tombstones with the reason: in a keyed field a new
``key: value`` item supersedes the older items with the same key, and a field with ``max_items``
drops its oldest items beyond the cap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Self

from pydantic import ConfigDict

from progsum._memo import memoized
from progsum.errors import ConfigError
from progsum.judge._values import carried, exact_values, value_keys
from progsum.summary._record import Record
from progsum.summary._schema import (
    BaseSummary,
    FieldSpec,
    Item,
    SchemaSpec,
    SummaryT,
    Tombstone,
    item_key,
    spec_of,
)
from progsum.summary._update import NewItem, Retirement, SummaryUpdate

__all__ = [
    "MergeReport",
    "Refusal",
    "Retired",
    "fresh_number",
    "merge",
    "normalise",
    "retired_with",
]


class Refusal(Record):
    """A retirement that was not applied, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    why: str


class MergeReport(Record):
    """What a merge did, recorded on the compaction event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    added: tuple[str, ...] = ()
    """Ids of the new items."""
    duplicates: tuple[str, ...] = ()
    """Texts dropped because the field already holds them (after normalising)."""
    retired: tuple[str, ...] = ()
    """Ids retired, now tombstones."""
    superseded: tuple[str, ...] = ()
    """Ids of keyed items replaced by a new value for the same key (tombstones)."""
    dropped: tuple[str, ...] = ()
    """Ids of the oldest items dropped because their field was over its ``max_items`` cap."""
    refused: tuple[Refusal, ...] = ()
    """Retirements not applied: unknown id, already retired, or binding without the user's word
    (see `progsum.contract`)."""
    rejected: tuple[Refusal, ...] = ()
    """New items refused by the engine's contract (text and why): invented or paraphrased
    values, binding items nothing in the segment states, pleasantries."""
    demoted: tuple[Refusal, ...] = ()
    """Binding items filed as facts (text and why): stated only by tools or the assistant, or
    beyond the binding budget."""
    restored: tuple[str, ...] = ()
    """Ids of items holding the user's own sentence, restored because a value the user stated
    was no longer carried by the context (the exact-value ledger, `progsum.contract._ledger`)."""
    archived_values: tuple[str, ...] = ()
    """Values the user stated that left the header for the archive: only loose items carried
    them, and recall returns their sentence for a question naming their subject
    (`progsum.engine._recall.recallable`); they leave the ledger."""
    objective_changed: bool = False


@memoized("progsum.summary._merge.normalise", 512 * 1024)  # a merge compares every live item
def normalise(text: str) -> tuple[str, tuple[str, ...]]:
    """The form two item texts are compared in to find duplicates.

    Wording compares case-folded, with whitespace collapsed and the end trimmed; exact values
    (numbers, ids, paths, URLs) compare exactly, so ``/data/Report.csv`` and ``/data/report.csv``
    stay two items.
    """
    return " ".join(text.casefold().split()).rstrip(" .;:!"), exact_values(text)


def merge(
    prior: SummaryT,
    update: SummaryUpdate,
    *,
    source: tuple[int, int],
    compaction: int,
    reopened: Callable[[Item], bool] | None = None,
) -> tuple[SummaryT, MergeReport]:
    """Apply ``update`` to ``prior``; return the new summary and a report.

    Args:
        prior: The current summary (an empty instance of the schema before the first compaction).
        update: What the summarizer proposed for the segment.
        source: Log range ``[start, end)`` of the segment, the provenance of new items.
        compaction: Number of this compaction (1-based), recorded on tombstones.
        reopened: Whether the user reopened a binding item in the segment; a keyed binding item
            whose values its successor drops is superseded only then (default: never).

    Raises:
        ConfigError: the update names a field the schema does not have, or an item index outside
            the segment.
    """
    spec = spec_of(type(prior))
    for name in update.add:
        spec.list_field(name)  # raises with the schema's field names

    fields: dict[str, list[Item]] = {f.name: list(getattr(prior, f.name)) for f in spec.lists}
    tombstones = list(prior.retired)
    numbers = _retired_numbers(prior.retired)
    retired, refused = _retire(spec, update.retire, fields, tombstones, compaction)
    added, duplicates = _add(
        spec,
        update.add,
        fields,
        source,
        numbers=numbers,
        new_tombstones=tombstones[len(prior.retired) :],
    )
    superseded: list[str] = []
    dropped: list[str] = []
    for f in spec.lists:
        if f.kind == "keyed":
            superseded += _supersede(f, fields[f.name], tombstones, compaction, reopened or _never)
        if f.max_items is not None:
            dropped += _cap(f, f.max_items, fields[f.name], tombstones, compaction)

    changes: dict[str, object] = {name: tuple(items) for name, items in fields.items()}
    changes["retired"] = retired_with(prior.retired, tombstones[len(prior.retired) :])
    objective_changed = False
    if spec.objective is not None and update.objective and update.objective.strip():
        new_objective = update.objective.strip()
        objective_changed = new_objective != getattr(prior, spec.objective.name)
        changes[spec.objective.name] = new_objective
    merged = prior.model_copy(update=changes)
    report = MergeReport(
        added=tuple(added),
        duplicates=tuple(duplicates),
        retired=tuple(retired),
        superseded=tuple(superseded),
        dropped=tuple(dropped),
        refused=tuple(refused),
        objective_changed=objective_changed,
    )
    return merged, report


def _retire(
    spec: SchemaSpec,
    retirements: Iterable[Retirement],
    fields: dict[str, list[Item]],
    tombstones: list[Tombstone],
    compaction: int,
) -> tuple[list[str], list[Refusal]]:
    """Apply ``retirements`` by id to ``fields``, a tombstone each; return the ids and refusals."""
    where = {item.id: f.name for f in spec.lists for item in fields[f.name]}
    binding = {f.name for f in spec.binding}
    retired: list[str] = []
    refused: list[Refusal] = []
    for retirement in retirements:
        field_name = where.get(retirement.id)
        reason = retirement.reason.strip()
        if field_name is None:
            gone = any(t.item.id == retirement.id for t in tombstones)
            refused.append(
                Refusal(id=retirement.id, why="already retired" if gone else "no such item")
            )
            continue
        if field_name in binding and not reason:
            refused.append(
                Refusal(id=retirement.id, why="binding item; retiring it needs a stated reason")
            )
            continue
        items = fields[field_name]
        index = next(i for i, item in enumerate(items) if item.id == retirement.id)
        tombstones.append(
            Tombstone(
                field=field_name,
                item=items.pop(index),
                reason=reason,
                compaction=compaction,
                evidence=retirement.evidence,
            )
        )
        del where[retirement.id]
        retired.append(retirement.id)
    return retired, refused


def _add(
    spec: SchemaSpec,
    add: Mapping[str, Sequence[str | NewItem]],
    fields: dict[str, list[Item]],
    source: tuple[int, int],
    *,
    numbers: dict[tuple[str, str], int],
    new_tombstones: list[Tombstone],
) -> tuple[list[str], list[str]]:
    """Append the new items to ``fields`` with fresh ids; return their ids and the duplicates.

    Ids go on from the highest number among the live items, the prior tombstones (``numbers``,
    from `_retired_numbers`) and the tombstones of this merge (``new_tombstones``).
    """
    added: list[str] = []
    duplicates: list[str] = []
    for f in spec.lists:
        new = add.get(f.name, ())
        if not new:
            continue
        items = fields[f.name]
        seen = {normalise(item.text) for item in items}
        number = _next_number(f.id_prefix, items, numbers, new_tombstones, f.name)
        for entry in new:
            if isinstance(entry, NewItem):
                text, at, origin = entry.text, entry.at, entry.origin
                cites, author = entry.cites, entry.author
            else:
                text, at, origin, cites, author = entry, None, "summarizer", (), None
            text = text.strip()
            key = normalise(text)
            if not key[0]:
                continue
            if key in seen:
                duplicates.append(text)
                continue
            seen.add(key)
            item_id = f"{f.id_prefix}{number}"
            number += 1
            items.append(
                Item(
                    id=item_id,
                    text=text,
                    source=_provenance(at, source),
                    origin=origin,
                    cites=cites,
                    author=author,
                )
            )
            added.append(item_id)
    return added, duplicates


_IDENTIFIER = re.compile(r"^\w+(?:[-_.]\w+)+$")


def _names_an_entity(key: str) -> bool:
    """Whether a key names one thing rather than a kind ("Hotel").

    It does with an identifying value ("Order A-1042"), an identifier ("payments-api") or a proper
    name ("Hotel Casa do Patio").
    """
    words = key.split()
    return (
        bool(value_keys(key))
        or any(_IDENTIFIER.match(w) for w in words)
        or any(w[:1].isupper() for w in words[1:])
    )


def _never(_: Item) -> bool:
    return False


def _supersede(
    spec: FieldSpec,
    items: list[Item],
    tombstones: list[Tombstone],
    compaction: int,
    reopened: Callable[[Item], bool],
) -> list[str]:
    """Retire every keyed item a later item for the same entity replaces; return their ids.

    The same key names the same entity only when the key holds an identifying value ("Order
    A-1042"), an identifier ("payments-api") or a proper name ("Hotel Casa do Patio"), or the newer
    item keeps every value of the older one; a second "Hotel: ..." with
    another confirmation code is another booking, and both stay. A binding item whose values the
    newer one drops is superseded only when the user reopened it (``reopened``).
    """
    latest: dict[str, Item] = {}
    for item in items:
        key = item_key(item.text)
        if key is not None:
            latest[key] = item
    gone: list[str] = []
    for item in list(items):
        key = item_key(item.text)
        if key is None or latest[key] is item:
            continue
        newer = latest[key]
        keys = value_keys(newer.text)
        kept = all(carried(value, keys) for value in exact_values(item.text))
        identified = _names_an_entity(item.text.partition(": ")[0])
        if not kept and (not identified or (spec.binding and not reopened(item))):
            continue
        items.remove(item)
        reason = f"superseded by [{newer.id}]: {newer.text}"
        tombstones.append(
            Tombstone(field=spec.name, item=item, reason=reason, compaction=compaction)
        )
        gone.append(item.id)
    return gone


def _cap(
    spec: FieldSpec, cap: int, items: list[Item], tombstones: list[Tombstone], compaction: int
) -> list[str]:
    """Retire the oldest items beyond ``cap``; return their ids."""
    gone: list[str] = []
    while len(items) > cap:
        item = items.pop(0)
        reason = f"{spec.label} keeps at most {cap} items; the oldest go first"
        tombstones.append(
            Tombstone(field=spec.name, item=item, reason=reason, compaction=compaction)
        )
        gone.append(item.id)
    return gone


def _next_number(
    prefix: str,
    items: list[Item],
    retired: dict[tuple[str, str], int],
    new_tombstones: list[Tombstone],
    name: str,
) -> int:
    """One past the highest number after ``prefix`` among the field's items and tombstones.

    ``retired`` holds the highest numbers of the prior summary's tombstones (`_retired_numbers`),
    so only the live items and this merge's tombstones are read: O(live), not O(history).
    """
    used = [item.id for item in items]
    used += [t.item.id for t in new_tombstones if t.field == name]
    numbers = [
        int(i[len(prefix) :]) for i in used if i.startswith(prefix) and i[len(prefix) :].isdigit()
    ]
    return max(max(numbers, default=0), retired.get((name, prefix), 0)) + 1


def fresh_number(summary: BaseSummary, field: str, prefix: str) -> int:
    """The number a new item of ``field`` gets: past every live and retired id after ``prefix``."""
    items = list(getattr(summary, field))
    return _next_number(prefix, items, _retired_numbers(summary.retired), [], field)


class Retired(tuple[Tombstone, ...]):  # noqa: SLOT001 - a tuple takes no slots: its numbers live in its dict
    """A summary's tombstones that know the highest id number of each field and prefix in them.

    What a merge leaves (`retired_with`), so the next merge numbers new ids without reading the
    tombstones again: a chain of compactions reads each tombstone once. A summary read from JSON
    holds a plain tuple, read in full by its first merge. It equals, hashes, copies and pickles
    as the plain tuple of its tombstones.
    """

    numbers: dict[tuple[str, str], int]
    """`_retired_numbers` of these tombstones."""

    def __new__(cls, tombstones: Iterable[Tombstone], numbers: dict[tuple[str, str], int]) -> Self:
        """The tombstones with their ``numbers`` (`_retired_numbers`)."""
        made = super().__new__(cls, tombstones)
        made.numbers = numbers
        return made

    def __reduce__(self) -> tuple[type[tuple[Tombstone, ...]], tuple[tuple[Tombstone, ...]]]:
        """Copies and pickles are plain tuples (their numbers are read again when needed)."""
        return tuple, (tuple(self),)


def retired_with(retired: tuple[Tombstone, ...], new: Iterable[Tombstone]) -> Retired:
    """``retired`` followed by the ``new`` tombstones, knowing their id numbers (`Retired`)."""
    added = tuple(new)
    numbers = dict(_retired_numbers(retired))
    _count(numbers, added)
    return Retired((*retired, *added), numbers)


def _retired_numbers(retired: tuple[Tombstone, ...]) -> dict[tuple[str, str], int]:
    """The highest number after each possible id prefix, per field, among ``retired``.

    Keyed ``(field, prefix)``: an id ``C12`` counts as 12 after ``C``, 2 after ``C1``. A
    `Retired` knows them; any other tuple (a summary read from JSON) is read in full.
    """
    if isinstance(retired, Retired):
        return retired.numbers
    numbers: dict[tuple[str, str], int] = {}
    _count(numbers, retired)
    return numbers


def _count(numbers: dict[tuple[str, str], int], tombstones: Iterable[Tombstone]) -> None:
    """Raise ``numbers`` to the numbers of ``tombstones`` (see `_retired_numbers`)."""
    for t in tombstones:
        item_id = t.item.id
        cut = len(item_id)
        while cut > 0 and item_id[cut - 1 :].isdigit():
            cut -= 1
            key = (t.field, item_id[:cut])
            value = int(item_id[cut:])
            if value > numbers.get(key, -1):
                numbers[key] = value


def _provenance(at: int | None, source: tuple[int, int]) -> tuple[int, int]:
    if at is None:
        return source
    start, end = source
    if not start <= at < end:
        raise ConfigError(
            f"an update item says it came from message {at}, outside the segment [{start}, {end}); "
            "give the log index of a message in the segment, or None"
        )
    return (at, at + 1)


def empty(schema: type[SummaryT]) -> SummaryT:
    """An empty summary of ``schema``: no objective, no items."""
    spec_of(schema)  # validates the schema
    return schema()


def live_items(summary: BaseSummary) -> dict[str, tuple[Item, ...]]:
    """The items of each list field, by field name, in schema order."""
    return {f.name: getattr(summary, f.name) for f in spec_of(type(summary)).lists}
