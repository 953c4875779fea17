"""The consolidate stage: right after a compaction, a header over its budget is brought back under.

The summarizer's proposal (if it consolidates) is screened and merged, then the least salient
loose items are dropped while the header is over budget (`progsum.contract._consolidation`),
the last carriers of values the user stated kept. When the header is still over budget and the
context over the compaction's target, those carriers go too where recall would bring their
values back (`progsum.engine._recall.recallable`); when the context would still be at the
trigger, the window outranks the ledger and any value only loose items carry may go. The values
leave the header and the ledger for the archive, and the event names them. Runs once per
compaction, so it never loops; binding items are never touched.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from progsum.contract._consolidation import in_order, retire_parts, screen
from progsum.contract._ledger import carrier_items, carrier_notes, carriers
from progsum.engine._config import Config
from progsum.engine._measure import count, counted, target_tokens
from progsum.engine._recall import recallable
from progsum.engine._values import keep_values, kept_prose
from progsum.engine._window import header_room
from progsum.judge._extract import message_text
from progsum.judge._notes import SEPARATOR, split_note
from progsum.judge._values import carried
from progsum.policy._policy import WINDOW_GUARD
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.summary._merge import MergeReport, live_items, merge
from progsum.summary._request import ConsolidationRequest
from progsum.summary._schema import BaseSummary, Item, spec_of
from progsum.summary._schema import SummaryT as S
from progsum.summary._update import SummaryUpdate

__all__ = ["consolidate", "consolidation"]


def consolidation(config: Config[S], state: ConversationState[S]) -> ConsolidationRequest[S] | None:
    """The consolidation due, if any: the header over its budget right after a compaction.

    Also whenever the context has reached the window's guard (`WINDOW_GUARD` of the input
    window) while the kept first message and the newest tool round leave the header some room
    (`header_room`): the window outranks the header budget, after a compaction or not (a round
    of many parallel calls can leave the header less room than its budget), and the header is
    brought down until the context is back at the trigger.
    """
    budget = config.policy.header_limit
    summary = state.summary
    if budget is None or summary is None:
        return None
    compacted = bool(state.events) and state.events[-1].outcome == "compacted"
    window = config.policy.input_window
    total = count(config, state)[0]
    near = window is not None and total >= math.floor(window * WINDOW_GUARD)
    if not (compacted or near):
        return None
    tokens = counted(config, state, state.header_tokens(config.counter))
    room = header_room(config, state) if near else None
    if room is not None and room > 0:  # else the first message and round alone are over
        goal = config.policy.trigger_limit if config.policy.unit == "tokens" else room
        budget = min(budget, max(1, tokens - (total - min(goal, room))))
    if tokens <= budget:
        return None
    return ConsolidationRequest(summary=summary, schema=config.schema, budget=budget, tokens=tokens)


def consolidate(
    config: Config[S],
    state: ConversationState[S],
    request: ConsolidationRequest[S],
    proposal: SummaryUpdate | None,
    failure: str | None,
) -> ConversationState[S]:
    """Merge the screened proposal, then drop the least salient loose items while over budget."""
    number = len(state.events) + 1
    summary, report = _proposed(state, request.summary, proposal, number)
    limit = config.policy.header_limit
    compacted = bool(state.events) and state.events[-1].outcome == "compacted"
    if limit is not None and request.budget < limit:
        over = (
            f"the {request.budget:,} the window leaves it beside the kept first message and "
            "the newest tool round"
        )
    elif compacted:
        over = f"its budget of {request.budget:,}"
    else:  # a due turn that folded nothing: the context is at the window's guard
        over = (
            f"its budget of {request.budget:,}, in a turn that folded nothing, the context being "
            f"at the window's guard: the window leaves it less room than the {request.tokens:,} "
            "it takes"
        )
    reason = (
        f"the summary header took {request.tokens:,} tokens, over {over}; the least salient "
        "non-binding items go first"
    )
    kept = kept_prose(state)
    held = carriers(None, kept, state.ledger)
    ledger = [e for e in state.ledger if e.value not in held]
    summary, dropped = _dropped(config, state, summary, ledger, request.budget, reason, number)
    summary, ledger, tiers, more = _released(
        config, state, summary, ledger, (reason, number, request.budget)
    )
    released = frozenset().union(*tiers)
    dropped += more
    guarded = tuple(e for e in state.ledger if e.value not in released)
    summary, report, _ = keep_values(config, state, summary, report, guarded, kept, number)
    report = report.model_copy(update={"archived_values": tuple(sorted(released))})
    probe = state.record(None, summary=summary)
    header = counted(config, probe, probe.header_tokens(config.counter))
    before, method = count(config, state)
    after, _ = count(config, probe)
    how = "the summarizer condensed it" if proposal is not None else "no model consolidation"
    if failure is not None:
        how = f"the summarizer's consolidation failed ({failure})"
    over = _still_over(summary, ledger) if header > request.budget else ""
    if failure is None and proposal is not None and proposal.degraded:
        failure = proposal.degraded  # a fallback member consolidated after the primary failed
    event = CompactionEvent(
        number=number,
        outcome="consolidated",
        at=config.clock(),
        reason=f"{reason}: {how}, {len(dropped)} least telling item(s) dropped or shortened"
        f"{_left(*tiers)}, header now {header:,} tokens{over}",
        tokens_before=before,
        tokens_after=after,
        method=method,
        degraded=failure is not None,
        degraded_reason=failure,
        usage=proposal.usage if proposal is not None else None,
        merge=report.model_copy(update={"dropped": (*report.dropped, *dropped)}),
    )
    return state.record(event, summary=summary, ledger=guarded if released else None)


def _released(
    config: Config[S],
    state: ConversationState[S],
    summary: S,
    ledger: list[Any],
    drop: tuple[str, int, int],
) -> tuple[S, list[Any], tuple[frozenset[str], frozenset[str]], list[str]]:
    """Still over budget and over the compaction's target: the carriers of stated values go too.

    They go until the context is back at the target (or the header within budget): without this
    the header of a long chat full of stated values only grows, the context stays near the
    trigger and every turn or two compacts again, or it outgrows the window. First the values
    recall returns for a question naming their subject (`progsum.engine._recall.recallable`),
    once the context is over the target; then, when the context would still be at the trigger
    (due again at once, and nearer the window with each value stated), any other value a loose
    item carries: the window outranks the ledger. Such a value stays in the archive and the log,
    where the recall tool finds its message, and the event names it. Binding items are never
    dropped, so a value one carries stays; they keep within their own budget (past it a rule is
    kept as a fact: `progsum.engine._values.keep_values`). Returns the summary, the ledger that
    still guards, the values that left the header (those recall returns, then the others), and
    the ids dropped. ``drop`` is the drop's reason, the event's number and the header's budget.
    """
    policy = config.policy
    reason, number, budget = drop
    if policy.unit != "tokens":
        return summary, ledger, (frozenset(), frozenset()), []
    left: list[frozenset[str]] = []
    dropped: list[str] = []
    tiers = (
        (target_tokens(config), lambda: recallable(config, state, ledger)),
        (policy.trigger_limit, lambda: frozenset(e.value for e in ledger)),
    )
    kept = kept_prose(state)
    for start, tier in tiers:
        # measured as the event will carry it: values the drops lost come back as sentences
        restored, _, _ = keep_values(config, state, summary, MergeReport(), ledger, kept, number)
        probe = state.record(None, summary=restored)
        header = counted(config, probe, probe.header_tokens(config.counter))
        tokens = count(config, probe)[0]
        free = tier() if header > budget and tokens >= start else frozenset()
        guarding = [e for e in ledger if e.value not in free]
        if not free:
            left.append(frozenset())
            continue
        goal = max(budget, header - (tokens - target_tokens(config)))
        summary, more = _dropped(config, state, summary, guarding, goal, reason, number)
        dropped += more
        still = carriers(summary, kept, ledger)
        left.append(frozenset(v for v in free if not carried(v, still)))
        ledger = [e for e in ledger if e.value not in left[-1]]
    return summary, ledger, (left[0], left[1]), dropped


def _proposed(
    state: ConversationState[S], summary: S, proposal: SummaryUpdate | None, number: int
) -> tuple[S, MergeReport]:
    """The summary with the screened part of the summarizer's proposal merged."""
    if proposal is None:
        return summary, MergeReport()
    screened, refused = screen(summary, proposal)
    retired = {r.id for r in screened.retire}
    spans = [item.source for item in _items(summary) if item.id in retired]
    source = (
        (min(s[0] for s in spans), max(s[1] for s in spans))
        if spans
        else (state.head_end, state.cutoff)
    )
    summary, report = merge(summary, screened, source=source, compaction=number)
    return summary, report.model_copy(update={"refused": (*refused, *report.refused)})


def _dropped(  # noqa: PLR0917 - the drop loop's inputs
    config: Config[S],
    state: ConversationState[S],
    summary: S,
    ledger: list[Any],
    budget: int,
    reason: str,
    number: int,
) -> tuple[S, list[str]]:
    """The summary after retiring its least telling loose parts while its header is over ``budget``.

    In `in_order`'s order: a joined note loses its least telling notes one at a time, and
    each item that changes is retired once, whole, however many of its notes went
    (`retire_parts`). The last carrier of a value in ``ledger`` keeps the notes that carry it
    (`carrier_notes`); its other notes may go. Returns the summary and the ids retired or
    shortened.

    The cut is the shortest prefix of that order whose header fits, found by doubling the prefix
    and then halving the gap (`_shortest`): the header is rendered and counted some 2·log₂ n
    times for n parts cut, not n times. With a counter that may count more after text is removed
    (no built-in one does), the prefix found fits and one part fewer did not.
    """
    base = summary
    holding = carrier_notes(summary, ledger)
    parts = in_order(base, whole=_quoted(state, summary), holding=holding)
    taken: list[tuple[str, int | None]] = []

    def available(k: int) -> int:
        """Parts taken from `in_order` after asking for ``k``: ``k``, or all there are."""
        while len(taken) < k and (part := next(parts, None)) is not None:
            taken.append(part)
        return min(k, len(taken))

    def cut_by(k: int) -> tuple[S, dict[str, frozenset[int] | None]]:
        cut: dict[str, frozenset[int] | None] = {}
        for item_id, note in taken[:k]:
            cut[item_id] = None if note is None else (cut.get(item_id) or frozenset()) | {note}
        return retire_parts(base, cut, reason=reason, compaction=number)[0], cut

    def fits(k: int) -> bool:
        probe = state.record(None, summary=cut_by(k)[0])
        return counted(config, probe, probe.header_tokens(config.counter)) <= budget

    summary, cut = cut_by(_shortest(fits, available))
    return summary, list(cut)


def _shortest(fits: Callable[[int], bool], available: Callable[[int], int]) -> int:
    """The fewest parts to cut so that the header fits: ``k`` with ``fits(k)`` and not ``k - 1``.

    Tries 0, 1, 3, 7, ... parts (each step doubles), then halves the gap between the last prefix
    over budget and the first that fits. ``available(k)`` is ``k``, or the number of parts there
    are when fewer: with all of them cut and the header still over, that number.
    """
    if fits(0):
        return 0
    low, step = 0, 1  # `low` parts cut, the header still over
    while True:
        high = available(low + step)
        if high == low:
            return low
        if fits(high):
            break
        low, step = high, step * 2
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle
    return high


def _quoted(state: ConversationState[S], summary: S) -> frozenset[str]:
    """Ids of the loose items that quote a message they cite word for word: they go only whole.

    The ledger and the guards restore a person's sentence as it was said, and a sentence may
    hold "; ", which joins the offline summarizer's notes; cutting it there would misquote it.
    """
    found = set()
    for f in spec_of(type(summary)).lists:
        for item in getattr(summary, f.name):
            if f.binding or not item.cites or item.origin != "extracted":
                continue
            _, notes = split_note(item.text)
            body = SEPARATOR.join(notes)
            if len(notes) > 1 and any(
                0 <= at < len(state.log) and body in message_text(state.log[at])
                for at in item.cites
            ):
                found.add(item.id)
    return frozenset(found)


def _left(recalled: frozenset[str], forced: frozenset[str]) -> str:
    """The reason's words for the values that left the header for the archive."""
    words = ""
    if recalled:
        words += (
            f", {len(recalled)} value(s) the user stated left for the archive "
            f"({_some(recalled)}: recall returns their sentences)"
        )
    if forced:
        words += (
            f", {len(forced)} {'more ' if recalled else ''}value(s) the user stated left for "
            f"the archive because the window has no room for them ({_some(forced)}: the recall "
            "tool finds their messages)"
        )
    return words


def _some(values: frozenset[str]) -> str:
    """A few of ``values``, sorted, for a reason."""
    return ", ".join(sorted(values)[:3]) + (", ..." if len(values) > 3 else "")  # noqa: PLR2004


def _still_over(summary: BaseSummary, ledger: list[Any]) -> str:
    """Why the header stays over budget: binding items, and the value ledger's last carriers."""
    spec = spec_of(type(summary))
    loose = {i.id for f in spec.lists if not f.binding for i in getattr(summary, f.name)}
    carried = carrier_items(summary, ledger) & loose
    if carried:
        return (
            f"; binding items and {len(carried)} last carrier(s) of values the user stated "
            "(kept by the value ledger) alone exceed the budget"
        )
    return "; binding items alone exceed the budget"


def _items(summary: BaseSummary) -> list[Item]:
    return [item for items in live_items(summary).values() for item in items]
