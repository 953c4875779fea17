"""The compaction engine, run once per turn: measure, trigger?, split, summarize, merge, new state.

`Compactor` bundles a policy, a schema, a summarizer and a token counter. Planning and applying are
pure; only the summarizer call in between does I/O, so the sync and async paths share everything
else. When nothing is due, ``maybe_compact`` returns the very same state object.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, NamedTuple, cast

from progsum.contract.enforce import ITEM_OVERHEAD, enforce, reopened
from progsum.contract.guards import guard_prohibitions
from progsum.contract.ledger import carrier_items, carriers, entries, lost, restore
from progsum.contract.trail import merge_trail
from progsum.engine.consolidate import drop_oldest, screen
from progsum.engine.cut import Cut, head_end, plan_cut, tail_start
from progsum.engine.reduce import Reduction
from progsum.engine.reduce import clip as clip_blocks
from progsum.engine.reduce import plan as plan_reduction
from progsum.errors import ArchiveError, ConfigError, ProgsumError, SummarizerError
from progsum.judge.extract import message_text
from progsum.judge.values import StatedValue, value_key, value_keys
from progsum.messages.formats import MessageInfo
from progsum.observe import EventHook, compaction_span, deferred, summarizer_span
from progsum.observe import observed as observe_events
from progsum.policy.policy import WINDOW_GUARD, Policy, Unit
from progsum.policy.tokens import HeuristicCounter, Method, TokenCounter, count_with_anchor
from progsum.policy.usage import DEFAULT_COST_ALERT, check_threshold
from progsum.state.cleared import Cleared
from progsum.state.conversation import CompactionEvent, ConversationState, StallKind
from progsum.store.archive import Archive
from progsum.summary.merge import MergeReport, empty, live_items, merge
from progsum.summary.request import (
    AsyncSummarizer,
    ConsolidationRequest,
    Segment,
    Summarizer,
    SummaryRequest,
    async_consolidator,
    call_async,
    checked_update,
    require_summarizer,
)
from progsum.summary.schema import BaseSummary, Item, Summary, spec_of
from progsum.summary.schema import SummaryT as S
from progsum.summary.update import SummaryUpdate

__all__ = ["Compactor", "Decision", "amaybe_compact", "maybe_compact"]


class Decision(NamedTuple):
    """The per-turn measurement and whether compaction is due."""

    due: bool
    """The trigger is reached."""
    unit: Unit
    """What the trigger counts."""
    measured: int
    """The counted figure in ``unit``."""
    limit: int
    """The trigger in ``unit``."""
    tokens: int
    """Counted context tokens (whatever the unit)."""
    method: Method
    """``anchored`` on the provider's last usage report, or ``estimated``."""
    messages: int
    """Messages in the effective context."""

    @property
    def reason(self) -> str:
        """One line: the figure, how it was counted, and the trigger."""
        how = f" ({self.method})" if self.unit == "tokens" else ""
        relation = "reached" if self.due else "is below"
        return f"{self.measured:,} {self.unit}{how} {relation} the trigger of {self.limit:,}"


@dataclass(frozen=True, slots=True)
class _Plan(Generic[S]):
    state: ConversationState[Any]
    decision: Decision
    forced: bool
    head_end: int
    request: SummaryRequest[S]
    pinned: tuple[int, int] | None = None
    waiting: bool = False
    """The last summary was refused as not smaller and the segment has not doubled since, but the
    context is near the window: fold extractively (degraded) instead of asking again."""


_DEFAULT_REDUCTION = Reduction()


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Compactor(Generic[S]):
    """Compacts a conversation when the policy says so, into a typed summary of ``schema``.

    Example:
        ``compactor = Compactor(policy=Policy(model="claude-sonnet-5-5"), summarizer=...)``
        then, each turn, ``state = compactor.maybe_compact(state)``.
    """

    def __init__(
        self,
        *,
        policy: Policy,
        summarizer: Summarizer | AsyncSummarizer | None = None,
        schema: type[S] = Summary,  # type: ignore[assignment]  # mypy cannot default a TypeVar-typed parameter
        counter: TokenCounter | None = None,
        clock: Callable[[], datetime] = _utc_now,
        reduction: Reduction | None = _DEFAULT_REDUCTION,
        archive: Archive | None = None,
        on_event: EventHook | None = None,
        cost_alert: float | None = DEFAULT_COST_ALERT,
    ) -> None:
        """Bundle a policy, a summarizer, a schema and a token counter.

        Args:
            policy: When to compact and how much to keep.
            summarizer: What folds a segment into the summary; default `default_summarizer()`
                (Claude with an extractive fallback when ``ANTHROPIC_API_KEY`` is set, else the
                offline extractive summarizer).
            schema: The summary schema (default `Summary`).
            counter: Token estimator (default `HeuristicCounter` scaled for ``policy.model``).
            clock: Source of event timestamps (UTC).
            reduction: Which old tool data to clear before any model call (`Reduction()`:
                results and inputs of 2,000+ characters outside the tail); None turns it off.
            archive: Where folded segments are written before the state that replaces them is
                returned (`progsum.store.sqlite.SQLiteStore`, `progsum.store.archive.MemoryArchive`); the
                state's ``thread_id`` names the conversation in it.
            on_event: Called with each new `CompactionEvent` once the state holding it is built
                (`progsum.observe`); if it raises, the error is logged and counted in
                ``hook_failures``, never raised into the agent loop.
            cost_alert: Summarization share of all reported tokens (the agent's ``usage=``
                reports and the summarizer's) at which an event carries a `CostAlert`, once per
                crossing (default 0.15); None turns it off.
        """
        if summarizer is None:
            from progsum.summarizers import default_summarizer  # noqa: PLC0415 - avoids a cycle

            summarizer = default_summarizer()
        if not isinstance(policy, Policy):
            raise ConfigError(f"policy={policy!r} is not a progsum.Policy; pass Policy(...)")
        if reduction is not None and not isinstance(reduction, Reduction):
            raise ConfigError(
                f"reduction={reduction!r} is not a progsum.engine.reduce.Reduction; pass Reduction(...) "
                "or None"
            )
        if archive is not None and not isinstance(archive, Archive):
            raise ConfigError(
                f"archive={archive!r} lacks the Archive methods put/get/search/events; pass a "
                "progsum.store.sqlite.SQLiteStore or progsum.store.archive.MemoryArchive"
            )
        require_summarizer(summarizer)
        spec_of(schema)
        self.summarizer = summarizer
        self.policy = policy
        self.schema = schema
        self.counter: TokenCounter = counter or HeuristicCounter.for_model(policy.model)
        self.clock = clock
        self.reduction = reduction
        self.archive = archive
        if on_event is not None and not callable(on_event):
            raise ConfigError(
                f"on_event={on_event!r} is not callable; pass a function taking a "
                "CompactionEvent, or None"
            )
        self.on_event = on_event
        self.cost_alert = check_threshold(cost_alert)
        self.hook_failures = 0
        """How many times ``on_event`` raised (each one logged on ``progsum.engine.compactor``)."""
        self._no_cut: tuple[object, int, int, int, tuple[Unit, int]] | None = None
        """The last `plan_cut` that found no cut: (info at the top scanned index, that index,
        low, head, keep). A later call on the same log prefix scans only above it."""
        self._unarchived_memo: (
            tuple[tuple[CompactionEvent, ...], tuple[CompactionEvent, ...]] | None
        ) = None
        """The events last read by `_unarchived`, and what it found in them."""

    # -- measure ---------------------------------------------------------------------------------

    def decide(self, state: ConversationState[Any]) -> Decision:
        """Measure the context and say whether compaction is due. O(new messages)."""
        policy = self.policy
        tokens, method = self._count(state)
        messages = state.effective_length
        unit = policy.unit
        count = tokens if unit == "tokens" else messages
        limit = policy.trigger_limit
        return Decision(count >= limit, unit, count, limit, tokens, method, messages)

    # -- compact ---------------------------------------------------------------------------------

    def maybe_compact(self, state: ConversationState[Any]) -> ConversationState[S]:
        """Compact if the policy says so; else return ``state`` itself.

        Never raises for a due-but-impossible compaction: the returned state records a
        ``stalled`` event saying why, and no second attempt is made in the same turn. With the
        policy's ``failure_backoff`` (the default), a failing summarizer or archive does not raise
        either: a ``failed`` event is recorded, the call is retried after 2, 4, 8, … turns, an
        extractive fold (degraded, repairable) keeps the context under the window meanwhile, and
        segments the archive refused stay in the state until it takes them.

        Raises:
            SummarizerError: the summarizer failed and ``failure_backoff`` is None; ``state`` is
                unchanged and still valid.
        """
        if isinstance(state, ConversationState) and (
            state.attempted_at == len(state) or self._quiet(state)
        ):
            return state  # at most one attempt per turn (invariant 8), or nothing to do
        guarded = self.policy.failure_backoff is not None
        return self._run(state, force=False, guarded=guarded)

    def _quiet(self, state: ConversationState[Any]) -> bool:
        """Whether this turn has nothing to do, decided without planning (most turns).

        Not due, no clipping at ingest, no archive attached (a refused segment may wait), and a
        summary of this compactor's schema (else planning raises the error).
        """
        reduction = self.reduction
        if self.archive is not None or (reduction is not None and reduction.clip_at_ingest):
            return False
        summary = state.summary
        if summary is not None and type(summary) is not self.schema:
            return False
        policy = self.policy
        if policy.unit == "messages":
            return state.effective_length < policy.trigger_limit
        estimate = state.estimate(self.counter)
        return count_with_anchor(state.anchor, estimate, policy.safety_margin)[0] < (
            policy.trigger_limit
        )

    def compact(
        self, state: ConversationState[Any], *, force: bool = False
    ) -> ConversationState[S]:
        """Like `maybe_compact`, but failures raise.

        With ``force=True``, compact now whatever the trigger says.

        Raises:
            SummarizerError: the summarizer failed; ``state`` is unchanged and still valid.
            ArchiveError: the archive write failed; ``state`` is unchanged and still valid.
        """
        return self._run(state, force=force, guarded=False)

    def _run(
        self, state: ConversationState[Any], *, force: bool, guarded: bool
    ) -> ConversationState[S]:
        plan = self._plan(state, force=force)
        if isinstance(plan, ConversationState):
            after = self._retry_archive(plan) if guarded else plan
            return after if after is state else self._observed(state, after, None)
        with compaction_span() as span:
            return self._observed(state, self._fold(plan, guarded=guarded), span)

    def _fold(self, plan: _Plan[S], *, guarded: bool) -> ConversationState[S]:
        summarizer = self.summarizer
        update: object = None
        if not (plan.waiting or (guarded and self._backing_off(plan.state, "summarizer"))):
            if not callable(getattr(summarizer, "summarize", None)):
                raise ConfigError(
                    f"{type(summarizer).__name__} is async-only; use await "
                    "compactor.amaybe_compact()"
                )
            try:
                with (
                    _summarizer_errors(summarizer, plan),
                    summarizer_span(summarizer, "summarize") as call,
                ):
                    update = cast("Summarizer", summarizer).summarize(plan.request)
                    call.done(update)
            except SummarizerError as exc:
                if not guarded:
                    raise
                plan = self._after_failure(plan, exc)
        if update is None:
            if plan.decision.tokens < self.policy.guard_limit:
                return self._retry_archive(plan.state.record(None))
            update = self._degraded_update(plan)
        state = self._archived(plan.state, self._apply(plan, update), guarded=guarded)
        request = self._consolidation(state)
        if request is not None:
            proposal, failure = None, None
            consolidate = getattr(summarizer, "consolidate", None)
            if callable(consolidate):
                try:
                    with summarizer_span(summarizer, "consolidate") as call:
                        proposal = checked_update(summarizer, consolidate(request), "consolidate")
                        call.done(proposal)
                except Exception as exc:  # noqa: BLE001 - any failure falls back to dropping the oldest
                    failure = f"{type(exc).__name__}: {exc}"
            state = self._consolidate(state, request, proposal, failure)
        return self._retry_archive(state) if guarded else state

    async def amaybe_compact(self, state: ConversationState[Any]) -> ConversationState[S]:
        """Async `maybe_compact`."""
        if isinstance(state, ConversationState) and (
            state.attempted_at == len(state) or self._quiet(state)
        ):
            return state
        guarded = self.policy.failure_backoff is not None
        return await self._arun(state, force=False, guarded=guarded)

    async def acompact(
        self, state: ConversationState[Any], *, force: bool = False
    ) -> ConversationState[S]:
        """Async `compact`: awaits ``asummarize`` or runs ``summarize`` in a worker thread."""
        return await self._arun(state, force=force, guarded=False)

    async def _arun(
        self, state: ConversationState[Any], *, force: bool, guarded: bool
    ) -> ConversationState[S]:
        plan = self._plan(state, force=force)
        if isinstance(plan, ConversationState):
            after = await self._aretry_archive(plan) if guarded else plan
            return after if after is state else self._observed(state, after, None)
        with compaction_span() as span:
            return self._observed(state, await self._afold(plan, guarded=guarded), span)

    async def _afold(self, plan: _Plan[S], *, guarded: bool) -> ConversationState[S]:
        summarizer = self.summarizer
        update: object = None
        if not (plan.waiting or (guarded and self._backing_off(plan.state, "summarizer"))):
            try:
                with (
                    _summarizer_errors(summarizer, plan),
                    summarizer_span(summarizer, "summarize") as call,
                ):
                    update = await call_async(summarizer, plan.request)
                    call.done(update)
            except SummarizerError as exc:
                if not guarded:
                    raise
                plan = self._after_failure(plan, exc)
        if update is None:
            if plan.decision.tokens < self.policy.guard_limit:
                return await self._aretry_archive(plan.state.record(None))
            update = self._degraded_update(plan)
        state = self._apply(plan, update)
        if self.archive is not None:  # the archive's I/O stays off the event loop
            state = await asyncio.to_thread(self._archived, plan.state, state, guarded=guarded)
        request = self._consolidation(state)
        if request is not None:
            proposal, failure = None, None
            try:
                with summarizer_span(summarizer, "consolidate") as call:
                    proposal = await _aconsolidate(summarizer, request)
                    call.done(proposal)
            except Exception as exc:  # noqa: BLE001 - any failure falls back to dropping the oldest
                failure = f"{type(exc).__name__}: {exc}"
            state = self._consolidate(state, request, proposal, failure)
        return await self._aretry_archive(state) if guarded else state

    def _observed(
        self, before: ConversationState[Any], after: ConversationState[S], span: object
    ) -> ConversationState[S]:
        """``after`` with the cost alert noted; its new events logged, traced and handed on."""
        if len(after.events) == len(before.events):
            if span is not None:
                deferred(span, after)  # due, but the summarizer is backing off: no event
            return after
        observed, self.hook_failures = observe_events(
            before,
            after,
            span,
            threshold=self.cost_alert,
            hook=self.on_event,
            failures=self.hook_failures,
        )
        return observed

    # -- repair ----------------------------------------------------------------------------------

    def repair(
        self,
        state: ConversationState[Any],
        *,
        summarizer: Summarizer | AsyncSummarizer | None = None,
    ) -> ConversationState[S]:
        """Summarize again, with the preferred summarizer, every segment a fallback folded.

        Degraded compactions (``state.pending_repairs``) are re-done oldest first: the segment is
        read back from the log and its update merged into the current summary, recorded as a
        ``repaired`` event. Nothing is retired by a repair's absence; the fallback's items stay.

        Args:
            state: The conversation.
            summarizer: Who repairs (default: the primary of this compactor's fallback chain).

        Raises:
            SummarizerError: the summarizer failed; ``state`` is unchanged and still valid.
        """
        chosen = summarizer or _preferred(self.summarizer)
        if not callable(getattr(chosen, "summarize", None)):
            raise ConfigError(
                f"{type(chosen).__name__} is async-only; use await compactor.arepair()"
            )
        typed = cast("ConversationState[S]", state)
        for event in state.pending_repairs:
            plan = self._repair_plan(typed, event)
            with _summarizer_errors(chosen, plan):
                update = cast("Summarizer", chosen).summarize(plan.request)
            typed = self._apply_repair(plan, event, checked_update(chosen, update))
        return self._observed(state, typed, None)

    async def arepair(
        self,
        state: ConversationState[Any],
        *,
        summarizer: Summarizer | AsyncSummarizer | None = None,
    ) -> ConversationState[S]:
        """Async `repair`."""
        chosen = summarizer or _preferred(self.summarizer)
        typed = cast("ConversationState[S]", state)
        for event in state.pending_repairs:
            plan = self._repair_plan(typed, event)
            with _summarizer_errors(chosen, plan):
                update = await call_async(chosen, plan.request)
            typed = self._apply_repair(plan, event, checked_update(chosen, update))
        return self._observed(state, typed, None)

    def _repair_plan(self, state: ConversationState[S], event: CompactionEvent) -> _Plan[S]:
        assert event.folded is not None  # compacted events always fold  # noqa: S101
        request = self._request(state, *event.folded, head=state.head_end)
        return _Plan(
            state, self.decide(state), forced=True, head_end=state.head_end, request=request
        )

    def _apply_repair(
        self, plan: _Plan[S], repaired: CompactionEvent, update: SummaryUpdate
    ) -> ConversationState[S]:
        if update.degraded:
            raise SummarizerError(
                f"the repair of messages {repaired.folded} was itself degraded "
                f"({update.degraded}); "
                "the state is unchanged, try again when the preferred summarizer is available"
            )
        state = cast("ConversationState[S]", plan.state)
        number = len(state.events) + 1
        segment = plan.request.segment
        merged, report, extracted = self._merged(plan.request, update, number)
        merged, report, _ = _keep_values(merged, report, state.ledger, _kept_prose(state), number)
        tokens_after, _ = self._count(state.record(None, summary=merged))
        event = CompactionEvent(
            number=number,
            outcome="repaired",
            at=self.clock(),
            reason=f"repaired compaction {repaired.number} ({repaired.degraded_reason})",
            tokens_before=plan.decision.tokens,
            tokens_after=tokens_after,
            method=plan.decision.method,
            folded=(segment.start, segment.end),
            forced=True,
            repairs=repaired.number,
            usage=update.usage,
            merge=report,
            extracted=extracted,
        )
        return state.record(event, summary=merged)

    # -- pure stages -----------------------------------------------------------------------------

    def _plan(
        self, state: ConversationState[Any], *, force: bool
    ) -> ConversationState[S] | _Plan[S]:
        """Decide, reduce and split. Returns a state when there is nothing to summarize."""
        if not isinstance(state, ConversationState):
            raise ConfigError(
                f"state={state!r} is not a ConversationState; build one with "
                "ConversationState(messages)"
            )
        summary = state.summary
        if summary is not None and type(summary) is not self.schema:
            raise ConfigError(
                f"this conversation was summarized with {type(summary).__name__}, but the "
                f"compactor's schema is {self.schema.__name__}; use one schema per conversation"
            )
        if self.archive is not None and state.thread_id is None:
            raise ConfigError(
                "the compactor has an archive but the state has no thread_id; build it with "
                "ConversationState(messages, thread_id='...') so the archive can file it"
            )
        typed = cast("ConversationState[S]", state)
        if not force and state.attempted_at == len(state):
            return typed  # at most one attempt per turn (invariant 8)
        decision = self.decide(state)
        reduction = self.reduction
        if not (force or decision.due):
            if reduction is not None and reduction.clip_at_ingest:
                clipped = self._reduce(typed, decision, len(state), len(state), clear=False)
                return typed if clipped is None else clipped
            return typed

        infos = state.infos
        head = (
            state.head_end if state.cutoff else head_end(infos, keep_first=self.policy.keep_first)
        )
        low = max(state.cutoff, head)
        totals = state.running_totals(self.counter)
        keep = self._keep(decision)
        if reduction is not None and decision.unit == "tokens":
            # cheap reduction whenever a compaction is due, cut or no cut: everything outside the
            # verbatim tail (old results inside a tool cycle included) and oversized messages
            reduced = self._reduce(typed, decision, low, tail_start(totals, len(state), keep))
            if reduced is not None:
                if not force and reduced.events[-1].tokens_after <= self._target_tokens():
                    return reduced  # cheap reduction was enough: no model call
                typed, state, decision = reduced, reduced, self.decide(reduced)
                keep = self._keep(decision)
        cut = self._cut(infos, totals, low=low, head=head, keep=keep)
        if cut is None:
            kept = len(state) - low
            return self._stall(
                typed,
                decision,
                force,
                "nothing_to_fold",
                lambda: (
                    f"{decision.reason}, but nothing can be folded: the kept first message and "
                    f"the verbatim tail (keep={self.policy.keep!r}, widened to keep tool calls "
                    f"with their results) already cover all {kept} messages after the summary; "
                    "lower keep or raise the trigger"
                ),
            )
        probe = state.record(None, cutoff=cut.at, head_end=head, pinned=cut.pinned)
        folded_messages = cut.at - low
        segment_estimate = state.estimate(self.counter) - probe.estimate(self.counter)
        refusal = _refusal(state.events)
        retry_at = None if refusal is None else refusal.retry_at_tokens
        stand_in = refusal is not None and refusal.degraded
        window = self.policy.input_window
        fits = window is None or decision.tokens <= window
        waiting = not force and retry_at is not None and segment_estimate < retry_at
        if waiting and (stand_in or not self._near_window(decision)):
            return typed.record(None)  # the last summary was refused; wait for a bigger segment
        folded_tokens = self._counted(state, segment_estimate)
        folded = folded_messages if decision.unit == "messages" else folded_tokens
        remaining = decision.measured - folded
        gap = decision.limit - self.policy.target_limit
        if not force and fits and remaining >= decision.limit and folded < gap:
            return self._stall(
                typed,
                decision,
                force,
                "no_gain",
                lambda: (
                    f"{decision.reason}, but folding the {folded_messages} messages "
                    f"(~{folded_tokens:,} tokens) outside the verbatim tail would leave "
                    f"~{remaining:,} {decision.unit}, still above it: the kept first message and "
                    "tail are too large; lower keep, or clear large tool results from the tail"
                ),
            )
        request = self._request(state, low, cut.at, head=head)
        return _Plan(
            state=state,
            decision=decision,
            forced=force,
            head_end=head,
            request=request,
            pinned=cut.pinned,
            waiting=waiting,
        )

    def _cut(
        self,
        infos: Sequence[MessageInfo],
        totals: Sequence[int],
        *,
        low: int,
        head: int,
        keep: tuple[Unit, int],
    ) -> Cut | None:
        """`plan_cut`, scanning only above the top of the last scan that found nothing.

        A due compaction that cannot cut (one long open tool round) is planned again every turn;
        the scan from the tail's start down to ``low`` would grow with the round. `plan_cut` reads
        only ``infos[: j + 1]`` at index ``j`` and scans downwards, so when the same log prefix
        (the same info object at the old top), ``low``, ``head`` and ``keep`` found no cut below
        the old top, the first cut of a new scan, if any, lies above it.
        """
        length = len(infos)
        top = min(tail_start(totals, length, keep), length - 1)
        start = low
        memo = self._no_cut
        if memo is not None:
            info, at, was_low, was_head, was_keep = memo
            if (
                (was_low, was_head, was_keep) == (low, head, keep)
                and low <= at <= top
                and infos[at] is info
            ):
                start = at
        cut = plan_cut(infos, totals, low=start, head=head, keep=keep)
        if cut is None and top >= 0:
            self._no_cut = (infos[top], top, low, head, keep)
        return cut

    def _near_window(self, decision: Decision) -> bool:
        """Whether the counted tokens reached `WINDOW_GUARD` of the input window.

        In tokens whatever unit the trigger counts; never without a window.
        """
        window = self.policy.input_window
        if window is None:
            return False
        if decision.unit == "tokens":
            return decision.tokens >= self.policy.guard_limit
        return decision.tokens >= math.floor(window * WINDOW_GUARD)

    def _keep(self, decision: Decision) -> tuple[Unit, int]:
        """The verbatim tail to keep: the policy's, or the newest message once past the guard.

        Past the window guard the window outranks ``keep``: only the newest message (widened to
        its tool round) must stay.
        """
        if decision.unit == "tokens" and decision.tokens >= self.policy.guard_limit:
            window = self.policy.input_window
            if window is not None:
                return ("messages", 1)
        return self.policy.keep_amount

    def _request(
        self, state: ConversationState[Any], start: int, end: int, *, head: int
    ) -> SummaryRequest[S]:
        """The summarizer request for ``log[start:end]``, with the kept head ``log[:head]``."""
        summary = cast("S | None", state.summary)
        prior = summary if summary is not None else empty(self.schema)
        return SummaryRequest.for_segment(
            prior=prior,
            segment=_segment(state, start, end),
            schema=self.schema,
            head=_segment(state, 0, head) if head else None,
        )

    def _merged(
        self, request: SummaryRequest[S], update: SummaryUpdate, number: int
    ) -> tuple[S, MergeReport, tuple[str, ...]]:
        """Hold the update to the binding contract, merge it, then apply the prohibition guard."""
        prior = request.prior
        room = None
        limit = self.policy.binding_limit
        if limit is not None:
            count = self.counter.count_text
            used = sum(
                count(item.text) + ITEM_OVERHEAD
                for f in request.spec.binding
                for item in getattr(prior, f.name)
            )
            room = max(0, limit - used)
        verdict = enforce(request, update, binding_room=room, count=self.counter.count_text)
        segment = request.segment
        merged, report = merge(
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
        merged, report, extracted = guard_prohibitions(request, merged, report, number)
        merged, report = merge_trail(
            segment,
            merged,
            report,
            number,
            header_limit=self.policy.header_limit,
            count=self.counter.count_text,
        )
        return merged, report, extracted

    def _count(self, state: ConversationState[Any]) -> tuple[int, Method]:
        """Counted context tokens of ``state``, and how they were obtained."""
        estimate = state.estimate(self.counter)
        return count_with_anchor(state.anchor, estimate, self.policy.safety_margin)

    def _apply(self, plan: _Plan[S], update: object) -> ConversationState[S]:
        """Merge the update and build the new state; refuse a summary that frees nothing.

        Pure: the caller archives the folded segment (`_archived`) before returning the state.
        """
        update = checked_update(self.summarizer, update)
        state = cast("ConversationState[S]", plan.state)
        segment = plan.request.segment
        number = len(state.events) + 1
        merged, report, extracted = self._merged(plan.request, update, number)
        ledger = _released(
            (*state.ledger, *entries(segment, plan.request.extraction)), plan.request.prior, report
        )
        pinned = state.log[plan.pinned[0] : plan.pinned[1]] if plan.pinned else []
        kept = [
            message_text(m)
            for m in (*state.log[: plan.head_end], *pinned, *state.log[segment.end :])
        ]
        merged, report, unplaced = _keep_values(merged, report, ledger, kept, number)
        decision = plan.decision
        event = CompactionEvent(
            number=number,
            outcome="compacted",
            at=self.clock(),
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
        )
        compacted = state.record(
            event,
            summary=merged,
            cutoff=segment.end,
            head_end=plan.head_end,
            ledger=ledger,
            pinned=plan.pinned,
        )
        tokens_after, _ = self._count(compacted)
        if tokens_after >= decision.tokens:
            totals = state.running_totals(self.counter)
            folded = totals[segment.end] - totals[segment.start]
            growth = compacted.header_tokens(self.counter) - state.header_tokens(self.counter)
            retry_at = 2 * max(folded, growth)
            return self._stall(
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
        reason = event.reason
        if tokens_after > self._target_tokens():
            reason += (
                f"; {tokens_after:,} tokens remain, above the target, because the kept first "
                "message and verbatim tail are large"
            )
        if plan.pinned is not None:
            reason += (
                f"; the opening round of the tool cycle (messages {plan.pinned[0] + 1}-"
                f"{plan.pinned[1]}) stays in view so the turn keeps its thinking"
            )
        final = event.model_copy(
            update={
                "tokens_after": tokens_after,
                "reason": reason,
                "extracted": extracted,
                "missing_values": tuple(dict.fromkeys(e.value for e in unplaced)),
                "pinned": plan.pinned,
                "over_window": self.overflow(compacted),
            }
        )
        return state.record(
            final,
            summary=merged,
            cutoff=segment.end,
            head_end=plan.head_end,
            ledger=ledger,
            pinned=plan.pinned,
        )

    def _consolidation(self, state: ConversationState[S]) -> ConsolidationRequest[S] | None:
        """The consolidation due right after a compaction, if the header is over its budget."""
        budget = self.policy.header_limit
        summary = state.summary
        if budget is None or summary is None or state.events[-1].outcome != "compacted":
            return None
        tokens = self._counted(state, state.header_tokens(self.counter))
        if tokens <= budget:
            return None
        return ConsolidationRequest(
            summary=summary, schema=self.schema, budget=budget, tokens=tokens
        )

    def _consolidate(
        self,
        state: ConversationState[S],
        request: ConsolidationRequest[S],
        proposal: SummaryUpdate | None,
        failure: str | None,
    ) -> ConversationState[S]:
        """Merge the screened proposal, then drop the least salient loose items while over budget.

        Runs once per compaction, so it never loops; binding items are never touched.
        """
        number = len(state.events) + 1
        summary = request.summary
        report = MergeReport()
        if proposal is not None:
            screened, refused = screen(summary, proposal)
            spans = [item.source for item in _items(summary) if item.id in _ids(screened)]
            source = (
                (min(s[0] for s in spans), max(s[1] for s in spans))
                if spans
                else (state.head_end, state.cutoff)
            )
            summary, report = merge(summary, screened, source=source, compaction=number)
            report = report.model_copy(update={"refused": (*refused, *report.refused)})
        reason = (
            f"the summary header took {request.tokens:,} tokens, over its budget of "
            f"{request.budget:,}; the least salient non-binding items go first"
        )
        dropped: list[str] = []
        kept = _kept_prose(state)
        held = carriers(None, kept)
        ledger = [e for e in state.ledger if e.value not in held]
        probe = state.record(None, summary=summary)
        while self._counted(probe, probe.header_tokens(self.counter)) > request.budget:
            oldest = drop_oldest(
                summary, reason=reason, compaction=number, keep=carrier_items(summary, ledger)
            )
            if oldest is None:
                break
            summary, item_id = oldest
            dropped.append(item_id)
            probe = state.record(None, summary=summary)
        summary, report, _ = _keep_values(summary, report, state.ledger, kept, number)
        probe = state.record(None, summary=summary)
        header = self._counted(probe, probe.header_tokens(self.counter))
        before, method = self._count(state)
        after, _ = self._count(probe)
        how = "the summarizer condensed it" if proposal is not None else "no model consolidation"
        if failure is not None:
            how = f"the summarizer's consolidation failed ({failure})"
        over = ""
        if header > request.budget:
            spec = spec_of(type(summary))
            loose = {i.id for f in spec.lists if not f.binding for i in getattr(summary, f.name)}
            carried = carrier_items(summary, ledger) & loose
            over = (
                f"; binding items and {len(carried)} last carrier(s) of values the user stated "
                "(kept by the value ledger) alone exceed the budget"
                if carried
                else "; binding items alone exceed the budget"
            )
        if failure is None and proposal is not None and proposal.degraded:
            failure = proposal.degraded  # a fallback member consolidated after the primary failed
        event = CompactionEvent(
            number=number,
            outcome="consolidated",
            at=self.clock(),
            reason=f"{reason}: {how}, {len(dropped)} oldest item(s) dropped, header now "
            f"{header:,} tokens{over}",
            tokens_before=before,
            tokens_after=after,
            method=method,
            degraded=failure is not None,
            degraded_reason=failure,
            usage=proposal.usage if proposal is not None else None,
            merge=report.model_copy(update={"dropped": (*report.dropped, *dropped)}),
        )
        return state.record(event, summary=summary)

    def _reduce(
        self,
        state: ConversationState[S],
        decision: Decision,
        low: int,
        end: int,
        *,
        clear: bool = True,
    ) -> ConversationState[S] | None:
        """Clip oversized messages in view and clear old tool data in ``log[low:end]``.

        The pinned round is cleared too. Returns the new state, or None if nothing qualifies.
        """
        assert self.reduction is not None  # checked by the caller  # noqa: S101
        config = self.reduction
        done = frozenset((c.at, c.block) for c in state.cleared_in_view)  # only these can recur
        clipped = clip_blocks(
            state.log,
            state.infos,
            state.kept,
            limit=self._clip_limit(),
            counter=self.counter,
            done=done,
            thread_id=state.thread_id,
            totals=state.running_totals(self.counter),
        )
        done |= {(c.at, c.block) for c in clipped}
        marks: tuple[Cleared, ...] = ()
        if clear:
            spans = [(low, end)]
            if state.pinned is not None:
                spans.insert(0, state.pinned)
            for start, stop in spans:
                marks += plan_reduction(
                    state.log,
                    state.infos,
                    start=start,
                    end=stop,
                    config=config,
                    counter=self.counter,
                    done=done,
                    thread_id=state.thread_id,
                )
        if not marks and not clipped:
            return None
        every = (*clipped, *marks)
        reduced = state.record(None, cleared=every)
        tokens_after, _ = self._count(reduced)
        if tokens_after >= decision.tokens:
            return None  # the placeholders would cost what they replace
        chars = sum(c.chars for c in marks)
        messages = tuple(sorted({c.at for c in every}))
        what = []
        if clipped:
            what.append(
                f"clipped {len(clipped)} oversized block(s) ({sum(c.chars for c in clipped):,} "
                f"characters) above {self._clip_limit():,} tokens each"
            )
        if marks:
            what.append(
                f"cleared {len(marks)} old tool result(s) and input(s) ({chars:,} characters) "
                "outside the verbatim tail"
            )
        event = CompactionEvent(
            number=len(state.events) + 1,
            outcome="reduced",
            at=self.clock(),
            reason=f"{decision.reason}; {' and '.join(what)}, kept whole in the log",
            tokens_before=decision.tokens,
            tokens_after=tokens_after,
            method=decision.method,
            cleared=messages,
            over_window=self.overflow(reduced),
        )
        return state.record(event, cleared=every)

    def _clip_limit(self) -> int:
        """Tokens above which one text, tool result or tool input is clipped in the model view."""
        assert self.reduction is not None  # checked by the caller  # noqa: S101
        policy = self.policy
        window = policy.input_window
        base = window if window is not None else policy.target_limit
        return max(64, int(base * self.reduction.clip_share))

    # -- the window guarantee ----------------------------------------------------------------------

    def overflow(self, state: ConversationState[Any]) -> str | None:
        """None when ``state``'s context fits the model's input window; else one line why.

        The line says which messages hold the context, how big they are, and what would help.
        """
        window = self.policy.input_window
        if window is None:
            return None
        tokens, _ = self._count(state)
        if tokens <= window:
            return None
        sizes = self._sizes(state)
        first = (
            state.head_end
            if state.cutoff
            else head_end(state.infos, keep_first=self.policy.keep_first)
        )
        head = sum(size for index, size in sizes if index < first)
        newest = _newest_round(state)
        round_tokens = sum(size for index, size in sizes if index >= newest)
        header = self._counted(state, state.header_tokens(self.counter))
        largest = sorted(
            ((size, index) for index, size in sizes if first <= index < newest),
            reverse=True,
        )[:3]
        named = ", ".join(f"message {index + 1} ({size:,})" for size, index in largest)
        what = (
            f"the context is {tokens:,} tokens, over the {window:,}-token input window: the "
            f"header {header:,}, the kept first message {head:,}, the newest tool round "
            f"(messages {newest + 1}-{len(state)}) {round_tokens:,}"
        )
        if named:
            what += f", the largest other kept messages {named}"
        if head + round_tokens + header > window:
            return (
                f"{what}; the kept first message and the newest tool round alone exceed the "
                "window (thinking blocks are never cut), so nothing progsum may fold or clip "
                "makes it fit: use a model with a larger window or start a new conversation"
            )
        return (
            f"{what}; lower keep, lower Reduction.clip_share or min_chars, or raise the "
            "trigger's distance to the window"
        )

    def count(self, state: ConversationState[Any]) -> tuple[int, Method]:
        """Counted context tokens of ``state`` (the figure the trigger and window checks use)."""
        return self._count(state)

    def sizes(self, state: ConversationState[Any]) -> list[tuple[int, int]]:
        """``(log index, counted tokens)`` of each message in view, cleared blocks subtracted."""
        return self._sizes(state)

    def _sizes(self, state: ConversationState[Any]) -> list[tuple[int, int]]:
        """``(log index, counted tokens)`` of each message in view, cleared blocks subtracted."""
        totals = state.running_totals(self.counter)
        saved: dict[int, int] = {}
        for mark in state.cleared_in_view:
            saved[mark.at] = saved.get(mark.at, 0) + mark.saved
        return [
            (i, self._counted(state, totals[i + 1] - totals[i] - saved.get(i, 0)))
            for i in state.kept
        ]

    # -- outages -----------------------------------------------------------------------------------

    def _failures(self, state: ConversationState[Any], what: str) -> list[CompactionEvent]:
        """The failures of ``what`` since its last success, oldest first."""
        found: list[CompactionEvent] = []
        for event in reversed(state.events):
            if what == "summarizer":
                if event.failure == "summarizer":
                    found.append(event)
                elif event.outcome == "compacted" and not _backed_off(event):
                    break
            elif event.failure == "archive" or event.archive_pending:
                found.append(event)
            elif event.outcome == "archived" or (
                event.outcome == "compacted" and not event.archive_pending
            ):
                break
        return found[::-1]

    def _backing_off(self, state: ConversationState[Any], what: str) -> bool:
        """Whether the last failure of ``what`` asks to wait beyond this turn."""
        failures = self._failures(state, what)
        last = failures[-1] if failures else None
        return last is not None and last.retry_at is not None and len(state) < last.retry_at

    def _retry_turn(self, state: ConversationState[Any], what: str) -> int:
        """The log length at which ``what`` is tried again after one more failure."""
        cap = self.policy.failure_backoff or 1
        count = len(self._failures(state, what)) + 1
        return len(state) + min(cap, int(2**count))

    def _after_failure(self, plan: _Plan[S], exc: SummarizerError) -> _Plan[S]:
        """Record the summarizer's failure on the plan's state, with the turn of the next try."""
        state = cast("ConversationState[S]", plan.state)
        retry = self._retry_turn(state, "summarizer")
        decision = plan.decision
        event = CompactionEvent(
            number=len(state.events) + 1,
            outcome="failed",
            at=self.clock(),
            reason=f"{exc}; backing off: the summarizer is tried again at message {retry}"
            + (
                ", an extractive fold keeps the context under the window meanwhile"
                if decision.tokens >= self.policy.guard_limit
                else ""
            ),
            tokens_before=decision.tokens,
            tokens_after=decision.tokens,
            method=decision.method,
            failure="summarizer",
            retry_at=retry,
        )
        failed = state.record(event)
        return dataclasses.replace(plan, state=failed)

    def _degraded_update(self, plan: _Plan[S]) -> SummaryUpdate:
        """A deterministic extractive update for the plan, marked degraded for `repair`."""
        from progsum.summarizers import ExtractiveSummarizer  # noqa: PLC0415 - avoids a cycle

        update = ExtractiveSummarizer().summarize(plan.request)
        if plan.waiting:
            degraded = (
                "the last summary was refused as not smaller; near the window, folded "
                "extractively until the segment doubles"
            )
        else:
            failures = self._failures(plan.state, "summarizer")
            why = failures[-1].reason if failures else "the summarizer is unavailable"
            degraded = f"summarizer backing off ({_first_clause(why, '; backing off')})"
        return update.model_copy(update={"degraded": degraded})

    def _archived(
        self, before: ConversationState[S], after: ConversationState[S], *, guarded: bool = False
    ) -> ConversationState[S]:
        """Write the segment ``after`` folds to the archive; only then is ``after`` returned.

        With ``guarded``, a failed write (or an archive still backing off) does not raise: the
        compacted event is marked ``archive_pending`` with the turn of the next try, and the
        state's log keeps the segment until `_retry_archive` writes it.

        Raises:
            ArchiveError: the write failed and not ``guarded``; ``before`` is still valid.
        """
        if self.archive is None or after.cutoff == before.cutoff:
            return after
        event = after.events[-1]
        if guarded and self._backing_off(before, "archive"):
            waiting = self._failures(before, "archive")[-1].retry_at
            return self._pending(
                before, after, "the archive is backing off after a failure", retry=waiting
            )
        try:
            self._put(after, event)
        except ArchiveError as exc:
            if not guarded:
                raise
            return self._pending(before, after, str(exc))
        return after

    def _put(self, state: ConversationState[Any], event: CompactionEvent) -> None:
        assert self.archive is not None  # checked by the caller  # noqa: S101
        thread = state.thread_id
        assert thread is not None  # checked when planning  # noqa: S101
        assert event.folded is not None  # a compacted event always folds  # noqa: S101
        start, end = event.folded
        try:
            self.archive.put(thread, start, state.log[start:end], event)
        except ArchiveError:
            raise
        except Exception as exc:
            raise ArchiveError(
                f"archiving messages {start}-{end - 1} of thread {thread!r} failed: "
                f"{type(exc).__name__}: {exc}; the conversation state is unchanged (use the "
                "state you passed in) and the next turn will try again"
            ) from exc

    def _pending(
        self,
        before: ConversationState[S],
        after: ConversationState[S],
        why: str,
        *,
        retry: int | None = None,
    ) -> ConversationState[S]:
        """``after`` with its compacted event marked as waiting for the archive.

        It waits until ``retry`` (default: the next doubled wait).
        """
        event = after.events[-1]
        retry = retry or self._retry_turn(before, "archive")
        marked = event.model_copy(
            update={
                "archive_pending": True,
                "retry_at": retry,
                "reason": f"{event.reason}; not archived yet ({_first_clause(why)}"
                f"): the segment stays in the state's log and is written at message {retry} or "
                "later",
            }
        )
        return before.record(
            marked,
            summary=after.summary,
            cutoff=after.cutoff,
            head_end=after.head_end,
            pinned=after.pinned,
        )

    def _unarchived(self, state: ConversationState[Any]) -> list[CompactionEvent]:
        """Compacted events whose segments wait for the archive, oldest first.

        Remembered for the last events tuple read: states appended since share it, so a quiet
        turn with an archive does not read every event again.
        """
        events = state.events
        memo = self._unarchived_memo
        if memo is not None and memo[0] is events:
            return list(memo[1])
        written = {n for e in events if e.outcome == "archived" for n in e.archives}
        pending = [e for e in events if e.archive_pending and e.number not in written]
        self._unarchived_memo = (events, tuple(pending))
        return pending

    def _retry_archive(self, state: ConversationState[S]) -> ConversationState[S]:
        """Write the segments the archive refused earlier, once its backoff has passed."""
        if self.archive is None:
            return state
        pending = self._unarchived(state)
        if not pending or self._backing_off(state, "archive"):
            return state
        written: list[int] = []
        try:
            for event in pending:
                self._put(state, event)
                written.append(event.number)
        except ArchiveError as exc:
            retry = self._retry_turn(state, "archive")
            tokens, method = self._count(state)
            failed = CompactionEvent(
                number=len(state.events) + 1,
                outcome="failed",
                at=self.clock(),
                reason=f"{_first_clause(str(exc))}; backing off: "
                f"{len(pending) - len(written)} folded segment(s) stay in the state's log and "
                f"are written at message {retry} or later",
                tokens_before=tokens,
                tokens_after=tokens,
                method=method,
                failure="archive",
                retry_at=retry,
                archives=tuple(written),
            )
            return state.record(failed)
        tokens, method = self._count(state)
        done = CompactionEvent(
            number=len(state.events) + 1,
            outcome="archived",
            at=self.clock(),
            reason=f"the archive is back: wrote the {len(written)} segment(s) folded while it was "
            "down",
            tokens_before=tokens,
            tokens_after=tokens,
            method=method,
            archives=tuple(written),
        )
        return state.record(done)

    async def _aretry_archive(self, state: ConversationState[S]) -> ConversationState[S]:
        if self.archive is None or not self._unarchived(state):
            return state
        return await asyncio.to_thread(self._retry_archive, state)

    def _stall(
        self,
        state: ConversationState[S],
        decision: Decision,
        forced: bool,
        kind: StallKind,
        reason: Callable[[], str],
        **extra: Any,  # noqa: ANN401 - CompactionEvent fields
    ) -> ConversationState[S]:
        """Note a due compaction that folded nothing; a repeat of the last stall adds no event.

        ``reason`` says why; it is asked only for a new event (a stall repeats every turn until
        something changes, and the sentence is long).
        """
        last = state.events[-1] if state.events else None
        if last is not None and last.stall == kind and not forced and not extra:
            return state.record(None)
        event = CompactionEvent(
            number=len(state.events) + 1,
            outcome="stalled",
            at=self.clock(),
            reason=reason(),
            tokens_before=decision.tokens,
            tokens_after=decision.tokens,
            method=decision.method,
            forced=forced,
            stall=kind,
            over_window=self.overflow(state),
            **extra,
        )
        return state.record(event)

    def _counted(self, state: ConversationState[Any], estimate: int) -> int:
        """Convert an estimated token amount to the counted scale (margin or learnt ratio)."""
        anchor = state.anchor
        if anchor is not None and anchor.ratio is not None:
            return round(estimate * anchor.ratio)
        return round(estimate * self.policy.safety_margin)

    def _target_tokens(self) -> int:
        policy = self.policy
        if policy.unit == "tokens":
            return policy.target_limit
        return policy.input_window or 2**63


def _first_clause(text: str, before: str = "; the conversation") -> str:
    """``text`` up to ``before`` (an error's advice, which a backing-off engine replaces)."""
    return text.split(before, maxsplit=1)[0]


def _backed_off(event: CompactionEvent) -> bool:
    """A compaction folded by the extractive stand-in while the summarizer was backing off."""
    return bool(event.degraded_reason and event.degraded_reason.startswith("summarizer backing"))


def _newest_round(state: ConversationState[Any]) -> int:
    """Log index where the newest tool round starts (its call message), or the last message."""
    infos = state.infos
    k = len(state) - 1
    while k > 0 and infos[k].is_result:
        k -= 1
    return max(k, 0)


def _items(summary: BaseSummary) -> list[Item]:
    return [item for items in live_items(summary).values() for item in items]


def _ids(update: SummaryUpdate) -> set[str]:
    return {r.id for r in update.retire}


async def _aconsolidate(
    summarizer: object, request: ConsolidationRequest[Any]
) -> SummaryUpdate | None:
    """The summarizer's consolidation (awaited, or in a thread), or None if it has none."""
    call = async_consolidator(summarizer)
    if call is None:
        return None
    return checked_update(summarizer, await call(request), "consolidate")


def _refusal(events: tuple[CompactionEvent, ...]) -> CompactionEvent | None:
    """The refusal a wait is for, unless a compaction came after it.

    That is the newest event asking to wait for a bigger segment (``retry_at_tokens``); its
    ``degraded`` marks the extractive stand-in's own refusal. Reductions, failures and archive
    events recorded since the refusal do not reset the wait.
    """
    for event in reversed(events):
        if event.outcome == "compacted":
            return None
        if event.retry_at_tokens is not None:
            return event
    return None


def _segment(state: ConversationState[Any], start: int, end: int) -> Segment:
    return Segment(
        start=start,
        messages=tuple(state.log[start:end]),
        infos=tuple(state.infos[start:end]),
        format=state.format,
        authors=tuple(state.authors[start:end]),
    )


def _kept_prose(state: ConversationState[Any]) -> list[str]:
    """The prose of the messages a state keeps verbatim (the kept head and the tail)."""
    return [message_text(m) for m in state.effective]


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
    reopened = [item for f in spec.binding for item in getattr(prior, f.name) if item.id in gone]
    if not reopened:
        return ledger
    released = {
        (at, key)
        for item in reopened
        for key in value_keys(item.text)
        for at in (item.cites or range(*item.source))
    }
    return tuple(
        e
        for e in ledger
        if not any((e.at, key) in released for key in (e.value, value_key(e.value)))
    )


def _keep_values(
    summary: S,
    report: MergeReport,
    ledger: tuple[StatedValue, ...] | list[StatedValue],
    kept: list[str],
    number: int,
) -> tuple[S, MergeReport, tuple[StatedValue, ...]]:
    """Restore the user's sentence for every ledger value the context no longer carries.

    Returns the summary, the report with the restored ids, and the entries with no field to go to.
    """
    missing = lost(ledger, carriers(summary, kept))
    if not missing:
        return summary, report, ()
    restored, extra, unplaced = restore(summary, missing, compaction=number)
    combined = report.model_copy(
        update={"added": report.added + extra.added, "restored": report.restored + extra.added}
    )
    return restored, combined, unplaced


def _preferred(summarizer: object) -> Summarizer | AsyncSummarizer:
    """The summarizer a repair should use: a fallback chain's primary, else the summarizer."""
    from progsum.summarizers.fallback import FallbackSummarizer  # noqa: PLC0415 - avoids a cycle

    if isinstance(summarizer, FallbackSummarizer):
        return summarizer.primary
    return cast("Summarizer | AsyncSummarizer", summarizer)


@contextlib.contextmanager
def _summarizer_errors(summarizer: object, plan: _Plan[Any]) -> Iterator[None]:
    """Turn any failure of a summarizer call into a SummarizerError naming the segment."""
    try:
        yield
    except ProgsumError:
        raise
    except Exception as exc:
        segment = plan.request.segment
        raise SummarizerError(
            f"{type(summarizer).__name__} failed on messages {segment.start}-{segment.end - 1}: "
            f"{type(exc).__name__}: {exc}; the state is unchanged, so the agent can go on and the "
            "next turn will try again (wrap it in a fallback summarizer to degrade instead)"
        ) from exc


def _policy_from(budget: int | str | Policy) -> Policy:
    if isinstance(budget, Policy):
        return budget
    if isinstance(budget, str):
        return Policy(model=budget)
    if isinstance(budget, int) and not isinstance(budget, bool):
        return Policy(context_window=budget)
    raise ConfigError(
        f"budget={budget!r} must be the context window in tokens, a model name, or a Policy; "
        "use e.g. maybe_compact(state, 200_000, summarizer=...)"
    )


def maybe_compact(
    state: ConversationState[Any],
    budget: int | str | Policy,
    *,
    summarizer: Summarizer | AsyncSummarizer | None = None,
    schema: type[S] = Summary,  # type: ignore[assignment]  # see Compactor
    counter: TokenCounter | None = None,
) -> ConversationState[S]:
    """Compact ``state`` if it is due under ``budget``; the one-call form of `Compactor`.

    Args:
        state: The conversation.
        budget: The context window in tokens, a model name, or a full `Policy`.
        summarizer: What turns a segment into a summary update.
        schema: The summary schema (default `Summary`).
        counter: Token counter (default `HeuristicCounter`).
    """
    compactor = Compactor(
        summarizer=summarizer, policy=_policy_from(budget), schema=schema, counter=counter
    )
    return compactor.maybe_compact(state)


async def amaybe_compact(
    state: ConversationState[Any],
    budget: int | str | Policy,
    *,
    summarizer: Summarizer | AsyncSummarizer | None = None,
    schema: type[S] = Summary,  # type: ignore[assignment]  # see Compactor
    counter: TokenCounter | None = None,
) -> ConversationState[S]:
    """Async `maybe_compact`."""
    compactor = Compactor(
        summarizer=summarizer, policy=_policy_from(budget), schema=schema, counter=counter
    )
    return await compactor.amaybe_compact(state)
