"""Placing the artifact trail in the summary, beside every summarizer's update.

Pure. The engine calls `merge_trail` after the summarizer's update was held to the binding contract
and merged, so the trail reaches the header whichever summarizer ran (a model, the extractive one,
the user's own, a fallback) and the contract never judges it: its values come from the segment.

Where each kind goes: the field that declares it (``extract = ["files"]``), else the facts field
(`progsum.contract._guards.fact_field`); never a binding field. A new entry retires the prior trail
entry with the same key in that field, so a file's entry always shows its newest state. When the
trail of one segment would take more than `TRAIL_SHARE` of the header budget or `SEGMENT_SHARE` of
the segment's own tokens, or more than a field's ``max_items``, the most important entries are kept
(changed files and unresolved errors, failed commands, ids, passing commands, resolved errors,
sources, files only read, searches), newest first within each rank. Ids of one kind and state share
a line (`grouped_ids`). When one line per file does not fit, the field's trail file lines are
rewritten as compact lines, the root once and paths grouped by directory (`compact_files`,
`progsum.judge._pathlist`), within the room consolidation leaves them. See docs/artifacts.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from progsum.contract._artifacts import MAX_KEY_CHARS, PASSED_RANK, Artifact, trail
from progsum.contract._enforce import ITEM_OVERHEAD
from progsum.contract._guards import fact_field
from progsum.contract._planning import finished_requests, merge_work, tool_names
from progsum.judge._pathlist import STATES, compactable, file_line, lines, parse
from progsum.messages._transcript import source_text
from progsum.policy._tokens import DEFAULT_SAFETY_MARGIN
from progsum.summary._merge import MergeReport, merge, normalise
from progsum.summary._request import Segment
from progsum.summary._schema import (
    BaseSummary,
    FieldSpec,
    Item,
    SchemaSpec,
    SummaryT,
    Tombstone,
    spec_of,
)
from progsum.summary._update import NewItem, Retirement, SummaryUpdate
from progsum.summary._work import WorkLedger

__all__ = [
    "HEADER_TEXT",
    "SEGMENT_SHARE",
    "TRAIL_SHARE",
    "compact_files",
    "grouped_ids",
    "merge_trail",
    "placed",
    "target_field",
]

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
    """``merged`` with the segment's artifact trail and work ledger, and the report's changes.

    The work ledger (`progsum.contract._planning.merge_work`) takes the segment's planning tool
    calls; the trail takes the rest of its tool calls.
    """
    spec = spec_of(type(merged))
    prior_work = merged.work
    merged = _with_work(merged, segment, spec)
    finished = _finished(merged, spec, prior_work)
    artifacts = trail(segment, tool_names(spec.planning_tools))
    if not artifacts and not finished:
        return merged, report
    folded = count(source_text(message for _, message in segment))
    room = int(folded * SEGMENT_SHARE)
    if header_limit is not None:
        room = min(room, int(header_limit * TRAIL_SHARE))
    artifacts = tuple(grouped_ids(artifacts, spec, merged))
    by_field = placed(artifacts, spec, room=room, count=count)
    add: dict[str, tuple[NewItem, ...]] = {}
    retire: list[Retirement] = []
    files = target_field(spec, "files")
    rewrite = None
    if header_limit is not None and files is not None:
        budget = _file_room(merged, spec, header_limit, files.name, count)
        dropped = _dropped(merged.retired, files.name)
        rewrite = compact_files(
            artifacts,
            getattr(merged, files.name),
            budget=budget,
            room=room,
            count=count,
            dropped=dropped,
        )
    if rewrite is not None and files is not None:
        lines, gone, growth = rewrite
        others = [a for a in artifacts if not _listable(a)]
        by_field = placed(others, spec, room=max(0, room - max(0, growth)), count=count)
        at = max(a.at for a in artifacts if _listable(a))
        add[files.name] = tuple(
            NewItem(text=line, at=at, origin="extracted", author="tool") for line in lines
        )
        retire.extend(
            Retirement(id=item.id, reason="merged into the compact file list of the trail")
            for item in gone
        )
    for name, kept in by_field.items():
        live = _Live(getattr(merged, name))
        fresh = [a for a in kept if not live.covers(a)]
        if fresh:
            add[name] = (
                *add.get(name, ()),
                *(NewItem(text=a.text, at=a.at, origin="extracted", author="tool") for a in fresh),
            )
        for a in fresh:
            retire.extend(
                Retirement(id=item.id, reason=f"superseded by the artifact trail: {a.text}")
                for item in live.trailed_under(a.key)
            )
    retire.extend(_resolved(merged, spec, artifacts))
    retire.extend(finished)
    if not add and not retire:
        return merged, report
    update = SummaryUpdate(add=add, retire=tuple(retire))
    trailed, extra = merge(merged, update, source=(segment.start, segment.end), compaction=number)
    return trailed, _combined(report, extra)


def _combined(report: MergeReport, extra: MergeReport) -> MergeReport:
    """``report`` with what the trail's own merge (``extra``) added, retired and dropped."""
    return report.model_copy(
        update={
            "added": report.added + extra.added,
            "retired": report.retired + extra.retired,
            "superseded": report.superseded + extra.superseded,
            "dropped": report.dropped + extra.dropped,
            "duplicates": report.duplicates + extra.duplicates,
        }
    )


def _finished(merged: BaseSummary, spec: SchemaSpec, before: WorkLedger) -> list[Retirement]:
    """Retire the user's open requests the plan finished (`planning.finished_requests`)."""
    target = spec.extracting("questions")
    if target is None or merged.work is before:
        return []
    threads = getattr(merged, target.name)
    return [
        Retirement(id=item.id, reason=reason)
        for item, reason in finished_requests(threads, before, merged.work)
    ]


def _with_work(merged: SummaryT, segment: Segment, spec: SchemaSpec) -> SummaryT:
    """``merged`` with the segment's planning tool calls applied to its work ledger."""
    work = merge_work(merged.work, segment, spec.planning_tools)
    return merged if work is merged.work else merged.model_copy(update={"work": work})


def compact_files(
    artifacts: Sequence[Artifact],
    live: Sequence[Item],
    *,
    budget: int,
    room: int,
    count: Callable[[str], int],
    dropped: Sequence[Item] = (),
) -> tuple[list[str], list[Item], int] | None:
    """Compact file lines for the trail's files old and new, when one line per file does not fit.

    ``live`` is the files field; its trail file lines (one file each, or compact) are merged with
    the segment's file artifacts, the newer state winning. Returns None when there are no new files,
    or when one line per file fits (the new lines in this compaction's ``room``, all in ``budget``
    tokens) and no compact line exists yet. Else ``(lines, items they replace, token growth)``: the
    lines (`progsum.judge._pathlist.lines`) fit ``budget`` and grow the field by at most ``room``,
    read-only files leaving first, then the oldest changed ones. Paths that a compact line cannot
    hold (`progsum.judge._pathlist.compactable`) keep their own lines. ``dropped``: trail file lines
    the header budget dropped lately (`_dropped`); their files are listed again, as the oldest, and
    they also call for compact lines.
    """
    new = [a for a in artifacts if _listable(a)]
    apart = {a.key for a in artifacts if a.kind == "files" and not _listable(a)}
    if not new:
        return None
    old: list[tuple[Item, dict[str, str]]] = []
    for item in live:
        parsed = parse(item.text) if _trailed(item) else None
        if parsed is not None and all(compactable(path) for path in parsed):
            old.append((item, parsed))
    fresh = {a.key for a in new}
    added = sum(count(a.text) + ITEM_OVERHEAD for a in new)
    per_file = added + sum(
        count(item.text) + ITEM_OVERHEAD
        for item, paths in old
        if file_line(item.text) is None or not paths.keys() <= fresh
    )
    grouped = any(file_line(item.text) is None for item, _ in old)
    lost = [
        (item, {p: s for p, s in (parse(item.text) or {}).items() if compactable(p)})
        for item in dropped
    ]
    if not grouped and not lost and per_file <= budget and added <= room:
        return None
    recency: dict[str, tuple[int, int]] = {}  # path → (changed, when); lowest leaves first
    states: dict[str, str] = {}
    for item, paths in [*lost, *old]:
        for path, state in paths.items():
            states[path] = state
            recency[path] = (state != "read", item.source[0])
    for a in new:
        state = a.value.partition(" ")[0]
        states[a.key] = state
        recency[a.key] = (state != "read", a.at)
    for path in apart:  # its newer state has a line of its own (a reverted edit)
        states.pop(path, None)
    order = sorted(states, key=lambda p: recency[p])
    before = sum(count(item.text) + ITEM_OVERHEAD for item, _ in old)
    limit = min(budget, before + room)
    written = lines(states)
    while order and sum(count(line) + ITEM_OVERHEAD for line in written) > limit:
        del states[order.pop(0)]
        written = lines(states)
    after = sum(count(line) + ITEM_OVERHEAD for line in written)
    return written, [item for item, _ in old], after - before


def _listable(artifact: Artifact) -> bool:
    """A file artifact a compact line can hold: a plain path in a state `lines` writes."""
    state = artifact.value.partition(" ")[0]
    return artifact.kind == "files" and compactable(artifact.key) and state in STATES


def grouped_ids(
    artifacts: Sequence[Artifact], spec: SchemaSpec, merged: BaseSummary
) -> list[Artifact]:
    """``artifacts`` with ids of one kind and the same state on one line, new ids only.

    ``reservation_id 2FBBAH, BOH180, EQ1G6C: returned by get_user_details`` costs a third of
    three lines. An id its field already carries verbatim is left out. Keys stay within
    `MAX_KEY_CHARS`; more ids start another line.
    """
    groups: dict[tuple[str, str, int], list[Artifact]] = {}
    others: list[Artifact] = []
    carried: dict[str, str] = {}
    for a in artifacts:
        if a.kind != "identifiers":
            others.append(a)
            continue
        target = target_field(spec, a.kind)
        if target is None:
            continue
        if target.name not in carried:
            carried[target.name] = "\n".join(item.text for item in getattr(merged, target.name))
        kind, _, value = a.key.partition(" ")
        if value and value in carried[target.name]:
            continue
        groups.setdefault((kind, a.value, a.rank), []).append(a)
    for (kind, state, rank), members in groups.items():
        line: list[Artifact] = []
        ending: list[Artifact | None] = [*members, None]
        for member in ending:
            ids = [m.key.partition(" ")[2] for m in (*line, member) if m is not None]
            if line and (member is None or len(f"{kind} {', '.join(ids)}") > MAX_KEY_CHARS):
                values = ", ".join(m.key.partition(" ")[2] for m in line)
                at = max(m.at for m in line)
                others.append(Artifact("identifiers", f"{kind} {values}", state, at, rank))
                line = []
            if member is not None:
                line.append(member)
    return others


HEADER_TEXT = 80
"""Estimated tokens of the header's own text (title, preamble, section headings)."""


def _file_room(
    merged: BaseSummary, spec: SchemaSpec, limit: int, files: str, count: Callable[[str], int]
) -> int:
    """Estimated tokens the compact file lines may take: what consolidation cannot take back.

    ``limit`` is on the counted scale (estimates times the safety margin). Compact lines of changed
    files are dropped after every other non-binding item (`progsum.contract._artifacts.weight`), so
    they may use the header less its own text and the items consolidation keeps whatever happens:
    binding items and the user's own sentences.
    """
    kept = sum(
        count(item.text) + ITEM_OVERHEAD
        for f in spec.lists
        if f.name != files
        for item in getattr(merged, f.name)
        if f.binding or item.author == "user"
    )
    return max(0, int(limit / DEFAULT_SAFETY_MARGIN) - HEADER_TEXT - kept)


RECENT_TOMBSTONES = 64
"""How far back `_dropped` looks among the retired items, so the look stays O(1) per compaction."""
_REPLACED = ("superseded", "merged into the compact file list")


def _dropped(retired: Sequence[Tombstone], name: str) -> list[Item]:
    """Trail file lines of field ``name`` the header budget dropped, newest tombstones only.

    The look stops at the most recent compact rewrite, which already listed what was dropped
    before it.
    """
    found: list[Item] = []
    for tombstone in reversed(retired[-RECENT_TOMBSTONES:]):
        if tombstone.field != name or not _trailed(tombstone.item):
            continue
        if tombstone.reason.startswith(_REPLACED[1]):
            break
        if not tombstone.reason.startswith(_REPLACED) and parse(tombstone.item.text) is not None:
            found.append(tombstone.item)
    return found[::-1]


def _trailed(item: Item) -> bool:
    """An item the trail wrote (extracted from tool output, not a user's sentence)."""
    return item.origin == "extracted" and item.author == "tool"


_KEY_END = ": "
"""What follows an entry's key in its line (``billing/invoice.py: modified (Edit)``)."""


class _Live:
    """A field's live items, indexed by line and by key: a new artifact is a lookup, not a scan.

    An item is under a key when its case-folded text starts with the key and `_KEY_END`; every
    such prefix of an item is indexed (keys may hold ``": "`` themselves), up to the longest a
    key may be.
    """

    __slots__ = ("_lines", "_others", "_prose", "_trailed")

    def __init__(self, items: Sequence[Item]) -> None:
        self._lines = {normalise(item.text) for item in items}
        self._trailed: dict[str, list[Item]] = {}
        self._others: set[str] = set()
        prose: list[str] = []
        for item in items:
            trailed = _trailed(item)
            if not trailed:
                prose.append(item.text)
            for prefix in _prefixes(item.text):
                if trailed:
                    self._trailed.setdefault(prefix, []).append(item)
                else:
                    self._others.add(prefix)
        self._prose = "\n".join(prose)

    def covers(self, artifact: Artifact) -> bool:
        """Whether the field already says it: the line, a summarizer's item under its key, its id.

        A model's ``billing/invoice.py: total() now truncates`` tells more than the trail's
        ``billing/invoice.py: modified (Edit)``, so the trail does not replace it.
        """
        if normalise(artifact.text) in self._lines or artifact.key.casefold() in self._others:
            return True
        if artifact.kind != "identifiers":
            return False
        value = artifact.key.rpartition(" ")[2]
        return bool(value) and value in self._prose

    def trailed_under(self, key: str) -> list[Item]:
        """The trail's own items under ``key``, oldest first."""
        return self._trailed.get(key.casefold(), [])


def _prefixes(text: str) -> set[str]:
    """Each case-folded prefix of ``text`` that `_KEY_END` follows, as long as a key may be."""
    folded = text.casefold()
    found: set[str] = set()
    at = folded.find(_KEY_END)
    limit = 3 * MAX_KEY_CHARS  # case folding may lengthen a key (ß: ss)
    while 0 <= at <= limit:
        found.add(folded[:at])
        at = folded.find(_KEY_END, at + 1)
    return found


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
