"""The drivers: one sync and one async sequence of the stages, for one turn or one repair.

plan → summarize (the only call out, besides the archive) → fold (contract, merge, guards,
ledger) → archive → consolidate → retry pending archive writes → observe. The stages decide;
the drivers only sequence them. They differ only where they await the summarizer and the
archive (the archive's I/O runs in a worker thread, off the event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Generic, cast

from progsum.engine.archive import PendingMemo, archived, retry
from progsum.engine.config import Config, conversation_kind
from progsum.engine.consolidate import consolidate, consolidation
from progsum.engine.fold import fold
from progsum.engine.measure import decide
from progsum.engine.outages import after_failure, backing_off, degraded_update
from progsum.engine.plan import CutMemo, Plan, plan
from progsum.engine.recall import recalled
from progsum.engine.repair import repair_plan, repaired
from progsum.errors import ConfigError, ProgsumError, SummarizerError
from progsum.judge.seam import using
from progsum.observe import compaction_span, summarizer_span
from progsum.state.conversation import ConversationState
from progsum.store.archive import Archive
from progsum.summary.header import work_lines
from progsum.summary.request import (
    AsyncSummarizer,
    ConsolidationRequest,
    Summarizer,
    async_consolidator,
    call_async,
    checked_update,
)
from progsum.summary.schema import SummaryT as S
from progsum.summary.update import SummaryUpdate

__all__ = ["Engine", "Observe", "arepair", "arun", "repair", "run"]


def _in_conversation(
    engine: Engine[S], state: ConversationState[Any]
) -> tuple[Engine[S], contextlib.AbstractContextManager[object]]:
    """The engine for one run over ``state``, and its judge and conversation kind in force.

    Without a kind from the caller it is read off the conversation's structure
    (`ConversationState.kind`, `progsum.judge.conversation`); the policy is the one for that
    kind (`Policy.in_conversation`: a chat's default header budget, an agent's grown to hold its
    work state) and the judge reads every
    sentence as said in it (`progsum.judge.seam`).
    """
    config = engine.config
    kind = conversation_kind(config, state)
    work = 0
    if kind == "agent" and state.summary is not None:
        work = config.counter.count_text("".join(work_lines(state.summary)))
    policy = config.policy.in_conversation(kind, work=work)
    if policy is not config.policy:
        engine = replace(engine, config=replace(config, policy=policy))
    return engine, using(config.judge, conversation=kind, prose_tags=config.prose_tags)


def run(
    engine: Engine[S],
    state: ConversationState[Any],
    *,
    force: bool,
    guarded: bool,
    observe: Observe,
) -> ConversationState[S]:
    """One turn, synchronously, under the engine's judge. ``guarded``: failures back off.

    Last, the recall for the newest message a person wrote (`progsum.engine.recall`).
    """
    engine, judging = _in_conversation(engine, state)
    with judging:
        after = _run(engine, state, force=force, guarded=guarded, observe=observe)
        return recalled(engine.config, engine.archive, after)


async def arun(
    engine: Engine[S],
    state: ConversationState[Any],
    *,
    force: bool,
    guarded: bool,
    observe: Observe,
) -> ConversationState[S]:
    """One turn, async, under the engine's judge; the archive's ranking runs in a worker thread."""
    engine, judging = _in_conversation(engine, state)
    with judging:  # asyncio.to_thread runs in a copy of this context
        after = await _arun(engine, state, force=force, guarded=guarded, observe=observe)
        if engine.archive is None:
            return recalled(engine.config, None, after)
        return await asyncio.to_thread(recalled, engine.config, engine.archive, after)


def repair(
    engine: Engine[S],
    state: ConversationState[Any],
    chosen: Summarizer | AsyncSummarizer,
    observe: Observe,
) -> ConversationState[S]:
    """Summarize again, with ``chosen``, every segment a fallback folded (under the judge)."""
    engine, judging = _in_conversation(engine, state)
    with judging:
        return _repair(engine, state, chosen, observe)


async def arepair(
    engine: Engine[S],
    state: ConversationState[Any],
    chosen: Summarizer | AsyncSummarizer,
    observe: Observe,
) -> ConversationState[S]:
    """Async `repair`."""
    engine, judging = _in_conversation(engine, state)
    with judging:
        return await _arepair(engine, state, chosen, observe)


Observe = Callable[[ConversationState[Any], ConversationState[Any], object], ConversationState[Any]]
"""Logs, traces and hands on the events ``after`` adds to ``before`` (``span`` or None)."""


@dataclass(frozen=True, slots=True)
class Engine(Generic[S]):
    """What the drivers run with: the configuration, the summarizer, the archive, the memos."""

    config: Config[S]
    summarizer: Summarizer | AsyncSummarizer
    archive: Archive | None
    cuts: CutMemo
    pending: PendingMemo


def _run(
    engine: Engine[S],
    state: ConversationState[Any],
    *,
    force: bool,
    guarded: bool,
    observe: Observe,
) -> ConversationState[S]:
    """One turn, synchronously. ``guarded``: failures back off instead of raising."""
    planned = plan(engine.config, engine.cuts, state, force=force)
    if isinstance(planned, ConversationState):
        after = _fitted(engine, state, _retried(engine, planned) if guarded else planned)
        return after if after is state else observe(state, after, None)
    with compaction_span() as span:
        call = _Call(planned)
        if _asks(engine, planned, guarded):
            if not callable(getattr(engine.summarizer, "summarize", None)):
                raise ConfigError(
                    f"{type(engine.summarizer).__name__} is async-only; use await "
                    "compactor.amaybe_compact()"
                )
            with _calling(engine, call, guarded):
                call.update = cast("Summarizer", engine.summarizer).summarize(planned.request)
        planned, update = call.plan, call.update
        done, folded = _folded(engine, planned, update)
        if not folded:
            return observe(state, _retried(engine, done), span)
        done = archived(engine.config, engine.archive, planned.state, done, guarded=guarded)
        request = consolidation(engine.config, done)
        if request is not None:
            asked = _consolidated(engine, request) if _may_ask(engine, done, guarded) else _WAIT
            done = consolidate(engine.config, done, request, *asked)
        return observe(state, _retried(engine, done) if guarded else done, span)


async def _arun(
    engine: Engine[S],
    state: ConversationState[Any],
    *,
    force: bool,
    guarded: bool,
    observe: Observe,
) -> ConversationState[S]:
    """One turn, awaiting the summarizer and running the archive's I/O in a worker thread."""
    planned = plan(engine.config, engine.cuts, state, force=force)
    if isinstance(planned, ConversationState):
        after = _fitted(engine, state, await _aretried(engine, planned) if guarded else planned)
        return after if after is state else observe(state, after, None)
    with compaction_span() as span:
        call = _Call(planned)
        if _asks(engine, planned, guarded):
            with _calling(engine, call, guarded):
                call.update = await call_async(engine.summarizer, planned.request)
        planned, update = call.plan, call.update
        done, folded = _folded(engine, planned, update)
        if not folded:
            return observe(state, await _aretried(engine, done), span)
        if engine.archive is not None:
            done = await asyncio.to_thread(
                archived, engine.config, engine.archive, planned.state, done, guarded=guarded
            )
        request = consolidation(engine.config, done)
        if request is not None:
            asked = (
                await _aconsolidated(engine, request) if _may_ask(engine, done, guarded) else _WAIT
            )
            done = consolidate(engine.config, done, request, *asked)
        return observe(state, await _aretried(engine, done) if guarded else done, span)


def _repair(
    engine: Engine[S],
    state: ConversationState[Any],
    chosen: Summarizer | AsyncSummarizer,
    observe: Observe,
) -> ConversationState[S]:
    """Summarize again, with ``chosen``, every segment a fallback folded, oldest first."""
    if not callable(getattr(chosen, "summarize", None)):
        raise ConfigError(f"{type(chosen).__name__} is async-only; use await compactor.arepair()")
    typed = cast("ConversationState[S]", state)
    for event in state.pending_repairs:
        planned = repair_plan(engine.config, typed, event)
        with _errors(chosen, planned):
            update = cast("Summarizer", chosen).summarize(planned.request)
        typed = repaired(engine.config, planned, event, checked_update(chosen, update))
    return observe(state, typed, None)


async def _arepair(
    engine: Engine[S],
    state: ConversationState[Any],
    chosen: Summarizer | AsyncSummarizer,
    observe: Observe,
) -> ConversationState[S]:
    """Async `repair`."""
    typed = cast("ConversationState[S]", state)
    for event in state.pending_repairs:
        planned = repair_plan(engine.config, typed, event)
        with _errors(chosen, planned):
            update = await call_async(chosen, planned.request)
        typed = repaired(engine.config, planned, event, checked_update(chosen, update))
    return observe(state, typed, None)


@dataclass(slots=True)
class _Call(Generic[S]):
    """One summarizer call of a turn: its answer, or the plan after a recorded failure."""

    plan: Plan[S]
    update: object = None


@contextlib.contextmanager
def _calling(engine: Engine[S], call: _Call[S], guarded: bool) -> Iterator[None]:
    """Around a summarizer call: its span, its errors named, and a failure recorded if guarded.

    A guarded failure does not raise: ``call.plan`` becomes the plan on a state with the
    ``failed`` event and the turn of the next try (`progsum.engine.outages`).
    """
    planned = call.plan
    try:
        with (
            _errors(engine.summarizer, planned),
            summarizer_span(engine.summarizer, "summarize") as span,
        ):
            yield
            span.done(call.update)
    except SummarizerError as exc:
        if not guarded:
            raise
        call.plan = after_failure(engine.config, planned, exc)


_WAIT = (None, "not asked: the summarizer is backing off")
"""The consolidation's proposal and failure while the summarizer backs off: no model call."""


def _may_ask(engine: Engine[Any], state: ConversationState[Any], guarded: bool) -> bool:
    """Whether the summarizer may be called for a consolidation (not while it backs off)."""
    return not (guarded and backing_off(state, "summarizer", engine.config.clock))


def _asks(engine: Engine[Any], planned: Plan[Any], guarded: bool) -> bool:
    """Whether this turn calls the summarizer (not while waiting or backing off)."""
    if planned.waiting:
        return False
    return not (guarded and backing_off(planned.state, "summarizer", engine.config.clock))


def _folded(
    engine: Engine[S], planned: Plan[S], update: object
) -> tuple[ConversationState[S], bool]:
    """The state after the summarizer's answer, and whether it folded (and is to be archived).

    With no update (the call failed or was skipped), an extractive stand-in folds only once the
    context nears the window; below it the turn just records the attempt.
    """
    if update is None:
        if planned.decision.tokens < engine.config.policy.guard_limit:
            return planned.state.record(None), False
        update = degraded_update(planned)
    return fold(engine.config, planned, checked_update(engine.summarizer, update)), True


def _consolidated(
    engine: Engine[Any], request: ConsolidationRequest[Any]
) -> tuple[SummaryUpdate | None, str | None]:
    """The summarizer's consolidation proposal and the failure, if it has ``consolidate``."""
    call = getattr(engine.summarizer, "consolidate", None)
    if not callable(call):
        return None, None
    try:
        with summarizer_span(engine.summarizer, "consolidate") as span:
            proposal = checked_update(engine.summarizer, call(request), "consolidate")
            span.done(proposal)
    except Exception as exc:  # noqa: BLE001 - any failure falls back to dropping the oldest
        return None, f"{type(exc).__name__}: {exc}"
    return proposal, None


async def _aconsolidated(
    engine: Engine[Any], request: ConsolidationRequest[Any]
) -> tuple[SummaryUpdate | None, str | None]:
    """Async `_consolidated`: awaits ``aconsolidate``, or runs ``consolidate`` in a thread."""
    try:
        with summarizer_span(engine.summarizer, "consolidate") as span:
            call = async_consolidator(engine.summarizer)
            proposal = None
            if call is not None:
                proposal = checked_update(engine.summarizer, await call(request), "consolidate")
            span.done(proposal)
    except Exception as exc:  # noqa: BLE001 - any failure falls back to dropping the oldest
        return None, f"{type(exc).__name__}: {exc}"
    return proposal, None


def _fitted(
    engine: Engine[S], before: ConversationState[Any], after: ConversationState[S]
) -> ConversationState[S]:
    """``after``, its header consolidated when a turn that folds nothing nears the window.

    A due turn that folds nothing (a stall, a wait) still brings a header the window has no
    room for back under (`consolidation`), by the drop rule alone (no model call), once: only
    in the call that made the turn's attempt (``before`` had not).
    """
    if before.attempted_at == len(before) or after.attempted_at != len(after):
        return after
    if not decide(engine.config, after).due:
        return after
    request = consolidation(engine.config, after)
    return after if request is None else consolidate(engine.config, after, request, None, None)


def _retried(engine: Engine[S], state: ConversationState[S]) -> ConversationState[S]:
    return retry(engine.config, engine.archive, engine.pending, state)


async def _aretried(engine: Engine[S], state: ConversationState[S]) -> ConversationState[S]:
    if engine.archive is None or not engine.pending.pending(state):
        return state
    return await asyncio.to_thread(_retried, engine, state)


@contextlib.contextmanager
def _errors(summarizer: object, planned: Plan[Any]) -> Iterator[None]:
    """Turn any failure of a summarizer call into a SummarizerError naming the segment."""
    try:
        yield
    except ProgsumError:
        raise
    except Exception as exc:
        segment = planned.request.segment
        raise SummarizerError(
            f"{type(summarizer).__name__} failed on messages {segment.start}-{segment.end - 1}: "
            f"{type(exc).__name__}: {exc}; the state is unchanged, so the agent can go on and the "
            "next turn will try again (wrap it in a fallback summarizer to degrade instead)"
        ) from exc
