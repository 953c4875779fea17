"""Observability: log lines per event, the on_event hook, agent usage totals and the cost alert."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from progsum import Compactor, ConfigError, ConversationState, Policy, SummaryUpdate
from progsum.errors import ProviderError
from progsum.policy._usage import AgentUsage
from progsum.state._events import CompactionEvent
from progsum.summarizers import ExtractiveSummarizer, FallbackSummarizer
from progsum.summary._update import Retirement, SummarizerUsage
from progsum.testing import FunctionSummarizer, QueuedSummarizer
from tests.conftest import fixed_clock
from tests.conversations import TRIP_RULE, trip_planning

SMALL = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 4))
WIDE = Policy(trigger=("fraction", 0.65), context_window=200_000, keep=("messages", 4))
ENGINE = "progsum.engine"


def engine_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The records progsum.engine._compactor emitted."""
    return [r for r in caplog.records if r.name == ENGINE]


def spend(tokens: int) -> SummaryUpdate:
    """An update whose summarizer call cost ``tokens`` (input and output halves)."""
    usage = SummarizerUsage(input_tokens=tokens // 2, output_tokens=tokens - tokens // 2)
    return SummaryUpdate(add={"established_facts": [f"Spent {tokens:,} tokens."]}, usage=usage)


class Recorder:
    """An on_event hook that keeps every event it is given."""

    def __init__(self) -> None:
        self.events: list[CompactionEvent] = []

    def __call__(self, event: CompactionEvent) -> None:
        """Keep the event."""
        self.events.append(event)


# -- the loggers -----------------------------------------------------------------------------------


def test_the_progsum_logger_is_silent_by_default() -> None:
    """The package logger has a NullHandler, so a library user sees nothing unless they opt in."""
    handlers = logging.getLogger("progsum").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
    for name in ("engine", "summarizers", "store", "cli"):
        assert logging.getLogger(f"progsum.{name}").parent is logging.getLogger("progsum")


def test_one_info_line_per_compaction_event(caplog: pytest.LogCaptureFixture) -> None:
    """A compaction logs one INFO line naming the event, the tokens and the folded range."""
    caplog.set_level(logging.DEBUG, logger="progsum")
    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": [TRIP_RULE]}))
    state = Compactor(policy=SMALL, summarizer=fake).maybe_compact(
        ConversationState(trip_planning(12))
    )
    (record,) = engine_records(caplog)
    (event,) = state.events
    assert event.folded is not None
    assert event.merge is not None
    assert record.levelno == logging.INFO
    assert record.getMessage() == (
        f"event 1 compacted: {event.tokens_before:,} -> {event.tokens_after:,} tokens "
        f"(estimated), folded messages 2-{event.folded[1]}, +{len(event.merge.added)} items, "
        "0 retired"
    )


def test_a_quiet_turn_logs_nothing_and_calls_no_hook(caplog: pytest.LogCaptureFixture) -> None:
    """Below the trigger nothing is logged, the hook is not called and the state is returned."""
    caplog.set_level(logging.DEBUG, logger="progsum")
    hook = Recorder()
    compactor = Compactor(policy=SMALL, summarizer=QueuedSummarizer(), on_event=hook)
    state = ConversationState(trip_planning(2))
    assert compactor.maybe_compact(state) is state
    assert caplog.records == []
    assert hook.events == []


def test_degraded_compactions_log_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A fallback fold is a WARNING that says why the preferred summarizer was not used."""
    caplog.set_level(logging.INFO, logger="progsum")
    down = QueuedSummarizer(ProviderError("Anthropic is overloaded (529)", status=529))
    fallback = FallbackSummarizer(down, ExtractiveSummarizer())
    Compactor(policy=SMALL, summarizer=fallback).maybe_compact(ConversationState(trip_planning(12)))
    record = engine_records(caplog)[0]
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith("event 1 compacted: ")
    assert "degraded (" in record.getMessage()
    assert "overloaded" in record.getMessage()


def test_stalls_log_a_warning_with_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    """A due compaction that can fold nothing is a WARNING carrying the engine's reason."""
    caplog.set_level(logging.INFO, logger="progsum")
    keep_all = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 200))
    Compactor(policy=keep_all, summarizer=QueuedSummarizer()).maybe_compact(
        ConversationState(trip_planning(12))
    )
    (record,) = engine_records(caplog)
    assert record.levelno == logging.WARNING
    assert "stalled (nothing_to_fold)" in record.getMessage()
    assert "lower keep" in record.getMessage()


def test_refused_retirements_log_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A retirement the merge refuses (unknown id) makes the compaction line a WARNING."""
    caplog.set_level(logging.INFO, logger="progsum")
    fake = QueuedSummarizer(
        SummaryUpdate(
            add={"constraints": [TRIP_RULE]},
            retire=(Retirement(id="C9", reason="no such item"),),
        )
    )
    state = Compactor(policy=SMALL, summarizer=fake).maybe_compact(
        ConversationState(trip_planning(12))
    )
    merge = state.events[-1].merge
    assert merge is not None
    assert [r.id for r in merge.refused] == ["C9"]
    (record,) = engine_records(caplog)
    assert record.levelno == logging.WARNING
    assert "1 retirement(s) refused" in record.getMessage()


def test_over_window_events_log_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """An event that leaves the context over the input window is a WARNING with the why."""
    caplog.set_level(logging.INFO, logger="progsum")
    huge = "word " * 3_000
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Plan a trip. " + huge}]
    messages += [{"role": "assistant", "content": "Sure."}, {"role": "user", "content": huge}]
    Compactor(policy=SMALL, summarizer=QueuedSummarizer(), reduction=None).maybe_compact(
        ConversationState(messages)
    )
    warnings = [r for r in engine_records(caplog) if r.levelno == logging.WARNING]
    assert warnings
    assert any("over the window" in r.getMessage() for r in warnings)


# -- the hook --------------------------------------------------------------------------------------


def test_the_hook_gets_each_new_event_of_the_returned_state() -> None:
    """on_event is called once per new event, in order, with the returned state's events."""
    hook = Recorder()
    fake = FunctionSummarizer(lambda _: SummaryUpdate(add={"constraints": [TRIP_RULE]}))
    compactor = Compactor(policy=SMALL, summarizer=fake, on_event=hook, clock=fixed_clock)
    state: ConversationState[Any] = ConversationState()
    for message in trip_planning(30):
        state = compactor.maybe_compact(state.append(message))
    assert len(state.events) >= 2
    assert hook.events == list(state.events)
    assert compactor.hook_failures == 0


def test_a_raising_hook_never_breaks_the_agent_loop(caplog: pytest.LogCaptureFixture) -> None:
    """A hook that raises is logged at ERROR with its traceback and counted; the state is kept."""
    caplog.set_level(logging.INFO, logger="progsum")

    def broken(event: CompactionEvent) -> None:
        message = f"dashboard down while sending event {event.number}"
        raise RuntimeError(message)

    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": [TRIP_RULE]}))
    compactor = Compactor(policy=SMALL, summarizer=fake, on_event=broken)
    state = compactor.maybe_compact(ConversationState(trip_planning(12)))
    assert state.events[-1].outcome == "compacted"
    assert compactor.hook_failures == 1
    errors = [r for r in engine_records(caplog) if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "hook_failures" in errors[0].getMessage()
    assert errors[0].exc_info is not None
    assert "dashboard down" in str(errors[0].exc_info[1])


def test_the_async_path_calls_the_hook_too() -> None:
    """amaybe_compact hands its new events to the hook like maybe_compact."""
    hook = Recorder()
    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": [TRIP_RULE]}))
    compactor = Compactor(policy=SMALL, summarizer=fake, on_event=hook)
    state = asyncio.run(compactor.amaybe_compact(ConversationState(trip_planning(12))))
    assert hook.events == list(state.events)
    assert [e.outcome for e in hook.events] == ["compacted"]


def test_a_hook_that_is_not_callable_is_refused() -> None:
    """on_event must be callable; the error names the value and the fix."""
    with pytest.raises(ConfigError, match="on_event='print' is not callable"):
        Compactor(policy=SMALL, summarizer=QueuedSummarizer(), on_event="print")  # type: ignore[arg-type]


# -- agent usage and the cost alert ----------------------------------------------------------------


ANTHROPIC_USAGE = {
    "input_tokens": 3_000,
    "output_tokens": 400,
    "cache_creation_input_tokens": 1_000,
    "cache_read_input_tokens": 5_000,
}


def test_reported_usage_is_summed_beside_the_summarizers() -> None:
    """Each usage report adds its fields to state.agent_usage (Anthropic, OpenAI, int)."""
    state = ConversationState(trip_planning(1))
    state = state.append({"role": "assistant", "content": "Sure."}, usage=ANTHROPIC_USAGE)
    state = state.append({"role": "user", "content": "And Porto?"})
    state = state.record_usage({"prompt_tokens": 9_700, "completion_tokens": 300})
    state = state.record_usage(12_000)
    assert state.agent_usage == AgentUsage(
        input_tokens=3_000 + 9_700 + 12_000,
        output_tokens=700,
        cache_creation_input_tokens=1_000,
        cache_read_input_tokens=5_000,
        reports=3,
    )
    assert state.agent_usage.tokens == 9_400 + 10_000 + 12_000
    assert state.summarization_share == 0.0


def test_a_refused_request_count_is_not_billed() -> None:
    """record_usage(billed=False) anchors the count but adds nothing to the agent's totals."""
    state = ConversationState(trip_planning(1)).record_usage(250_000, billed=False)
    assert state.anchor is not None
    assert state.anchor.tokens == 250_000
    assert state.agent_usage == AgentUsage()


def test_usage_totals_survive_json_and_old_states_load() -> None:
    """to_dict keeps the totals; a state saved before they existed loads with none."""
    state = ConversationState(trip_planning(1)).record_usage(ANTHROPIC_USAGE)
    again: ConversationState[Any] = ConversationState.from_json(state.to_json())
    assert again.agent_usage == state.agent_usage
    old = state.to_dict()
    del old["agent_usage"]
    assert ConversationState.from_dict(old).agent_usage == AgentUsage()


def compact_with(
    compactor: Compactor[Any], state: ConversationState[Any], more: int
) -> ConversationState[Any]:
    """Append ``more`` trip messages, then force a compaction."""
    for message in trip_planning(more)[1:]:
        state = state.append(message)
    return compactor.compact(state, force=True)


def test_the_cost_alert_fires_once_per_crossing(caplog: pytest.LogCaptureFixture) -> None:
    """The share crossing 15% marks that one event; further calls while above it mark none."""
    caplog.set_level(logging.INFO, logger="progsum")
    fake = QueuedSummarizer(spend(2_000), spend(2_000), spend(2_000))
    hook = Recorder()
    compactor = Compactor(policy=WIDE, summarizer=fake, on_event=hook)
    state = ConversationState(trip_planning(12)).record_usage(
        {"input_tokens": 10_000, "output_tokens": 500}
    )
    first = compactor.compact(state, force=True)
    alert = first.events[-1].cost_alert
    assert alert is not None
    assert (alert.summarizer_tokens, alert.agent_tokens, alert.threshold) == (2_000, 10_500, 0.15)
    assert alert.share == pytest.approx(2_000 / 12_500)
    assert hook.events[-1].cost_alert == alert  # the hook sees the alert too
    warning = engine_records(caplog)[-1]
    assert warning.levelno == logging.WARNING
    assert "cost alert: summarization is 16.0% of reported tokens" in warning.getMessage()
    assert "2,000 summarizer tokens, 10,500 agent tokens" in warning.getMessage()

    second = compact_with(compactor, first.record_usage(100), 6)
    assert second.events[-1].outcome == "compacted"
    assert second.events[-1].cost_alert is None  # still above: no new crossing

    recovered = second.record_usage(100_000)  # the agent's traffic dilutes the share
    assert recovered.summarization_share is not None
    assert recovered.summarization_share < 0.15
    third = compact_with(compactor, recovered, 6)
    assert third.summarization_share is not None
    assert third.summarization_share < 0.15  # 6,000 of 116,600: no crossing yet
    assert third.events[-1].cost_alert is None
    alerts = [e for e in third.events if e.cost_alert is not None]
    assert [e.number for e in alerts] == [first.events[-1].number]


def test_the_alert_crosses_again_after_the_share_fell_below() -> None:
    """After the share fell below the threshold, the next call that lifts it alerts again."""
    fake = QueuedSummarizer(spend(2_000), spend(20_000))
    compactor = Compactor(policy=WIDE, summarizer=fake)
    state = ConversationState(trip_planning(12)).record_usage(10_000)
    first = compactor.compact(state, force=True)
    assert first.events[-1].cost_alert is not None
    below = first.record_usage(50_000)  # 2,000 / 62,000
    second = compact_with(compactor, below, 6)
    alert = second.events[-1].cost_alert
    assert alert is not None
    assert (alert.summarizer_tokens, alert.agent_tokens) == (22_000, 60_000)
    assert sum(e.cost_alert is not None for e in second.events) == 2


def test_no_alert_without_agent_reports_or_when_turned_off() -> None:
    """No agent usage reported means no share to alert on; cost_alert=None turns it off."""
    no_reports = Compactor(policy=WIDE, summarizer=QueuedSummarizer(spend(5_000)))
    state = no_reports.compact(ConversationState(trip_planning(12)), force=True)
    assert state.events[-1].cost_alert is None
    off = Compactor(policy=WIDE, summarizer=QueuedSummarizer(spend(5_000)), cost_alert=None)
    reported = ConversationState(trip_planning(12)).record_usage(1_000)
    assert off.compact(reported, force=True).events[-1].cost_alert is None


@pytest.mark.parametrize("bad", [0, 1.5, -0.1, "15%"])
def test_a_bad_cost_alert_share_is_refused(bad: object) -> None:
    """cost_alert must be a share in (0, 1]; the error names the value."""
    with pytest.raises(ConfigError, match="cost_alert="):
        Compactor(policy=WIDE, summarizer=QueuedSummarizer(), cost_alert=bad)  # type: ignore[arg-type]


def test_damaged_usage_totals_are_refused_by_name() -> None:
    """A saved state whose agent usage has an unknown field or a bad count does not load."""
    state = ConversationState(trip_planning(1)).record_usage(ANTHROPIC_USAGE)
    for bad, named in (({"input_tokens": -3}, "input_tokens=-3"), ({"tokens": 5}, "'tokens'")):
        data = state.to_dict()
        data["agent_usage"] = bad
        with pytest.raises(ConfigError, match=named):
            ConversationState.from_dict(data)
