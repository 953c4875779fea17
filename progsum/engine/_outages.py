"""Failure backoff: when a failing summarizer or archive is tried again, and what folds meanwhile.

A failure is recorded as a ``failed`` event with the turn of the next try (2, 4, 8, … turns, up to
the policy's ``failure_backoff``). While the summarizer backs off and the context nears the
window, the extractive summarizer folds instead: deterministic, marked degraded, repairable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Literal

from progsum.engine._config import Config
from progsum.engine._plan import Plan
from progsum.errors import ProviderError, SummarizerError
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summary._schema import SummaryT as S
from progsum.summary._update import SummaryUpdate

__all__ = [
    "after_failure",
    "backing_off",
    "degraded_update",
    "failures",
    "first_clause",
    "retry_turn",
]

Dependency = Literal["summarizer", "archive"]


def failures(state: ConversationState[Any], what: Dependency) -> list[CompactionEvent]:
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


def backing_off(
    state: ConversationState[Any],
    what: Dependency,
    clock: Callable[[], datetime] | None = None,
) -> bool:
    """Whether the last failure of ``what`` asks to wait beyond this turn.

    It does until the log reaches its ``retry_at`` and, with a ``clock``, until the time the
    provider asked for (``not_before``); the clock is read only when there is such a time.
    """
    found = failures(state, what)
    last = found[-1] if found else None
    if last is None:
        return False
    if last.retry_at is not None and len(state) < last.retry_at:
        return True
    return clock is not None and last.not_before is not None and clock() < last.not_before


def retry_turn(config: Config[Any], state: ConversationState[Any], what: Dependency) -> int:
    """The log length at which ``what`` is tried again after one more failure."""
    cap = config.policy.failure_backoff or 1
    attempts = len(failures(state, what)) + 1
    return len(state) + min(cap, int(2**attempts))


def after_failure(config: Config[S], plan: Plan[S], exc: SummarizerError) -> Plan[S]:
    """The plan on a state that records the summarizer's failure and the turn of the next try."""
    state = plan.state
    retry = retry_turn(config, state, "summarizer")
    decision = plan.decision
    meanwhile = (
        ", an extractive fold keeps the context under the window meanwhile"
        if decision.tokens >= config.policy.guard_limit
        else ""
    )
    at = config.clock()
    wait = exc.retry_after if isinstance(exc, ProviderError) else None
    not_before = None if wait is None else at + timedelta(seconds=wait)
    when = (
        ""
        if not_before is None
        else f" and not before {not_before:%H:%M:%S} UTC (the provider's retry-after)"
    )
    event = CompactionEvent(
        number=len(state.events) + 1,
        outcome="failed",
        at=at,
        reason=f"{exc}; backing off: the summarizer is tried again at message {retry}"
        f"{when}{meanwhile}",
        tokens_before=decision.tokens,
        tokens_after=decision.tokens,
        method=decision.method,
        failure="summarizer",
        retry_at=retry,
        not_before=not_before,
    )
    return dataclasses.replace(plan, state=state.record(event))


def degraded_update(plan: Plan[Any]) -> SummaryUpdate:
    """A deterministic extractive update for the plan, marked degraded for `repair`."""
    update = ExtractiveSummarizer().summarize(plan.request)
    if plan.waiting:
        degraded = (
            "the last summary was refused as not smaller; near the window, folded "
            "extractively until the segment doubles"
        )
    else:
        found = failures(plan.state, "summarizer")
        why = found[-1].reason if found else "the summarizer is unavailable"
        degraded = f"summarizer backing off ({first_clause(why, '; backing off')})"
    return update.model_copy(update={"degraded": degraded})


def first_clause(text: str, before: str = "; the conversation") -> str:
    """``text`` up to ``before`` (an error's advice, which a backing-off engine replaces)."""
    return text.split(before, maxsplit=1)[0]


def _backed_off(event: CompactionEvent) -> bool:
    """A compaction folded by the extractive stand-in while the summarizer was backing off."""
    return bool(event.degraded_reason and event.degraded_reason.startswith("summarizer backing"))
