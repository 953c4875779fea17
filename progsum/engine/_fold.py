"""The fold: a summary update held to the contract, merged, and the state that replaces the segment.

Pure. In order: the binding contract (`progsum.contract._enforce`: provenance, evidence, the
binding budget), the typed merge, the prohibition guard, the artifact trail, and the value
ledger (every value the user stated is still carried, or the user's sentence comes back). A
summary that would not free tokens is refused (a ``not_smaller`` stall that says when it asks
again). The driver archives the folded segment before it returns the new state; with an archive,
the event says its segment is there (``in_archive``, which the archive stage clears if the write
fails), so the header measured here is the one that names the archive.
"""

from __future__ import annotations

from typing import Any

from progsum.contract._enforce import enforce, reopened
from progsum.contract._guards import guard_prohibitions
from progsum.contract._ledger import entries, keys
from progsum.contract._trail import merge_trail
from progsum.engine._config import Config
from progsum.engine._measure import count, target_tokens
from progsum.engine._plan import Plan, stall
from progsum.engine._values import binding_room, item_cost, keep_values
from progsum.engine._window import overflow
from progsum.judge._extract import message_text
from progsum.judge._values import StatedValue, value_key
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.summary._merge import MergeReport, merge
from progsum.summary._request import SummaryRequest
from progsum.summary._schema import BaseSummary, spec_of
from progsum.summary._schema import SummaryT as S
from progsum.summary._update import SummaryUpdate

__all__ = ["fold", "merged"]


def merged(
    config: Config[S], request: SummaryRequest[S], update: SummaryUpdate, number: int
) -> tuple[S, MergeReport, tuple[str, ...]]:
    """Hold the update to the binding contract, merge it, then apply the guard and the trail."""
    prior = request.prior
    measure = config.counter.count_text
    verdict = enforce(request, update, binding_room=binding_room(config, prior), count=measure)
    segment = request.segment
    summary, report = merge(
        prior,
        verdict.update,
        source=(segment.start, segment.end),
        compaction=number,
        reopened=lambda item: reopened(item, segment),
    )
    report = report.model_copy(
        update={
            "rejected": verdict.rejected,
            "demoted": verdict.demoted,
            "refused": (*verdict.refused, *report.refused),
            "duplicates": (*report.duplicates, *verdict.duplicates),
        }
    )
    summary, report, extracted = guard_prohibitions(
        request,
        summary,
        report,
        number,
        room=binding_room(config, summary),
        cost=lambda text: item_cost(config, text),
    )
    summary, report = merge_trail(
        segment,
        summary,
        report,
        number,
        header_limit=config.policy.header_limit,
        count=measure,
    )
    return summary, report, extracted


def fold(config: Config[S], plan: Plan[S], update: SummaryUpdate) -> ConversationState[S]:
    """The state with the plan's segment folded into the summary, or a ``not_smaller`` stall."""
    state = plan.state
    segment = plan.request.segment
    number = len(state.events) + 1
    summary, report, extracted = merged(config, plan.request, update, number)
    ledger = _released(
        (*state.ledger, *entries(segment, plan.request.extraction)), plan.request.prior, report
    )
    pinned = state.log[plan.pinned[0] : plan.pinned[1]] if plan.pinned else []
    kept = [
        message_text(m) for m in (*state.log[: plan.head_end], *pinned, *state.log[segment.end :])
    ]
    summary, report, unplaced = keep_values(config, state, summary, report, ledger, kept, number)
    decision = plan.decision
    event = CompactionEvent(
        number=number,
        outcome="compacted",
        at=config.clock(),
        reason="forced" if plan.forced else decision.reason,
        tokens_before=decision.tokens,
        tokens_after=decision.tokens,
        method=decision.method,
        folded=(segment.start, segment.end),
        forced=plan.forced,
        degraded=update.degraded is not None,
        degraded_reason=update.degraded,
        usage=update.usage,
        merge=report,
        in_archive=config.archived,  # the driver writes it before returning; measured with it
    )

    def placed(event: CompactionEvent) -> ConversationState[S]:
        return state.record(
            event,
            summary=summary,
            cutoff=segment.end,
            head_end=plan.head_end,
            ledger=ledger,
            pinned=plan.pinned,
        )

    compacted = placed(event)
    tokens_after, _ = count(config, compacted)
    if tokens_after >= decision.tokens:
        return _not_smaller(config, plan, compacted, event, tokens_after)
    final = event.model_copy(
        update={
            "tokens_after": tokens_after,
            "reason": _reason(config, plan, event.reason, tokens_after),
            "extracted": extracted,
            "missing_values": tuple(dict.fromkeys(e.value for e in unplaced)),
            "pinned": plan.pinned,
            "over_window": overflow(config, compacted),
        }
    )
    return placed(final)


def _reason(config: Config[Any], plan: Plan[Any], reason: str, tokens_after: int) -> str:
    """The compacted event's reason, with what stays large and what stays in view."""
    if tokens_after > target_tokens(config):
        reason += (
            f"; {tokens_after:,} tokens remain, above the target, because the kept first "
            "message and verbatim tail are large"
        )
    if plan.narrowed:
        reason += (
            "; the tail fitted to the target began inside a tool round, so it is the newest "
            "round and the completed rounds before it are folded"
        )
    if plan.pinned is not None:
        reason += (
            f"; the opening round of the tool cycle (messages {plan.pinned[0] + 1}-"
            f"{plan.pinned[1]}) stays in view so the turn keeps its thinking"
        )
    return reason


def _not_smaller(
    config: Config[S],
    plan: Plan[S],
    compacted: ConversationState[S],
    event: CompactionEvent,
    tokens_after: int,
) -> ConversationState[S]:
    """The refusal of a summary that frees nothing: keep the previous one, ask again later."""
    state = plan.state
    segment = plan.request.segment
    decision = plan.decision
    totals = state.running_totals(config.counter)
    folded = totals[segment.end] - totals[segment.start]
    growth = compacted.header_tokens(config.counter) - state.header_tokens(config.counter)
    retry_at = 2 * max(folded, growth)
    return stall(
        config,
        state,
        decision,
        plan.forced,
        "not_smaller",
        lambda: (
            f"the new summary would not be smaller than the {len(segment)} messages it "
            f"replaces ({decision.tokens:,} tokens before, {tokens_after:,} after); kept "
            "the previous summary, and will ask again once the segment holds "
            f"~{retry_at:,} tokens"
        ),
        usage=event.usage,
        retry_at_tokens=retry_at,
        degraded=plan.waiting,  # the stand-in's own refusal: it is not tried again
    )


def _released(
    ledger: tuple[StatedValue, ...], prior: BaseSummary, report: MergeReport
) -> tuple[StatedValue, ...]:
    """The ledger without the values of binding items the user reopened in this merge.

    A binding item leaves only on the user's word (`progsum.contract`); the values it took from
    the messages it cites are then released. Values of other retired items stay guarded, and so
    does the same value stated in any other message.
    """
    gone = {*report.retired, *report.superseded}
    spec = spec_of(type(prior))
    reopened_items = [
        item for f in spec.binding for item in getattr(prior, f.name) if item.id in gone
    ]
    if not reopened_items:
        return ledger
    released = {
        (at, key)
        for item in reopened_items
        for key in keys(item.text)
        for at in (item.cites or range(*item.source))
    }
    return tuple(
        e
        for e in ledger
        if not any((e.at, key) in released for key in (e.value, value_key(e.value)))
    )
