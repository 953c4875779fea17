"""The engine: measure, trigger, split, summarize, merge; stalls, failures, async, typing."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, assert_type

import pytest

from progsum import (
    Compactor,
    ConfigError,
    ConversationState,
    Items,
    Policy,
    SummarizerError,
    Summary,
    SummaryRequest,
    SummaryUpdate,
    amaybe_compact,
    maybe_compact,
    render_anthropic,
    summary_field,
)
from progsum.summary._merge import live_items
from progsum.summary._update import Retirement, SummarizerUsage
from progsum.testing import FunctionSummarizer, QueuedSummarizer
from tests.conftest import FIXED_TIME, fixed_clock
from tests.conversations import TRIP_BUDGET, TRIP_RULE, coding_session, spelled, trip_planning

SMALL = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 4))


def facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """One fact per segment, naming its range."""
    segment = request.segment
    return SummaryUpdate(
        add={
            "established_facts": [
                f"Messages {spelled(segment.start)} to {spelled(segment.end - 1)} happened."
            ]
        }
    )


def run(messages: list[dict[str, Any]], compactor: Compactor[Any]) -> ConversationState[Any]:
    """Append messages one by one, calling maybe_compact after each."""
    state: ConversationState[Any] = ConversationState()
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
    return state


def test_nothing_due_returns_the_same_object() -> None:
    """Below the trigger, maybe_compact returns the very state it was given."""
    state = ConversationState(trip_planning(2))
    compactor = Compactor(policy=SMALL, summarizer=QueuedSummarizer())
    decision = compactor.decide(state)
    assert not decision.due
    assert decision.method == "estimated"
    assert "is below the trigger" in decision.reason
    assert compactor.maybe_compact(state) is state


def test_due_compaction_folds_the_middle() -> None:
    """Crossing the trigger folds everything between the first message and the kept tail."""
    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": [TRIP_RULE]}))
    compactor = Compactor(policy=SMALL, summarizer=fake, clock=fixed_clock)
    state = ConversationState(trip_planning(12))
    assert compactor.decide(state).due
    after = compactor.maybe_compact(state)
    (request,) = fake.requests
    assert request.segment.start == 1
    assert request.segment.end == len(state) - 4
    assert request.prior == Summary()
    assert [m for _, m in request.segment] == list(state.log[1 : len(state) - 4])
    event = after.events[-1]
    assert event.outcome == "compacted"
    assert event.folded == (1, len(state) - 4)
    assert event.tokens_after < event.tokens_before
    assert event.at == FIXED_TIME
    assert event.merge is not None
    assert event.merge.added == ("C1", "C2")
    assert event.merge.restored == ("C2",)  # the fake left out the budget: the ledger kept it
    assert after.cutoff == len(state) - 4
    assert after.effective == [state.log[0], *state.log[-4:]]
    assert after.summary is not None
    assert after.summary.constraints[0].text == TRIP_RULE


def test_at_most_one_attempt_per_turn() -> None:
    """Calling maybe_compact again before anything is appended does nothing."""
    compactor = Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts))
    after = compactor.maybe_compact(ConversationState(trip_planning(12)))
    assert compactor.maybe_compact(after) is after


def test_nothing_to_fold_stalls_once_and_says_why() -> None:
    """When head and tail cover everything, a stalled event explains it, recorded once."""
    huge = {"role": "user", "content": "Context: " + "lorem ipsum dolor sit amet " * 400}
    policy = Policy(context_window=200_000, trigger=("tokens", 1_170), keep=("messages", 4))
    compactor = Compactor(policy=policy, summarizer=QueuedSummarizer(), reduction=None)
    state = ConversationState([huge, {"role": "assistant", "content": "ok"}])
    stalled = compactor.maybe_compact(state)
    assert stalled is not state
    (event,) = stalled.events
    assert (event.outcome, event.stall) == ("stalled", "nothing_to_fold")
    assert "nothing can be folded" in event.reason
    assert "lower keep or raise the trigger" in event.reason
    assert compactor.maybe_compact(stalled) is stalled
    later = compactor.maybe_compact(stalled.append({"role": "user", "content": "and?"}))
    assert len(later.events) == 1  # a repeated stall adds no event
    assert later.attempted_at == len(later)


def test_no_gain_stall_when_the_tail_alone_is_over_the_trigger() -> None:
    """If folding what is outside the tail cannot get under the trigger, no model is called."""
    messages = trip_planning(1)
    messages += [
        {"role": "user", "content": "Here is the full itinerary: " + "day plan with times " * 250},
        {"role": "assistant", "content": "Thanks, reading it now: " + "noted detail " * 250},
    ]
    fake = QueuedSummarizer()
    state = Compactor(
        policy=Policy(context_window=200_000, trigger=("tokens", 1_170), keep=("messages", 3)),
        summarizer=fake,
        reduction=None,
    ).maybe_compact(ConversationState(messages))
    assert fake.requests == []
    assert state.events[-1].stall == "no_gain"
    assert "still above it" in state.events[-1].reason


def test_summary_that_frees_nothing_is_refused() -> None:
    """A summary larger than the segment it replaces is not applied; the old state stays."""
    bloated = SummaryUpdate(
        add={
            "established_facts": [
                f"Fact {chr(65 + n) * 2}: " + "a long detail " * 30 for n in range(20)
            ]
        },
        usage=SummarizerUsage(input_tokens=900, output_tokens=2000),
    )
    fake = QueuedSummarizer(bloated)
    state = ConversationState(trip_planning(12))
    after = Compactor(policy=SMALL, summarizer=fake).maybe_compact(state)
    event = after.events[-1]
    assert (event.outcome, event.stall) == ("stalled", "not_smaller")
    assert event.usage is not None
    assert event.usage.output_tokens == 2000
    assert after.summary is None
    assert after.cutoff == 0


def test_force_compacts_below_the_trigger() -> None:
    """compact(force=True) folds even when nothing is due, and says it was forced."""
    state = ConversationState(trip_planning(5))
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=100_000, keep=("messages", 4)),
        summarizer=FunctionSummarizer(facts),
    )
    assert not compactor.decide(state).due
    after = compactor.compact(state, force=True)
    assert after.events[-1].forced
    assert after.events[-1].reason == "forced"
    assert after.cutoff == len(state) - 4


def test_summarizer_failure_leaves_state_unchanged() -> None:
    """Without backoff, a summarizer exception is a SummarizerError naming the segment."""
    state = ConversationState(trip_planning(12))
    policy = dataclasses.replace(SMALL, failure_backoff=None)
    compactor = Compactor(
        policy=policy, summarizer=QueuedSummarizer(TimeoutError("read timed out"))
    )
    with pytest.raises(
        SummarizerError,
        match=r"QueuedSummarizer failed on messages 1-\d+: TimeoutError: read timed out",
    ) as caught:
        compactor.maybe_compact(state)
    assert isinstance(caught.value.__cause__, TimeoutError)
    assert state.events == ()
    assert state.cutoff == 0


def test_summarizer_returning_wrong_type_is_an_error() -> None:
    """Returning anything but a SummaryUpdate says what to return."""
    bad = FunctionSummarizer(lambda _: {"constraints": ["x"]})  # type: ignore[arg-type, return-value]
    with pytest.raises(SummarizerError, match=r"returned dict; return a progsum\.SummaryUpdate"):
        Compactor(policy=SMALL, summarizer=bad).maybe_compact(ConversationState(trip_planning(12)))


def test_degraded_update_is_marked_on_the_event() -> None:
    """An update from a fallback summarizer marks the event degraded with the reason."""
    update = SummaryUpdate(add={"constraints": [TRIP_RULE]}, degraded="primary: 529 overloaded")
    after = Compactor(policy=SMALL, summarizer=QueuedSummarizer(update)).maybe_compact(
        ConversationState(trip_planning(12))
    )
    assert after.events[-1].degraded
    assert after.events[-1].degraded_reason == "primary: 529 overloaded"


def test_summarizer_usage_is_metered_separately() -> None:
    """Each event keeps its summarizer usage; the state sums them."""
    usage = SummarizerUsage(
        input_tokens=1000, output_tokens=100, cache_read_input_tokens=800, latency_s=0.5
    )

    def with_usage(request: SummaryRequest[Any]) -> SummaryUpdate:
        return facts(request).model_copy(update={"usage": usage})

    state = run(
        trip_planning(40), Compactor(policy=SMALL, summarizer=FunctionSummarizer(with_usage))
    )
    compactions = [e for e in state.events if e.outcome == "compacted"]
    assert len(compactions) >= 3
    total = state.summarizer_usage
    assert total.calls == len(compactions)
    assert total.input_tokens == 1000 * len(compactions)
    assert total.cache_read_input_tokens == 800 * len(compactions)


def test_schema_mismatch_is_an_error() -> None:
    """A conversation summarized with one schema cannot be continued with another."""

    class Other(Summary):
        """Another schema."""

    after = Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts)).maybe_compact(
        ConversationState(trip_planning(12))
    )
    with pytest.raises(
        ConfigError, match="summarized with Summary, but the compactor's schema is Other"
    ):
        Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts), schema=Other).compact(
            after, force=True
        )


def test_anchored_decision_uses_reported_usage() -> None:
    """After a usage report the decision is anchored on it: a big real figure triggers."""
    state = ConversationState(trip_planning(3))
    compactor = Compactor(policy=SMALL, summarizer=FunctionSummarizer(facts))
    assert not compactor.decide(state).due
    anchored = state.record_usage({"input_tokens": 1_700, "output_tokens": 50})
    decision = compactor.decide(anchored)
    assert (decision.method, decision.tokens, decision.due) == ("anchored", 1_750, True)


def test_message_trigger() -> None:
    """A ("messages", n) trigger fires on the effective message count."""
    compactor = Compactor(
        policy=Policy(trigger=("messages", 20), keep=("messages", 6)),
        summarizer=FunctionSummarizer(facts),
    )
    state = run(trip_planning(30), compactor)
    compactions = [e for e in state.events if e.outcome == "compacted"]
    assert len(compactions) >= 3
    assert state.effective_length < 20


def test_constraint_survives_fifty_compactions() -> None:
    """A constraint stated in the first turns is still in the header after 50 compactions."""

    def lossy(request: SummaryRequest[Any]) -> SummaryUpdate:
        first = not request.prior.constraints
        return SummaryUpdate(
            add={
                "constraints": [TRIP_RULE, TRIP_BUDGET] if first else [],
                "established_facts": [f"Segment at {request.segment.start}."],
            },
            # a forgetful model tries to drop the constraints without saying why
            retire=() if first else (Retirement(id="C1"), Retirement(id="C2", reason="")),
        )

    compactor = Compactor(
        policy=Policy(trigger=("messages", 12), keep=("messages", 4)),
        summarizer=FunctionSummarizer(lossy),
    )
    state = run(trip_planning(200), compactor)
    compactions = [e for e in state.events if e.outcome == "compacted"]
    assert len(compactions) >= 50
    assert TRIP_RULE in state.header
    assert TRIP_BUDGET in state.header
    refused = [r for e in compactions[1:] for r in (e.merge.refused if e.merge else ())]
    assert len(refused) == 2 * (len(compactions) - 1)
    system, _ = render_anthropic(state, system="You plan trips.")
    assert TRIP_RULE in system[1]["text"]


def test_async_compaction_awaits_async_summarizer() -> None:
    """amaybe_compact awaits an async summarizer function."""

    async def summarize(request: SummaryRequest[Any]) -> SummaryUpdate:
        await asyncio.sleep(0)
        return facts(request)

    fake = FunctionSummarizer(summarize)
    state = ConversationState(trip_planning(12))
    after = asyncio.run(Compactor(policy=SMALL, summarizer=fake).amaybe_compact(state))
    assert after.events[-1].outcome == "compacted"
    assert len(fake.requests) == 1


def test_async_compaction_runs_sync_summarizer_in_a_thread() -> None:
    """A summarizer with only summarize() works through the async engine."""

    class SyncOnly:
        def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
            return facts(request)

    state = ConversationState(trip_planning(16))
    after = asyncio.run(amaybe_compact(state, 2_000, summarizer=SyncOnly()))
    assert after.events[-1].outcome == "compacted"


def test_sync_engine_refuses_async_only_summarizer() -> None:
    """An async-only summarizer through the sync engine says to use the async one."""

    class AsyncOnly:
        async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
            return facts(request)

    with pytest.raises(ConfigError, match=r"async-only; use await compactor\.amaybe_compact"):
        Compactor(policy=SMALL, summarizer=AsyncOnly()).maybe_compact(
            ConversationState(trip_planning(12))
        )


@pytest.mark.parametrize(
    "budget",
    [2_000, Policy(context_window=2_000)],
    ids=["window-tokens", "policy"],
)
def test_module_level_maybe_compact(budget: int | Policy) -> None:
    """maybe_compact(state, budget, summarizer=...) compacts with a window or a policy."""
    after = maybe_compact(
        ConversationState(trip_planning(16)), budget, summarizer=FunctionSummarizer(facts)
    )
    assert after.events[-1].outcome == "compacted"


def test_module_level_maybe_compact_by_model_name() -> None:
    """A model name resolves the window; a small conversation is not due."""
    state = ConversationState(trip_planning(12))
    assert maybe_compact(state, "claude-haiku-4-5", summarizer=FunctionSummarizer(facts)) is state


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"policy": "fast", "summarizer": QueuedSummarizer()}, "is not a progsum.Policy"),
        ({"policy": SMALL, "summarizer": object()}, "has no summarize(request) method"),
        (
            {"policy": SMALL, "summarizer": QueuedSummarizer(), "judge": "linear"},
            "judge='linear' is not a progsum.judge.Judge: it lacks sentences(text)",
        ),
    ],
    ids=["policy", "summarizer", "judge"],
)
def test_compactor_rejects_bad_arguments(kwargs: dict[str, Any], fragment: str) -> None:
    """Bad constructor arguments raise ConfigError naming them."""
    with pytest.raises(ConfigError) as caught:
        Compactor(**kwargs)
    assert fragment in str(caught.value)


def test_bad_budget_is_an_error() -> None:
    """A budget that is neither tokens, a model nor a policy says what to pass."""
    with pytest.raises(ConfigError, match=r"budget=2\.5 must be the context window in tokens"):
        maybe_compact(ConversationState(), 2.5, summarizer=QueuedSummarizer())  # type: ignore[arg-type]


class CodingSummary(Summary):
    """Default fields plus files touched."""

    files_touched: Items = summary_field("Files touched", "Paths edited, exact.", id_prefix="FT")


def test_engine_is_generic_over_the_schema() -> None:
    """A compactor for a subclass returns states typed with it, and fills its extra field."""
    fake = QueuedSummarizer(SummaryUpdate(add={"files_touched": ["billing/invoice.py"]}))
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=5_000, keep=("messages", 6)),
        summarizer=fake,
        schema=CodingSummary,
    )
    state = compactor.maybe_compact(ConversationState(coding_session(8)))
    assert_type(state, ConversationState[CodingSummary])
    assert state.summary is not None
    assert_type(state.summary, CodingSummary)
    assert state.summary.files_touched[0].text == "billing/invoice.py"
    assert "## Files touched\n- [FT1] billing/invoice.py" in state.header


def test_refused_summary_is_not_requested_again_every_turn() -> None:
    """A summary refused as not smaller is asked for again only once the segment has grown."""

    def wordy(request: SummaryRequest[Any]) -> SummaryUpdate:
        name = "".join(chr(97 + int(d)) for d in str(request.segment.start))  # no invented values
        return SummaryUpdate(add={"established_facts": [f"Segment {name} read its partition."]})

    fake = FunctionSummarizer(wordy)
    compactor = Compactor(
        policy=Policy(context_window=2_000, trigger=("messages", 6), keep=("messages", 2)),
        summarizer=fake,
    )
    state: ConversationState[Any] = ConversationState()
    for n in range(40):
        state = compactor.maybe_compact(
            state.append({"role": ("user", "assistant")[n % 2], "content": "ok"})
        )
    refused = [e for e in state.events if e.stall == "not_smaller"]
    compacted = [e for e in state.events if e.outcome == "compacted"]
    assert refused
    assert refused[0].retry_at_tokens is not None
    assert "will ask again once the segment holds" in refused[0].reason
    assert compacted  # the bigger segment was worth folding
    assert len(fake.requests) == len(refused) + len(compacted) <= 8


def _shipping(summary_fact: str) -> ConversationState[Any]:
    """A shop chat whose address the summary below restates as ``summary_fact``, compacted."""
    said = "Please ship the order to 12 Rua Augusta, Lisbon."
    messages = [{"role": "user", "content": "Help me order a desk lamp."}]
    messages.append({"role": "user", "content": said})
    for n in range(10):
        messages.append({"role": "assistant", "content": f"Option {spelled(n)}: " + "lamp " * 60})
        messages.append({"role": "user", "content": "Tell me more about the next one."})
    fake = QueuedSummarizer(SummaryUpdate(add={"established_facts": [summary_fact]}))
    return Compactor(policy=SMALL, summarizer=fake).compact(ConversationState(messages))


def test_a_summary_that_keeps_the_number_but_drops_the_street_loses_the_address() -> None:
    """The ledger holds the address as one value: the number alone does not carry it.

    The sentence comes back verbatim, after the note label that says who stated it.
    """
    after = _shipping("The user wants the order shipped to number 12.")
    assert after.summary is not None
    texts = [item.text for item in after.summary.established_facts]
    assert "User: Please ship the order to 12 Rua Augusta, Lisbon." in texts
    assert after.events[-1].merge is not None
    assert len(after.events[-1].merge.restored) == 1


def test_a_summary_that_keeps_the_address_restores_nothing() -> None:
    """The address carried whole, its sentence does not come back."""
    after = _shipping("The order ships to 12 Rua Augusta in Lisbon.")
    assert after.events[-1].merge is not None
    assert after.events[-1].merge.restored == ()


def _chat(turns: int) -> list[dict[str, Any]]:
    """A chat of ``turns`` user/assistant pairs of ~40 tokens each, the task first."""
    messages = [{"role": "user", "content": "Plan a week in Lisbon with me."}]
    for n in range(turns):
        messages.append({"role": "assistant", "content": f"Idea {spelled(n)}: " + "tiles " * 30})
        messages.append({"role": "user", "content": f"Noted {spelled(n)}. " + "more " * 20})
    return messages


def _tails(policy: Policy) -> tuple[Compactor[Any], list[ConversationState[Any]]]:
    """The chat compacted turn by turn under ``policy``: each state right after a compaction.

    Told it is an agent's conversation: without a tool call it would run under a chat's header
    budget and tail room (`Policy.in_conversation`).
    """
    compactor = Compactor(policy=policy, summarizer=FunctionSummarizer(facts), conversation="agent")
    state: ConversationState[Any] = ConversationState()
    after: list[ConversationState[Any]] = []
    for message in _chat(60):
        grown = state.append(message)
        state = compactor.maybe_compact(grown)
        if state.cutoff != grown.cutoff:
            after.append(state)
    return compactor, after


def test_by_default_the_tail_is_as_many_messages_as_fit_the_target() -> None:
    """The default policy folds at 90% of the input window and keeps what fits 60%.

    Room is left for the header and the recall block at their budgets; a person's new message
    folds a little earlier only when the request has no room left for its recall block. A fold
    may be followed by a consolidation of the header in the same turn.
    """
    policy = Policy(context_window=4_000)
    compactor, folds = _tails(policy)
    assert folds
    assert policy.header_limit is not None
    assert policy.recall_limit is not None
    reserved = policy.header_limit + policy.recall_limit
    for state in folds:
        event = next(e for e in reversed(state.events) if e.outcome == "compacted")
        held = policy.safety_margin * policy.recall_limit if "recall block" in event.reason else 0
        assert event.tokens_before + held >= policy.trigger_limit
        assert state.events[-1].tokens_after <= policy.target_limit  # consolidated, if over
        assert len(state) - state.cutoff > 8  # the target has room for more than 8 messages
        older = state.log[state.cutoff - 2 : state.cutoff]  # one more exchange would not fit
        more = sum(compactor.counter.count_message(m) for m in older)
        assert event.tokens_after + more > policy.target_limit - reserved


def test_an_explicit_keep_still_fixes_the_tail() -> None:
    """keep=("messages", 4) keeps four messages at each compaction, as before."""
    _, folds = _tails(
        Policy(trigger=("fraction", 0.65), context_window=4_000, keep=("messages", 4))
    )
    assert folds
    assert all(len(state) - state.cutoff == 4 for state in folds)


def test_a_forced_compaction_below_the_target_folds_half_of_the_rest() -> None:
    """compact(force=True) with the fitted tail folds even when everything fits the target."""
    state = ConversationState(trip_planning(12))
    compactor = Compactor(
        policy=Policy(context_window=200_000), summarizer=FunctionSummarizer(facts)
    )
    assert not compactor.decide(state).due
    after = compactor.compact(state, force=True)
    assert after.events[-1].outcome == "compacted"
    counter = compactor.counter
    totals = state.running_totals(counter)
    head = after.head_end
    assert totals[len(state)] - totals[after.cutoff] <= (totals[len(state)] - totals[head]) // 2


def test_a_folded_list_marker_never_comes_back_as_a_fact() -> None:
    """The ledger takes no value from "0." in "0. AA": no item "0." (found by the property runs)."""
    messages = [{"role": "user", "content": "Help me sort the logs."}]
    messages.append({"role": "user", "content": "0. AA"})
    for n in range(10):
        messages.append({"role": "assistant", "content": f"Batch {spelled(n)}: " + "log " * 60})
        messages.append({"role": "user", "content": "Next batch please."})
    policy = Policy(context_window=2_000, trigger=("fraction", 0.65), keep=("messages", 4))
    after = Compactor(policy=policy, summarizer=FunctionSummarizer(facts)).compact(
        ConversationState(messages)
    )
    assert after.summary is not None
    texts = [i.text for items in live_items(after.summary).values() for i in items]
    assert texts
    assert not [t for t in texts if t.rstrip(".").isdigit()], texts
