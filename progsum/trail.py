"""Placing the artifact trail in the summary, beside every summarizer's update.

Pure. The engine calls `merge_trail` after the summarizer's update was held to the binding contract
and merged, so the trail reaches the header whichever summarizer ran (a model, the extractive one,
the user's own, a fallback) and the contract never judges it: its values come from the segment.

Where each kind goes: the field that declares it (``extract = ["files"]``), else the facts field
(`progsum.guards.fact_field`); never a binding field. A new entry retires the prior trail entry
with the same key in that field, so a file's entry always shows its newest state. When the trail
of one segment would take more than `TRAIL_SHARE` of the header budget or `SEGMENT_SHARE` of the
segment's own tokens, or more than a field's ``max_items``, the most important entries are kept
(changed files and unresolved errors, failed commands, ids, passing commands, resolved errors,
sources, files only read, searches), newest first within each rank. See docs/artifacts.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from progsum.artifacts import PASSED_RANK, Artifact, trail
from progsum.contract import ITEM_OVERHEAD
from progsum.guards import fact_field
from progsum.merge import MergeReport, merge, normalise
from progsum.schema import BaseSummary, FieldSpec, Item, SchemaSpec, SummaryT, spec_of
from progsum.summarizer import Segment
from progsum.transcript import source_text
from progsum.update import NewItem, Retirement, SummaryUpdate

__all__ = ["SEGMENT_SHARE", "TRAIL_SHARE", "merge_trail", "placed", "target_field"]

TRAIL_SHARE = 0.5
"""Most of the header budget the trail of one compaction may add."""
SEGMENT_SHARE = 0.25
"""Most of the folded segment's own tokens its trail may take, so the trail never makes a
compaction larger than what it replaces."""


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
    folded = count(source_text(message for _, message in segment))
    room = int(folded * SEGMENT_SHARE)
    if header_limit is not None:
        room = min(room, int(header_limit * TRAIL_SHARE))
    by_field = placed(artifacts, spec, room=room, count=count)
    add: dict[str, tuple[NewItem, ...]] = {}
    retire: list[Retirement] = []
    for name, kept in by_field.items():
        live: tuple[Item, ...] = getattr(merged, name)
        fresh = [a for a in kept if not _covered(a, live)]
        if fresh:
            add[name] = tuple(
                NewItem(text=a.text, at=a.at, origin="extracted", author="tool") for a in fresh
            )
        for a in fresh:
            prefix = f"{a.key}: ".casefold()
            retire.extend(
                Retirement(id=item.id, reason=f"superseded by the artifact trail: {a.text}")
                for item in live
                if _trailed(item) and item.text.casefold().startswith(prefix)
            )
    retire.extend(_resolved(merged, spec, artifacts))
    if not add and not retire:
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


def _trailed(item: Item) -> bool:
    """An item the trail wrote (extracted from tool output, not a user's sentence)."""
    return item.origin == "extracted" and item.author == "tool"


def _covered(artifact: Artifact, live: Sequence[Item]) -> bool:
    """The field already says it: the same line, a summarizer's item under the same key, or the id.

    A model's ``billing/invoice.py: total() now truncates`` tells more than the trail's
    ``billing/invoice.py: modified (Edit)``, so the trail does not replace it.
    """
    line = normalise(artifact.text)
    prefix = f"{artifact.key}: ".casefold()
    value = artifact.key.rpartition(" ")[2] if artifact.kind == "identifiers" else None
    for item in live:
        if normalise(item.text) == line:
            return True
        if not _trailed(item) and (
            item.text.casefold().startswith(prefix) or (value and value in item.text)
        ):
            return True
    return False


def _resolved(
    merged: BaseSummary, spec: SchemaSpec, artifacts: Sequence[Artifact]
) -> list[Retirement]:
    """Retire earlier trail errors that a passing run of the same command in this segment fixes."""
    passed = {a.key: a for a in artifacts if a.kind == "commands" and a.rank == PASSED_RANK}
    target = target_field(spec, "errors")
    if not passed or target is None:
        return []
    gone: list[Retirement] = []
    for item in getattr(merged, target.name):
        if not (_trailed(item) and item.text.startswith("error in ")):
            continue
        failed = item.text.removeprefix("error in ").partition(": ")[0]
        if failed in passed and item.text.endswith("; unresolved"):
            later = passed[failed]
            gone.append(
                Retirement(id=item.id, reason=f"resolved: {later.text} (message {later.at + 1})")
            )
    return gone
