"""Summarizing a segment too large for one request: split it in order, then combine the updates.

Some models bill a request whose prompt passes a size threshold at a higher rate on every token of
it (Claude Haiku 5.5: 5x above 100,000 tokens). A summarizer then folds the segment in chunks that
stay under the threshold: each chunk is summarized against the summary as the earlier chunks left
it (`advance`), and `combine` turns the result into one update of the original prior summary, so
the engine merges, guards and records one compaction. Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from progsum.judge._extract import preceding_prose
from progsum.messages._formats import is_safe_cut
from progsum.summary._merge import merge
from progsum.summary._request import Segment, SummaryRequest
from progsum.summary._schema import BaseSummary, SummaryT, spec_of
from progsum.summary._update import NewItem, Retirement, SummarizerUsage, SummaryUpdate

__all__ = ["advance", "chunk_bounds", "combine", "sub_request"]


def chunk_bounds(segment: Segment, costs: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """Log ranges ``[start, end)`` covering ``segment`` in order, each costing at most ``budget``.

    A chunk ends before the message that would take it over budget, moved back to the nearest
    cut that keeps tool calls with their results (`progsum.messages._formats.is_safe_cut`) when one
    exists in the chunk; a single message over budget is a chunk of its own.

    Args:
        segment: The segment to split.
        costs: Estimated prompt tokens of each message of the segment.
        budget: Most tokens of messages one chunk may hold.
    """
    bounds: list[tuple[int, int]] = []
    first, total = 0, 0
    for j, cost in enumerate(costs):
        if j > first and total + cost > budget:
            cut = j
            while cut > first + 1 and not is_safe_cut(segment.infos, cut):
                cut -= 1
            if not is_safe_cut(segment.infos, cut):
                cut = j  # no safe cut in the chunk: a hard cut beats a request over budget
            bounds.append((segment.start + first, segment.start + cut))
            first, total = cut, sum(costs[cut:j])
        total += cost
    bounds.append((segment.start + first, segment.end))
    return bounds


def sub_request(
    request: SummaryRequest[SummaryT], bounds: tuple[int, int], prior: SummaryT
) -> SummaryRequest[SummaryT]:
    """The request for the messages of ``request`` in log range ``bounds``, against ``prior``."""
    start, end = bounds
    segment = request.segment
    first, last = start - segment.start, end - segment.start
    part = Segment(
        start=start,
        messages=segment.messages[first:last],
        infos=segment.infos[first:last],
        format=segment.format,
        authors=segment.authors[first:last],
        days=segment.days[first:last],
        previous=preceding_prose(segment.messages, segment.infos, segment.authors, first)
        if first
        else segment.previous,
    )
    return SummaryRequest.for_segment(
        prior=prior, segment=part, schema=request.schema, head=request.head
    )


def advance(prior: SummaryT, update: SummaryUpdate, bounds: tuple[int, int]) -> SummaryT:
    """The summary after one chunk's update: what the next chunk is summarized against."""
    return merge(prior, update, source=bounds, compaction=0)[0]


def combine(
    prior: BaseSummary,
    final: BaseSummary,
    usages: Sequence[SummarizerUsage | None],
    bounds: Sequence[tuple[int, int]],
) -> SummaryUpdate:
    """One update taking ``prior`` to ``final`` (the summary after every chunk), in order.

    Items the chunks added and later chunks kept are added (a single-message provenance stays
    with them); prior items the chunks retired are retired with the chunk's reason; usage is the
    sum of the chunk calls, with the chunks' log ranges recorded.
    """
    spec = spec_of(type(prior))
    prior_ids = {item.id for f in spec.lists for item in getattr(prior, f.name)}
    add: dict[str, tuple[str | NewItem, ...]] = {}
    for f in spec.lists:
        new = tuple(
            NewItem(text=item.text, at=_single(item.source), origin=item.origin)
            for item in getattr(final, f.name)
            if item.id not in prior_ids
        )
        if new:
            add[f.name] = new
    earlier = {t.item.id for t in prior.retired}
    retire = tuple(
        Retirement(id=t.item.id, reason=t.reason)
        for t in final.retired
        if t.item.id in prior_ids and t.item.id not in earlier
    )
    objective: Any = None
    if spec.objective is not None:
        before, after = getattr(prior, spec.objective.name), getattr(final, spec.objective.name)
        objective = after if after != before else None
    total: SummarizerUsage | None = None
    for usage in usages:
        if usage is not None:
            total = usage if total is None else total + usage
    if total is not None:
        total = total.model_copy(update={"chunks": tuple(bounds)})
    return SummaryUpdate(objective=objective, add=add, retire=retire, usage=total)


def _single(source: tuple[int, int]) -> int | None:
    start, end = source
    return start if end - start == 1 else None
