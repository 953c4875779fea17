"""One sequence of the stages for one turn (`turn`) or one repair (`repairing`), sync or async.

plan → summarize (the only call out, besides the archive) → fold (contract, merge, guards,
ledger) → archive → consolidate → retry pending archive writes → observe → recall. The stages
decide; `turn` and `repairing` sequence them once, as generators that yield each piece of I/O as
an effect (`progsum.engine._effects`): `step` performs the effects in line (the sync driver),
`astep` awaits them (the summarizer's async method; the archive's I/O in a worker thread, off the
event loop). The one other difference, ``blocking``: the sync driver cannot call an async-only
summarizer, and says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Generic, TypeVar, cast

from progsum._observe import compaction_span, summarizer_span
from progsum.engine._archive import PendingMemo, archived, retry
from progsum.engine._config import Config, conversation_kind
from progsum.engine._consolidate import consolidate, consolidation
from progsum.engine._effects import Blocking, Consolidate, Effect, Steps, Summarize
from progsum.engine._fold import fold
from progsum.engine._measure import decide
from progsum.engine._outages import after_failure, backing_off, degraded_update
from progsum.engine._plan import CutMemo, Plan, plan
from progsum.engine._recall import recalled
from progsum.engine._repair import repair_plan, repaired
from progsum.errors import ConfigError, ProgsumError, SummarizerError
from progsum.judge._seam import using
from progsum.state._conversation import ConversationState
from progsum.store._archive import Archive
from progsum.summary._header import work_lines
from progsum.summary._request import (
    AsyncSummarizer,
    ConsolidationRequest,
    Summarizer,
    async_consolidator,
    checked_update,
)
from progsum.summary._schema import SummaryT as S
from progsum.summary._update import SummaryUpdate

__all__ = ["Engine", "Observe", "repairing", "turn"]

T = TypeVar("T")


def _in_conversation(
    engine: Engine[S], state: ConversationState[Any]
) -> tuple[Engine[S], contextlib.AbstractContextManager[object]]:
    """The engine for one run over ``state``, and its judge and conversation kind in force.

    Without a kind from the caller it is read off the conversation's structure
    (`ConversationState.kind`, `progsum.judge._conversation`); the policy is the one for that
    kind (`Policy.in_conversation`: a chat's default header budget, an agent's grown to hold its
    work state) and the judge reads every
    sentence as said in it (`progsum.judge._seam`).
    """
    config = engine.config
    kind = conversation_kind(config, state)
    work = 0
    if kind == "agent" and state.summary is not None:
        work = config.counter.count_text("".join(work_lines(state.summary)))
    # a conversation read as an agent's that has called no tool: a person and an assistant
    tools = config.conversation is not None or state.called
    policy = config.policy.in_conversation(kind, work=work, tools=tools)
    if policy is not config.policy:
        engine = replace(engine, config=replace(config, policy=policy))
    return engine, using(config.judge, conversation=kind, prose_tags=config.prose_tags)


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


@dataclass(frozen=True, slots=True)
class _Turn:
    """How a turn runs.

    ``force``: compact now; ``guarded``: failures back off instead of raising; ``observe``: logs,
    traces and hands on the new events; ``blocking``: the sync driver, which cannot call an
    async-only summarizer.
    """

    force: bool
    guarded: bool
    observe: Observe
    blocking: bool


def turn(
    engine: Engine[S],
    state: ConversationState[Any],
    *,
    force: bool,
    guarded: bool,
    observe: Observe,
    blocking: bool,
) -> Steps[ConversationState[S]]:
    """One turn under the engine's judge, then the recall for the newest message a person wrote.

    The recall (`progsum.engine._recall`) ranks the archive: blocking I/O, so an effect. The
    judge's context stays in force in the async driver's worker threads (`asyncio.to_thread`
    runs in a copy of it).
    """
    engine, judging = _in_conversation(engine, state)
    with judging:
        options = _Turn(force, guarded, observe, blocking=blocking)
        after = yield from _compaction(engine, state, options)
        return (
            yield from _archive_io(engine, partial(recalled, engine.config, engine.archive, after))
        )


def _compaction(
    engine: Engine[S], state: ConversationState[Any], turn: _Turn
) -> Steps[ConversationState[S]]:
    """Plan, summarize, fold, archive, consolidate, retry and observe one turn."""
    guarded, observe = turn.guarded, turn.observe
    planned = plan(engine.config, engine.cuts, state, force=turn.force)
    if isinstance(planned, ConversationState):
        retried = (yield from _retried(engine, planned)) if guarded else planned
        after = _fitted(engine, state, retried)
        return after if after is state else observe(state, after, None)
    with compaction_span() as span:
        call = _Call(planned)
        if _asks(engine, planned, guarded):
            if turn.blocking:
                _require_sync(engine.summarizer, "amaybe_compact")
            with _calling(engine, call, guarded):
                call.update = yield Summarize(engine.summarizer, planned.request)
        planned, update = call.plan, call.update
        done, folded = _folded(engine, planned, update)
        if not folded:
            return observe(state, (yield from _retried(engine, done)), span)
        write = partial(
            archived, engine.config, engine.archive, planned.state, done, guarded=guarded
        )
        done = yield from _archive_io(engine, write)
        request = consolidation(engine.config, done)
        if request is not None:
            asked: tuple[SummaryUpdate | None, str | None] = _WAIT
            if _may_ask(engine, done, guarded):
                asked = yield from _consolidated(engine, request, turn.blocking)
            done = consolidate(engine.config, done, request, *asked)
        if guarded:
            done = yield from _retried(engine, done)
        return observe(state, done, span)


def repairing(
    engine: Engine[S],
    state: ConversationState[Any],
    chosen: Summarizer | AsyncSummarizer,
    observe: Observe,
    *,
    blocking: bool,
) -> Steps[ConversationState[S]]:
    """Summarize again, with ``chosen``, every segment a fallback folded, oldest first."""
    engine, judging = _in_conversation(engine, state)
    with judging:
        if blocking:
            _require_sync(chosen, "arepair")
        typed = cast("ConversationState[S]", state)
        for event in state.pending_repairs:
            planned = repair_plan(engine.config, typed, event)
            with _errors(chosen, planned):
                update = yield Summarize(chosen, planned.request)
            typed = repaired(engine.config, planned, event, checked_update(chosen, update))
        return observe(state, typed, None)


def _require_sync(summarizer: object, entry: str) -> None:
    """Refuse, for the sync driver, a summarizer that has only ``asummarize``, naming ``entry``."""
    if not callable(getattr(summarizer, "summarize", None)):
        raise ConfigError(
            f"{type(summarizer).__name__} is async-only; use await compactor.{entry}()"
        )


@dataclass(slots=True)
class _Call(Generic[S]):
    """One summarizer call of a turn: its answer, or the plan after a recorded failure."""

    plan: Plan[S]
    update: object = None


@contextlib.contextmanager
def _calling(engine: Engine[S], call: _Call[S], guarded: bool) -> Iterator[None]:
    """Around a summarizer call: its span, its errors named, and a failure recorded if guarded.

    A guarded failure does not raise: ``call.plan`` becomes the plan on a state with the
    ``failed`` event and the turn of the next try (`progsum.engine._outages`).
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
    engine: Engine[Any], request: ConsolidationRequest[Any], blocking: bool
) -> Steps[tuple[SummaryUpdate | None, str | None]]:
    """The summarizer's consolidation proposal and the failure, if it can consolidate.

    It can when it has ``consolidate``, or (for the async driver) ``aconsolidate``.
    """
    summarizer = engine.summarizer
    if blocking:
        able = callable(getattr(summarizer, "consolidate", None))
    else:
        able = async_consolidator(summarizer) is not None
    if not able:
        return None, None
    try:
        with summarizer_span(summarizer, "consolidate") as span:
            answer = yield Consolidate(summarizer, request)
            proposal = checked_update(summarizer, answer, "consolidate")
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


def _retried(engine: Engine[S], state: ConversationState[S]) -> Steps[ConversationState[S]]:
    """``state`` after writing the segments the archive refused earlier, if any wait."""
    if engine.archive is None or not engine.pending.pending(state):
        return state
    return (
        yield from _archive_io(
            engine, partial(retry, engine.config, engine.archive, engine.pending, state)
        )
    )


def _archive_io(engine: Engine[Any], work: Callable[[], T]) -> Generator[Effect, object, T]:
    """``work()``: the archive's blocking I/O, an effect when there is an archive, else in line."""
    if engine.archive is None:
        return work()
    return cast("T", (yield Blocking(work)))


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
