"""Never block the agent, never lose what binds: fallback, repair, guards against a lossy model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from progsum import (
    Compactor,
    ConfigError,
    ConversationState,
    Policy,
    SummarizerError,
    Summary,
    SummaryRequest,
    SummaryUpdate,
)
from progsum.errors import ProviderError, SummaryValidationError
from progsum.summarizers import ExtractiveSummarizer
from progsum.summarizers._fallback import FallbackSummarizer, default_summarizer
from progsum.summary._update import Retirement
from progsum.testing import FunctionSummarizer, QueuedSummarizer
from tests.conversations import TRIP_RULE, spelled, trip_planning

SMALL = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 4))


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A healthy summarizer: one fact per segment naming its range."""
    segment = request.segment
    return SummaryUpdate(
        add={
            "established_facts": [
                f"Messages {spelled(segment.start)} to {spelled(segment.end - 1)} were read."
            ]
        }
    )


@pytest.mark.parametrize(
    "failure",
    [
        ProviderError("429 rate limited", status=429),
        ProviderError("529 overloaded", status=529),
        ProviderError("500 internal error", status=500),
        ProviderError("read timed out"),
        SummaryValidationError("tool input still invalid after 2 re-asks"),
        RuntimeError("unexpected bug in a summarizer"),
    ],
    ids=["429", "529", "500", "timeout", "validation", "bug"],
)
def test_fallback_degrades_instead_of_raising(failure: Exception) -> None:
    """A failing primary is replaced by the fallback; the event is degraded with the reason."""
    primary = QueuedSummarizer(failure)
    fallback = FunctionSummarizer(facts)
    compactor = Compactor(policy=SMALL, summarizer=FallbackSummarizer(primary, fallback))
    state = compactor.maybe_compact(ConversationState(trip_planning(12)))
    event = state.events[-1]
    assert event.outcome == "compacted"
    assert event.degraded
    assert event.degraded_reason is not None
    assert f"QueuedSummarizer failed ({type(failure).__name__}: {failure})" in event.degraded_reason
    assert event.degraded_reason.endswith("used FunctionSummarizer")
    assert len(primary.requests) == len(fallback.requests) == 1
    assert state.pending_repairs == (event,)


def test_fallback_keeps_the_prior_summary() -> None:
    """A degraded compaction adds the fallback's items and never empties the prior summary."""
    good = SummaryUpdate(add={"constraints": [TRIP_RULE], "decisions": ["Stay in Alfama."]})
    primary = QueuedSummarizer(good, ProviderError("529 overloaded", status=529))
    chain = FallbackSummarizer(primary, FunctionSummarizer(facts))
    compactor = Compactor(policy=SMALL, summarizer=chain)
    state = ConversationState(trip_planning(12))
    state = compactor.maybe_compact(state)
    before = state.summary
    assert before is not None
    state = compactor.maybe_compact(state.extend(trip_planning(12)[4:]))
    assert state.events[-1].degraded
    assert state.summary is not None
    assert state.summary.constraints == before.constraints
    assert state.summary.decisions == before.decisions
    assert TRIP_RULE in state.header


def test_fallback_passes_caller_mistakes_through() -> None:
    """Configuration mistakes are raised, not hidden behind a fallback."""
    primary = QueuedSummarizer(ConfigError("client is an AsyncAnthropic; use asummarize"))
    chain = FallbackSummarizer(primary, FunctionSummarizer(facts))
    with pytest.raises(ConfigError, match="AsyncAnthropic"):
        Compactor(policy=SMALL, summarizer=chain).maybe_compact(
            ConversationState(trip_planning(12))
        )


def test_every_summarizer_failing_raises_one_error() -> None:
    """When the whole chain fails, one SummarizerError lists every failure; the state is intact."""
    chain = FallbackSummarizer(
        QueuedSummarizer(ProviderError("529 overloaded", status=529)),
        QueuedSummarizer(RuntimeError("disk full")),
    )
    state = ConversationState(trip_planning(12))
    with pytest.raises(SummarizerError, match=r"every summarizer failed: .*529.*disk full"):
        Compactor(policy=SMALL, summarizer=chain).compact(state)
    assert state.events == ()


def test_fallback_needs_a_fallback() -> None:
    """A chain of one is a mistake with a suggested fix."""
    with pytest.raises(ConfigError, match="needs at least one fallback"):
        FallbackSummarizer(FunctionSummarizer(facts))


def test_async_fallback() -> None:
    """The async path falls back the same way."""
    chain = FallbackSummarizer(
        QueuedSummarizer(ProviderError("500", status=500)), FunctionSummarizer(facts)
    )
    compactor = Compactor(policy=SMALL, summarizer=chain)
    state = asyncio.run(compactor.amaybe_compact(ConversationState(trip_planning(12))))
    assert state.events[-1].degraded


def test_repair_resummarizes_degraded_segments() -> None:
    """repair() re-does degraded segments with the primary, oldest first, and records it."""
    primary = QueuedSummarizer(ProviderError("529 overloaded", status=529))
    chain = FallbackSummarizer(primary, FunctionSummarizer(facts))
    compactor = Compactor(policy=SMALL, summarizer=chain)
    state = compactor.maybe_compact(ConversationState(trip_planning(12)))
    degraded = state.events[-1]
    primary.enqueue(SummaryUpdate(add={"constraints": [TRIP_RULE]}))
    repaired = compactor.repair(state)
    event = repaired.events[-1]
    assert (event.outcome, event.repairs, event.folded) == (
        "repaired",
        degraded.number,
        degraded.folded,
    )
    assert degraded.folded is not None
    assert primary.requests[-1].segment.start == degraded.folded[0]
    assert repaired.summary is not None
    assert repaired.summary.constraints[0].text == TRIP_RULE
    assert repaired.cutoff == state.cutoff
    assert repaired.pending_repairs == ()
    assert compactor.repair(repaired) is repaired  # nothing left to repair


def test_failed_repair_leaves_state_unchanged() -> None:
    """A repair that fails again raises and changes nothing."""
    primary = QueuedSummarizer(ProviderError("529", status=529))
    compactor = Compactor(
        policy=SMALL, summarizer=FallbackSummarizer(primary, FunctionSummarizer(facts))
    )
    state = compactor.maybe_compact(ConversationState(trip_planning(12)))
    primary.enqueue(ProviderError("still overloaded", status=529))
    with pytest.raises(SummarizerError, match="still overloaded"):
        compactor.repair(state)
    assert len(state.pending_repairs) == 1


def test_async_repair() -> None:
    """arepair() awaits the primary."""
    primary = QueuedSummarizer(ProviderError("529", status=529))
    compactor = Compactor(
        policy=SMALL, summarizer=FallbackSummarizer(primary, FunctionSummarizer(facts))
    )
    state = compactor.maybe_compact(ConversationState(trip_planning(12)))
    primary.enqueue(SummaryUpdate(add={"decisions": ["Stay in Alfama."]}))
    repaired = asyncio.run(compactor.arepair(state))
    assert repaired.events[-1].outcome == "repaired"


PROHIBITION = "Never touch the production database."
BUDGET = "The budget is at most $3,000."
ORDER = "Order W-12345-Z ships to 12 Rua Augusta, Lisbon."
DEADLINE = "Everything must be done by 2026-12-15."


def lossy_session(turns: int) -> list[dict[str, Any]]:
    """A long task whose binding rules are stated in the first few turns, then chatter."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Migrate the orders service to the new cluster."},
        {"role": "assistant", "content": "Sure. What must I respect?"},
        {"role": "user", "content": f"{PROHIBITION} {BUDGET}"},
        {"role": "assistant", "content": "Understood."},
        {"role": "user", "content": f"{ORDER} {DEADLINE}"},
        {"role": "assistant", "content": "Noted the order and the deadline."},
    ]
    for n in range(turns):
        messages.append({"role": "user", "content": f"Status of step {n}?"})
        messages.append({"role": "assistant", "content": f"Step {n} is done; moving on. " * 3})
    return messages


def lossy(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A forgetful model: the first pass keeps the budget and the order, then it drifts.

    It never writes the prohibition or the deadline, leaves out everything it wrote before,
    adds vaguer paraphrases of it, and tries to retire the binding items without saying why.
    """
    prior = request.prior
    if not prior.constraints:
        return SummaryUpdate(
            add={"constraints": [BUDGET], "established_facts": [ORDER]},
            objective="Migrate the orders service.",
        )
    binding = [i.id for f in ("decisions", "constraints") for i in getattr(prior, f)]
    return SummaryUpdate(
        add={
            "constraints": ["Keep spending reasonable (about 3k)."],
            "established_facts": [
                f"An order is shipping somewhere (step {request.segment.start})."
            ],
        },
        retire=tuple(Retirement(id=i) for i in binding),
    )


def test_lossy_model_cannot_erase_what_binds_over_100_compactions() -> None:
    """Across 100 compactions by a drifting model, binding items, prohibitions and values stay."""
    compactor = Compactor(
        policy=Policy(trigger=("messages", 10), keep=("messages", 2)),
        summarizer=FunctionSummarizer(lossy),
    )
    state: ConversationState[Summary] = ConversationState()
    for message in lossy_session(400):
        state = compactor.maybe_compact(state.append(message))
    compactions = [e for e in state.events if e.outcome == "compacted"]
    assert len(compactions) >= 100
    header = state.header
    assert BUDGET in header  # binding: retirement without a reason is refused every time
    assert PROHIBITION in header  # never written by the model: the guard added it verbatim
    assert "$3,000" in header
    assert state.summary is not None
    extracted = [i for i in state.summary.constraints if i.origin == "extracted"]
    assert [i.text for i in extracted] == [PROHIBITION, DEADLINE]  # the guard, then the ledger
    assert ORDER in header  # left out by every later update: carried forward by the merge
    assert "W-12345-Z" in header
    assert state.summary.retired == ()  # every reasonless retirement was refused
    # the deadline the model never captured is the user's sentence, restored by the ledger
    first = compactions[0]
    assert first.merge is not None
    assert first.merge.restored
    assert first.missing_values == ()
    assert "2026-12-15" in header


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(None, True), (429, True), (500, True), (529, True), (408, True), (400, False), (401, False)],
)
def test_provider_error_says_whether_to_retry(status: int | None, *, retryable: bool) -> None:
    """Rate limits, overloads, 5xx, timeouts are retryable; a rejected request is not."""
    assert ProviderError("x", status=status).retryable is retryable


def test_default_summarizer_is_offline_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ANTHROPIC_API_KEY the default is the extractive summarizer: no network, no key."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert isinstance(default_summarizer(), ExtractiveSummarizer)
    assert isinstance(Compactor(policy=SMALL).summarizer, ExtractiveSummarizer)


def test_default_summarizer_uses_claude_with_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a key the default is Claude, falling back to the extractive summarizer."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    chain = default_summarizer()
    assert isinstance(chain, FallbackSummarizer)
    assert type(chain.primary).__name__ == "AnthropicSummarizer"
    assert isinstance(chain.fallbacks[0], ExtractiveSummarizer)
