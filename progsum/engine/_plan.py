"""The plan stage: is a fold due, which messages does it fold, and what does the summarizer get.

`plan` returns a frozen `Plan` when there is a segment to summarize, or the state to return
when there is not: not due (perhaps clipped at ingest), a cheap reduction that was enough, a
stall that says why nothing can fold, or a wait for a refused summary's segment to grow.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from progsum.engine._config import Config
from progsum.engine._cut import Cut, head_end, plan_cut, tail_start
from progsum.engine._measure import Decision, counted, decide, near_window, target_tokens
from progsum.engine._recall import reserve
from progsum.engine._reduce import reduce
from progsum.engine._window import overflow
from progsum.errors import ConfigError
from progsum.judge._extract import preceding_prose
from progsum.messages._formats import MessageInfo
from progsum.policy._policy import Unit
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent, StallKind
from progsum.summary._merge import empty
from progsum.summary._request import Segment, SummaryRequest
from progsum.summary._schema import SummaryT as S

__all__ = ["CutMemo", "Plan", "keep", "plan", "request", "segment", "stall"]

FIT_LEAST: tuple[Unit, int] = ("messages", 1)
"""The least tail a fitted ``keep`` falls back to when no safe cut lies within the fitted tail:
the newest message, widened to its tool round by the cut."""


@dataclass(frozen=True, slots=True)
class Plan(Generic[S]):
    """A fold to make: the state it starts from and what the summarizer is asked."""

    state: ConversationState[S]
    decision: Decision
    forced: bool
    head_end: int
    request: SummaryRequest[S]
    pinned: tuple[int, int] | None = None
    waiting: bool = False
    """The last summary was refused as not smaller and the segment has not doubled since, but the
    context is near the window: fold extractively (degraded) instead of asking again."""
    narrowed: bool = False
    """No safe cut lay within the fitted tail (it began inside a tool round): the tail is the
    newest round, and the completed rounds before it are folded."""


class CutMemo:
    """Where the last search for a safe cut found none, so the next search starts above it.

    A due compaction that cannot cut (one long open tool round) is planned again every turn, and
    the scan from the tail's start down to ``low`` would grow with the round. `plan_cut` reads
    only ``infos[: j + 1]`` at index ``j`` and scans downwards, so when the same log prefix (the
    same info object at the old top), ``low``, ``head`` and ``keep`` found no cut below the old
    top, the first cut of a new scan, if any, lies above it. One per `Compactor`.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[MessageInfo, int, int, int, tuple[Unit, int]] | None = None

    def cut(
        self,
        infos: Sequence[MessageInfo],
        totals: Sequence[int],
        *,
        low: int,
        head: int,
        keep: tuple[Unit, int],
    ) -> Cut | None:
        """`plan_cut`, scanning only above the top of the last scan that found nothing."""
        length = len(infos)
        top = min(tail_start(totals, length, keep), length - 1)
        start = low
        last = self._last
        if last is not None:
            info, at, was_low, was_head, was_keep = last
            same = (was_low, was_head, was_keep) == (low, head, keep)
            if same and low <= at <= top and infos[at] is info:
                start = at
        found = plan_cut(infos, totals, low=start, head=head, keep=keep)
        if found is None and top >= 0:
            self._last = (infos[top], top, low, head, keep)
        return found


def plan(
    config: Config[S], memo: CutMemo, state: ConversationState[Any], *, force: bool
) -> ConversationState[S] | Plan[S]:
    """Decide, reduce and split. Returns a state when there is nothing to summarize."""
    typed = _checked(config, state)
    if not force and state.attempted_at == len(state):
        return typed  # at most one attempt per turn (invariant 8)
    decision = decide(config, typed, reserve=reserve(config, typed))
    reduction = config.reduction
    if not (force or decision.due):
        if reduction is not None and reduction.clip_at_ingest:
            end = len(typed)
            clipped = reduce(config, typed, decision, end, end, clear=False)
            return typed if clipped is None else clipped
        return typed
    head = (
        typed.head_end
        if typed.cutoff
        else head_end(typed.infos, keep_first=config.policy.keep_first)
    )
    low = max(typed.cutoff, head)
    kept = keep(config, decision, typed, head, force=force)
    if reduction is not None and decision.unit == "tokens":
        # cheap reduction whenever a compaction is due, cut or no cut: everything outside the
        # verbatim tail (old results inside a tool cycle included) and oversized messages
        end = tail_start(typed.running_totals(config.counter), len(typed), kept)
        reduced = reduce(config, typed, decision, low, end)
        if reduced is not None:
            if not force and reduced.events[-1].tokens_after <= target_tokens(config):
                return reduced  # cheap reduction was enough: no model call
            typed, decision = reduced, decide(config, reduced, reserve=reserve(config, reduced))
            kept = keep(config, decision, typed, head, force=force)
    totals = typed.running_totals(config.counter)
    found = memo.cut(typed.infos, totals, low=low, head=head, keep=kept)
    narrowed = found is None and config.policy.fits_target and kept != FIT_LEAST
    if narrowed:
        # the fitted tail starts inside a tool round (a long run of parallel results): fold the
        # completed rounds before the newest one rather than nothing
        found = memo.cut(typed.infos, totals, low=low, head=head, keep=FIT_LEAST)
    if found is None:
        return stall(
            config,
            typed,
            decision,
            force,
            "nothing_to_fold",
            _nothing_to_fold(config, typed, decision, low),
        )
    planned = _segment_plan(config, typed, decision, found, low=low, head=head, force=force)
    if narrowed and isinstance(planned, Plan):
        return dataclasses.replace(planned, narrowed=True)
    return planned


def _segment_plan(
    config: Config[S],
    state: ConversationState[S],
    decision: Decision,
    found: Cut,
    *,
    low: int,
    head: int,
    force: bool,
) -> ConversationState[S] | Plan[S]:
    """The plan that folds ``log[low:found.at]``, unless it waits or would gain too little."""
    probe = state.record(None, cutoff=found.at, head_end=head, pinned=found.pinned)
    folded_messages = found.at - low
    segment_estimate = state.estimate(config.counter) - probe.estimate(config.counter)
    refusal = _refusal(state.events)
    retry_at = None if refusal is None else refusal.retry_at_tokens
    stand_in = refusal is not None and refusal.degraded
    window = config.policy.input_window
    fits = window is None or decision.tokens <= window
    waiting = not force and retry_at is not None and segment_estimate < retry_at
    if waiting and (stand_in or not near_window(config, decision)):
        return state.record(None)  # the last summary was refused; wait for a bigger segment
    folded_tokens = counted(config, state, segment_estimate)
    folded = folded_messages if decision.unit == "messages" else folded_tokens
    remaining = decision.measured - folded
    gap = decision.limit - config.policy.target_limit
    if not force and fits and remaining >= decision.limit and folded < gap:
        return stall(
            config,
            state,
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
    return Plan(
        state=state,
        decision=decision,
        forced=force,
        head_end=head,
        request=request(config, state, low, found.at, head=head),
        pinned=found.pinned,
        waiting=waiting,
    )


def _checked(config: Config[S], state: object) -> ConversationState[S]:
    """``state``, once it is a state this configuration can compact."""
    if not isinstance(state, ConversationState):
        raise ConfigError(
            f"state={state!r} is not a ConversationState; build one with "
            "ConversationState(messages)"
        )
    summary = state.summary
    if summary is not None and type(summary) is not config.schema:
        raise ConfigError(
            f"this conversation was summarized with {type(summary).__name__}, but the "
            f"compactor's schema is {config.schema.__name__}; use one schema per conversation"
        )
    if config.archived and state.thread_id is None:
        raise ConfigError(
            "the compactor has an archive but the state has no thread_id; build it with "
            "ConversationState(messages, thread_id='...') so the archive can file it"
        )
    return state


def _nothing_to_fold(
    config: Config[Any], state: ConversationState[Any], decision: Decision, low: int
) -> Callable[[], str]:
    kept = len(state) - low
    return lambda: (
        f"{decision.reason}, but nothing can be folded: the kept first message and "
        f"the verbatim tail (keep={config.policy.keep!r}, widened to keep tool calls "
        f"with their results) already cover all {kept} messages after the summary; "
        "lower keep or raise the trigger"
    )


def keep(
    config: Config[Any],
    decision: Decision,
    state: ConversationState[Any],
    head: int,
    *,
    force: bool = False,
) -> tuple[Unit, int]:
    """The verbatim tail to keep: fitted to the target, the policy's, or the newest message.

    With ``keep=None`` (the default) the tail is the most recent messages that fit the target
    after the kept head ``log[:head]``, the header (at its budget, or its size without one) and,
    in a chat, the recall block (at its budget: `Policy.tail_recall`);
    a forced compaction keeps at most half of what follows the head and the last cutoff, so that
    it folds something even below the target.
    Past the window guard the window outranks ``keep``: only the newest message (widened to its
    tool round) must stay.
    """
    policy = config.policy
    if not policy.fits_target:
        past_guard = decision.unit == "tokens" and decision.tokens >= policy.guard_limit
        if past_guard and policy.input_window is not None:
            return ("messages", 1)
        return policy.keep_amount
    if decision.unit == "messages":
        fitted = policy.target_limit - head
        if force:
            fitted = min(fitted, (len(state) - max(head, state.cutoff)) // 2)
        return ("messages", max(1, fitted))
    counter = config.counter
    totals = state.running_totals(counter)
    length = len(state)
    estimate = max(1, state.estimate(counter))
    header = policy.header_limit
    if header is None:
        header = state.header_tokens(counter)
    header += policy.tail_recall  # the recall block chosen after the fold, in a chat
    room = math.floor((target_tokens(config) - header) * estimate / max(1, decision.tokens))
    room -= totals[head]
    if force:
        room = min(room, (totals[length] - totals[max(head, state.cutoff)]) // 2)
    start = bisect.bisect_left(totals, totals[length] - room, 0, length + 1)
    return ("tokens", totals[length] - totals[start] if start < length else 1)


def request(
    config: Config[S], state: ConversationState[Any], start: int, end: int, *, head: int
) -> SummaryRequest[S]:
    """The summarizer request for ``log[start:end]``, with the kept head ``log[:head]``."""
    summary = state.summary
    prior = summary if summary is not None else empty(config.schema)
    return SummaryRequest.for_segment(
        prior=prior,
        segment=segment(state, start, end),
        schema=config.schema,
        head=segment(state, 0, head) if head else None,
    )


def segment(state: ConversationState[Any], start: int, end: int) -> Segment:
    """``log[start:end]`` as the summarizer sees it."""
    return Segment(
        start=start,
        messages=tuple(state.log[start:end]),
        infos=tuple(state.infos[start:end]),
        format=state.format,
        authors=tuple(state.authors[start:end]),
        days=state.days_in(start, end),
        previous=preceding_prose(state.log, state.infos, state.authors, start),
    )


def stall(  # noqa: PLR0917 - an event's parts, in the order the stages know them
    config: Config[Any],
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
        at=config.clock(),
        reason=reason(),
        tokens_before=decision.tokens,
        tokens_after=decision.tokens,
        method=decision.method,
        forced=forced,
        stall=kind,
        over_window=overflow(config, state),
        **extra,
    )
    return state.record(event)


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
