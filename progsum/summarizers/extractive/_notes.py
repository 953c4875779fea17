"""Joined notes: the notes of one speaker and day in one update become one item.

Each note is written by `progsum.judge._notes` from one sentence; here the chosen notes of a field
that share a label are joined under it, at most `GROUP_CHARS` characters of bodies per item.
"""

from __future__ import annotations

from collections.abc import Sequence

from progsum.judge._notes import SEPARATOR, joined
from progsum.summarizers.extractive._candidates import Candidate
from progsum.summarizers.extractive._selection import size
from progsum.summary._update import NewItem

__all__ = ["GROUP_CHARS", "grouped"]

GROUP_CHARS = 1_000
"""Characters of note bodies one joined note holds at most (about a paragraph). Joined notes of a
segment's speaker read as one note and cost one id and label; on MSC at the same final size
(bench/retention.py, 30 streams) caps of 300, 600 and none kept 2.25/1.60/1.48x, 2.31/1.67/1.63x
and 2.32/1.76/1.82x truncation at 2k/4k/8k, so the cap only bounds a very long segment."""


def grouped(chosen: Sequence[Candidate]) -> list[NewItem]:
    """The field's new items: notes of one label (speaker and day) joined into one, in order.

    ``Speaker 1: has a jeep; works in marketing`` says two facts for one label; a note's
    provenance is its message, a joined note's the segment (``at=None``).
    """
    items: list[NewItem] = []
    groups: dict[str, list[list[Candidate]]] = {}
    for candidate in chosen:
        if candidate.label:
            runs = groups.setdefault(candidate.label, [[]])
            if runs[-1] and sum(size(c) for c in runs[-1]) + size(candidate) > GROUP_CHARS:
                runs.append([])
            runs[-1].append(candidate)
    done: set[int] = set()
    for candidate in chosen:
        label = candidate.label
        if not label:
            items.append(NewItem(text=candidate.text, at=candidate.at, origin="extracted"))
            continue
        group = next(run for run in groups[label] if candidate in run)
        if id(group) in done:
            continue
        done.add(id(group))
        at = {c.at for c in group}
        text = joined(label, SEPARATOR.join(c.text for c in group))
        items.append(NewItem(text=text, at=at.pop() if len(at) == 1 else None, origin="extracted"))
    return items
