"""Placing the artifact trail in the summary, beside every summarizer's update.

Pure. The engine calls `merge_trail` after the summarizer's update was held to the binding contract
and merged, so the trail reaches the header whichever summarizer ran (a model, the extractive one,
the user's own, a fallback) and the contract never judges it: its values come from the segment.

Where each kind goes: the field that declares it (``extract = ["files"]``), else the facts field
(`progsum.guards.fact_field`); never a binding field. A new entry retires the prior trail entry
with the same key in that field, so a file's entry always shows its newest state. When the trail
of one segment would take more than `TRAIL_SHARE` of the header budget, or more than a field's
``max_items``, the most important entries are kept (unresolved errors, changed files, failed
commands, ids, passing commands, resolved errors, sources, files only read, searches), newest first
within each rank. See docs/artifacts.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from progsum.artifacts import Artifact, trail
from progsum.contract import ITEM_OVERHEAD
from progsum.guards import fact_field
from progsum.merge import MergeReport, merge, normalise
from progsum.schema import FieldSpec, SchemaSpec, SummaryT, spec_of
from progsum.summarizer import Segment
from progsum.update import NewItem, Retirement, SummaryUpdate

__all__ = ["TRAIL_SHARE", "merge_trail", "placed", "target_field"]

TRAIL_SHARE = 0.5
"""Most of the header budget the trail of one compaction may add."""


def target_field(spec: SchemaSpec, kind: str) -> FieldSpec | None:
    """The non-binding field that takes artifacts of ``kind``: declared, else facts, else None."""
    declared = spec.extracting(kind)
    if declared is not None and not declared.binding:
        return declared
    return fact_field(spec)


def placed(
    artifacts: Sequence[Artifact],
    spec: SchemaSpec,
    *,
    room: int | None,
    count: Callable[[str], int],
) -> dict[str, list[Artifact]]:
    """The artifacts kept, by target field, in trail order, within ``room`` tokens and the caps."""
    chosen: list[tuple[str, Artifact]] = []
    used = 0
    per_field: dict[str, int] = {}
    for artifact in sorted(artifacts, key=lambda a: (a.rank, -a.at)):
        target = target_field(spec, artifact.kind)
        if target is None:
            continue
        cap = target.max_items
        if cap is not None and per_field.get(target.name, 0) >= cap:
            continue
        cost = count(artifact.text) + ITEM_OVERHEAD
        if room is not None and used + cost > room:
            continue
        used += cost
        per_field[target.name] = per_field.get(target.name, 0) + 1
        chosen.append((target.name, artifact))
    order = {id(a): n for n, a in enumerate(artifacts)}
    by_field: dict[str, list[Artifact]] = {}
    for name, artifact in sorted(chosen, key=lambda pair: order[id(pair[1])]):
        by_field.setdefault(name, []).append(artifact)
    return by_field


def merge_trail(
    segment: Segment,
    merged: SummaryT,
    report: MergeReport,
    number: int,
    *,
    header_limit: int | None,
    count: Callable[[str], int],
) -> tuple[SummaryT, MergeReport]:
    """``merged`` with the segment's artifact trail added, and the report with its changes."""
    artifacts = trail(segment)
    if not artifacts:
        return merged, report
    spec = spec_of(type(merged))
    room = None if header_limit is None else int(header_limit * TRAIL_SHARE)
    by_field = placed(artifacts, spec, room=room, count=count)
    add: dict[str, tuple[NewItem, ...]] = {}
    retire: list[Retirement] = []
    for name, kept in by_field.items():
        live = getattr(merged, name)
        present = {normalise(item.text) for item in live}
        fresh = [a for a in kept if normalise(a.text) not in present]
        if not fresh:
            continue
        add[name] = tuple(
            NewItem(text=a.text, at=a.at, origin="extracted", author="tool") for a in fresh
        )
        for a in fresh:
            prefix = f"{a.key}: ".casefold()
            retire.extend(
                Retirement(id=item.id, reason=f"superseded by the artifact trail: {a.text}")
                for item in live
                if item.origin == "extracted" and item.text.casefold().startswith(prefix)
            )
    if not add:
        return merged, report
    update = SummaryUpdate(add=add, retire=tuple(retire))
    trailed, extra = merge(merged, update, source=(segment.start, segment.end), compaction=number)
    combined = report.model_copy(
        update={
            "added": report.added + extra.added,
            "retired": report.retired + extra.retired,
            "superseded": report.superseded + extra.superseded,
            "dropped": report.dropped + extra.dropped,
            "duplicates": report.duplicates + extra.duplicates,
        }
    )
    return trailed, combined
