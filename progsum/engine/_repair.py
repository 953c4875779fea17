"""The repair stage: a segment a fallback folded is summarized again by the preferred summarizer.

The segment is read back from the log and its update merged into the current summary, recorded
as a ``repaired`` event. Nothing is retired by a repair's absence; the fallback's items stay.
"""

from __future__ import annotations

from typing import cast

from progsum.engine._config import Config
from progsum.engine._fold import merged
from progsum.engine._measure import count, decide
from progsum.engine._plan import Plan, request
from progsum.engine._values import keep_values, kept_prose
from progsum.errors import SummarizerError
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.summarizers._fallback import FallbackSummarizer
from progsum.summary._request import AsyncSummarizer, Summarizer
from progsum.summary._schema import SummaryT as S
from progsum.summary._update import SummaryUpdate

__all__ = ["preferred", "repair_plan", "repaired"]


def preferred(summarizer: object) -> Summarizer | AsyncSummarizer:
    """The summarizer a repair should use: a fallback chain's primary, else the summarizer."""
    if isinstance(summarizer, FallbackSummarizer):
        return summarizer.primary
    return cast("Summarizer | AsyncSummarizer", summarizer)


def repair_plan(config: Config[S], state: ConversationState[S], event: CompactionEvent) -> Plan[S]:
    """The plan that folds ``event``'s segment again into the current summary."""
    assert event.folded is not None  # compacted events always fold  # noqa: S101
    asked = request(config, state, *event.folded, head=state.head_end)
    return Plan(state, decide(config, state), forced=True, head_end=state.head_end, request=asked)


def repaired(
    config: Config[S], plan: Plan[S], event: CompactionEvent, update: SummaryUpdate
) -> ConversationState[S]:
    """The state with the repair's update merged and a ``repaired`` event.

    Raises:
        SummarizerError: the repair was itself degraded; nothing changed.
    """
    if update.degraded:
        raise SummarizerError(
            f"the repair of messages {event.folded} was itself degraded ({update.degraded}); "
            "the state is unchanged, try again when the preferred summarizer is available"
        )
    state = plan.state
    number = len(state.events) + 1
    segment = plan.request.segment
    summary, report, extracted = merged(config, plan.request, update, number)
    summary, report, _ = keep_values(
        config, state, summary, report, state.ledger, kept_prose(state), number
    )
    tokens_after, _ = count(config, state.record(None, summary=summary))
    done = CompactionEvent(
        number=number,
        outcome="repaired",
        at=config.clock(),
        reason=f"repaired compaction {event.number} ({event.degraded_reason})",
        tokens_before=plan.decision.tokens,
        tokens_after=tokens_after,
        method=plan.decision.method,
        folded=(segment.start, segment.end),
        forced=True,
        repairs=event.number,
        usage=update.usage,
        merge=report,
        extracted=extracted,
    )
    return state.record(done, summary=summary)
