"""A fallback chain falls back on bad answers too: a non-update, or an update naming no field.

A member that returns something other than a `SummaryUpdate`, or an update adding to a field the
request's schema does not have, has failed like one that raised: the chain tries the next member
and marks the answer degraded with the reason, for summaries and consolidations, sync and async.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from progsum import (
    Compactor,
    ConversationState,
    Policy,
    SummarizerError,
    Summary,
    SummaryRequest,
    SummaryUpdate,
)
from progsum.summarizers import ExtractiveSummarizer
from progsum.summarizers._fallback import FallbackSummarizer
from progsum.summary._request import ConsolidationRequest
from progsum.summary._schema import Item
from progsum.summary._update import Retirement
from progsum.testing import FunctionSummarizer, QueuedSummarizer
from tests.conversations import trip_planning

SMALL = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 4))
GOOD = SummaryUpdate(add={"established_facts": ["The hotel is in Alfama."]})
UNKNOWN_FIELD = SummaryUpdate(add={"established_facts": ["Kept?"], "budgets": ["At most €3,000."]})


def not_an_update(_: SummaryRequest[Any]) -> Any:
    """A buggy summarizer: answers a plain dict instead of a SummaryUpdate."""
    return {"add": {"established_facts": ["The hotel is in Alfama."]}}


class Consolidating:
    """A chain member whose consolidate answers ``answer``, recording each request."""

    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.requests: list[ConsolidationRequest[Any]] = []

    def summarize(self, _: SummaryRequest[Any]) -> SummaryUpdate:
        """Not used here: consolidation is what these tests exercise."""
        return SummaryUpdate()

    def consolidate(self, request: ConsolidationRequest[Any]) -> Any:
        """Record the request and answer the scripted value."""
        self.requests.append(request)
        return self.answer


class AsyncConsolidating(Consolidating):
    """A chain member with an async consolidate as well."""

    async def aconsolidate(self, request: ConsolidationRequest[Any]) -> Any:
        """Record the request and answer the scripted value."""
        return self.consolidate(request)


def consolidation_request() -> ConsolidationRequest[Any]:
    """A summary with two duplicate open threads, over a small budget."""
    summary = Summary(
        open_threads=(
            Item(id="O1", text="Is Sintra worth a day?", source=(1, 5)),
            Item(id="O2", text="Is Sintra worth a full day?", source=(5, 9)),
        )
    )
    return ConsolidationRequest(summary=summary, schema=Summary, budget=20, tokens=40)


def consolidate(
    chain: FallbackSummarizer, request: ConsolidationRequest[Any], mode: str
) -> SummaryUpdate:
    """The chain's consolidation of ``request``, through ``consolidate`` or ``aconsolidate``."""
    if mode == "sync":
        return chain.consolidate(request)
    return asyncio.run(chain.aconsolidate(request))


DEDUPE = SummaryUpdate(retire=(Retirement(id="O1", reason="duplicate of O2"),))


REASONS = {
    "non-update": "FunctionSummarizer failed (SummarizerError: FunctionSummarizer.summarize "
    "returned dict; return a progsum.SummaryUpdate)",
    "unknown-field": "QueuedSummarizer failed (SummarizerError: QueuedSummarizer.summarize added "
    "to 'budgets', which the default schema does not have; its list fields are: decisions, "
    "constraints, established_facts, open_threads, rejected)",
}


def bad_primary(kind: str) -> FunctionSummarizer | QueuedSummarizer:
    """A fresh primary that answers badly in the way ``kind`` names."""
    if kind == "non-update":
        return FunctionSummarizer(not_an_update)
    return QueuedSummarizer(UNKNOWN_FIELD)


@pytest.mark.parametrize("kind", REASONS)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_bad_answer_falls_back_with_the_reason(kind: str, mode: str) -> None:
    """A non-update or an unknown field moves on to the next member; the event says why."""
    primary = bad_primary(kind)
    reason = REASONS[kind]
    backup = QueuedSummarizer(GOOD)
    compactor = Compactor(policy=SMALL, summarizer=FallbackSummarizer(primary, backup))
    state = ConversationState(trip_planning(12))
    if mode == "sync":
        state = compactor.maybe_compact(state)
    else:
        state = asyncio.run(compactor.amaybe_compact(state))
    event = state.events[-1]
    assert event.outcome == "compacted"
    assert event.degraded
    assert event.degraded_reason == f"{reason}; used QueuedSummarizer"
    assert len(primary.requests) == len(backup.requests) == 1
    assert state.summary is not None
    assert [i.text for i in state.summary.established_facts] == ["The hotel is in Alfama."]
    assert state.pending_repairs == (event,)


def test_a_chain_of_bad_answers_raises_one_error() -> None:
    """When every member answers badly, one SummarizerError names each bad answer."""
    chain = FallbackSummarizer(FunctionSummarizer(not_an_update), QueuedSummarizer(UNKNOWN_FIELD))
    state = ConversationState(trip_planning(12))
    with pytest.raises(SummarizerError, match=r"every summarizer failed: ") as caught:
        Compactor(policy=SMALL, summarizer=chain).compact(state)  # maybe_compact backs off instead
    assert "FunctionSummarizer.summarize returned dict" in str(caught.value)
    assert "QueuedSummarizer.summarize added to 'budgets'" in str(caught.value)


def test_a_valid_answer_of_the_primary_is_not_degraded() -> None:
    """An update naming only the schema's fields is returned as it is."""
    chain = FallbackSummarizer(QueuedSummarizer(GOOD), FunctionSummarizer(not_an_update))
    state = Compactor(policy=SMALL, summarizer=chain).maybe_compact(
        ConversationState(trip_planning(12))
    )
    assert not state.events[-1].degraded


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({"retire": ["O1"]}, "consolidate returned dict"),
        (
            SummaryUpdate(add={"notes": ["Sintra: a full day."]}, retire=DEDUPE.retire),
            "consolidate added to 'notes', which the default schema does not have",
        ),
    ],
    ids=["non-update", "unknown-field"],
)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_bad_consolidation_falls_back_with_the_reason(answer: object, why: str, mode: str) -> None:
    """A consolidating member's bad answer moves on to the next consolidator, marked degraded."""
    primary = Consolidating(answer) if mode == "sync" else AsyncConsolidating(answer)
    backup = Consolidating(DEDUPE)
    chain = FallbackSummarizer(primary, ExtractiveSummarizer(), backup)
    request = consolidation_request()
    update = consolidate(chain, request, mode)
    assert update.retire == DEDUPE.retire
    assert primary.requests == backup.requests == [request]
    assert update.degraded is not None
    name = type(primary).__name__
    assert update.degraded.startswith(f"{name}.consolidate failed (SummarizerError: {name}.{why}")
    assert update.degraded.endswith("; used Consolidating")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_only_bad_consolidations_raise_summarizer_error(mode: str) -> None:
    """Every consolidator answering badly ends in SummarizerError, so the engine drops instead."""
    chain = FallbackSummarizer(
        Consolidating({"retire": ["O1"]}), Consolidating(SummaryUpdate(add={"notes": ["x"]}))
    )
    request = consolidation_request()
    with pytest.raises(SummarizerError, match=r"every summarizer that consolidates failed: "):
        consolidate(chain, request, mode)
