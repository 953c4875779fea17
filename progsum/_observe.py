"""Observability: the ``progsum`` loggers, the event hook, and OpenTelemetry spans.

Nothing here runs on a quiet turn: the engine calls in only when a turn recorded events or
started a compaction.

* Loggers ``progsum.engine``, ``progsum.summarizers``, ``progsum.store`` and ``progsum.cli``
  under ``progsum``, which has a `logging.NullHandler`: silent until the application configures
  logging. One line per event: INFO, or WARNING when it degraded, stalled, failed, left the
  context over the window, refused a retirement or raised the cost alert.
* `EventHook`: ``Compactor(on_event=...)`` is called with each new event once the state is built;
  an exception in it is logged (ERROR, with its traceback) and counted on the compactor
  (``hook_failures``), never raised into the agent loop.
* Spans, when ``opentelemetry-api`` is installed (``pip install progsum[otel]``) and the
  application set a tracer provider: ``progsum.compaction`` per compaction, a child per
  summarizer call (``progsum.summarize``, ``progsum.consolidate``) and, inside the Anthropic
  summarizer, one GenAI client span per model request (``chat {model}``), following the
  OpenTelemetry GenAI semantic conventions. Without the package every span is a no-op.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from progsum._version import __version__
from progsum.policy._usage import check_cost_alert, total
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.summary._update import SummarizerUsage, SummaryUpdate

__all__ = [
    "CLI_LOGGER",
    "ENGINE_LOGGER",
    "STORE_LOGGER",
    "SUMMARIZERS_LOGGER",
    "EventHook",
    "describe",
]

ROOT_LOGGER = logging.getLogger("progsum")
ROOT_LOGGER.addHandler(logging.NullHandler())
ENGINE_LOGGER = logging.getLogger("progsum.engine")
SUMMARIZERS_LOGGER = logging.getLogger("progsum.summarizers")
STORE_LOGGER = logging.getLogger("progsum.store")
CLI_LOGGER = logging.getLogger("progsum.cli")

EventHook = Callable[[CompactionEvent], object]
"""Called with each new compaction event, after the state holding it is built."""

TRACER_NAME = "progsum"


# -- log lines ---------------------------------------------------------------------------------


def warnings_of(event: CompactionEvent) -> list[str]:
    """Why ``event`` deserves a WARNING: one short phrase per reason (empty: INFO)."""
    found = []
    if event.degraded:
        found.append(f"degraded ({event.degraded_reason})")
    if event.outcome == "stalled":
        found.append(f"stalled ({event.stall})")
    if event.outcome == "failed":
        found.append(f"{event.failure} failed, retry at message {event.retry_at}")
    if event.over_window is not None:
        found.append("over the window")
    refused = event.merge.refused if event.merge is not None else ()
    if refused:
        found.append(f"{len(refused)} retirement(s) refused")
    if event.cost_alert is not None:
        found.append(f"cost alert: {event.cost_alert}")
    return found


def describe(event: CompactionEvent, thread_id: str | None = None) -> tuple[int, str]:
    """The log level and the one line of ``event``."""
    where = f"thread {thread_id} " if thread_id else ""
    line = (
        f"{where}event {event.number} {event.outcome}: {event.tokens_before:,} -> "
        f"{event.tokens_after:,} tokens ({event.method})"
    )
    if event.folded is not None:
        start, end = event.folded
        line += f", folded messages {start + 1}-{end}"
    merge = event.merge
    if merge is not None and (merge.added or merge.retired or merge.dropped):
        line += f", +{len(merge.added)} items, {len(merge.retired)} retired"
        if merge.dropped:
            line += f", {len(merge.dropped)} dropped"
    if event.usage is not None:
        line += f", summarizer {total(event.usage):,} tokens in {event.usage.calls} call(s)"
    warned = warnings_of(event)
    if warned:
        line += "; " + "; ".join(warned)
    if event.over_window is not None:
        line += f"; {event.over_window}"
    elif event.outcome in ("stalled", "failed"):
        line += f"; {event.reason}"
    return (logging.WARNING if warned else logging.INFO), line


def log_events(events: Sequence[CompactionEvent], thread_id: str | None) -> None:
    """One line per event on ``progsum.engine``."""
    for event in events:
        level, line = describe(event, thread_id)
        if ENGINE_LOGGER.isEnabledFor(level):
            ENGINE_LOGGER.log(level, line)


def call_hook(hook: EventHook, event: CompactionEvent) -> bool:
    """Call ``hook`` with ``event``; False (and an ERROR line) when it raised."""
    try:
        hook(event)
    except Exception:
        ENGINE_LOGGER.exception(
            "the on_event hook %r raised on event %d (%s); the agent loop goes on, and the "
            "compactor counts it in hook_failures",
            hook,
            event.number,
            event.outcome,
        )
        return False
    return True


def observed(
    before: ConversationState[Any],
    after: ConversationState[Any],
    span: object,
    *,
    threshold: float | None,
    hook: EventHook | None,
    failures: int,
) -> tuple[ConversationState[Any], int]:
    """``after`` with the cost alert on the event that crossed it; the new events reported.

    Each new event is logged, put on the compaction span and handed to ``hook``. Returns the
    state and ``failures`` plus the hook's new failures.
    """
    state = after if threshold is None else alerted(before, after, threshold)
    new = state.events[len(before.events) :]
    log_events(new, state.thread_id)
    trace_events(span, state, new)
    if hook is not None:
        for event in new:
            failures += not call_hook(hook, event)
    return state, failures


def alerted(
    before: ConversationState[Any], after: ConversationState[Any], threshold: float
) -> ConversationState[Any]:
    """``after`` with a `CostAlert` on each new event whose summarizer call crossed the share."""
    agent = after.agent_usage.tokens
    spent = total(before.summarizer_usage)
    state = after
    for event in after.events[len(before.events) :]:
        if event.usage is None:
            continue
        now = spent + total(event.usage)
        alert = check_cost_alert(threshold, spent, now, agent)
        if alert is not None:
            state = state.annotated(event.model_copy(update={"cost_alert": alert}))
        spent = now
    return state


# -- spans -------------------------------------------------------------------------------------


def _tracer() -> Any:  # noqa: ANN401 - an opentelemetry Tracer, when the package is installed
    """OpenTelemetry's tracer for progsum (the global provider's), or None without the package."""
    try:
        from opentelemetry import trace  # noqa: PLC0415 - an optional extra, imported when used
    except ImportError:
        return None

    return trace.get_tracer(TRACER_NAME, __version__)


@contextlib.contextmanager
def compaction_span() -> Iterator[Any]:
    """A current ``progsum.compaction`` span around a compaction's work (None: no tracing)."""
    tracer = _tracer()
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span("progsum.compaction") as span:
        yield span


def trace_events(
    span: Any,  # noqa: ANN401 - an opentelemetry Span or None
    state: ConversationState[Any],
    events: Sequence[CompactionEvent],
) -> None:
    """Put the events' figures on ``span``; a span of its own when the work had none."""
    if span is not None:
        span.set_attributes(event_attributes(state, events))
        return
    tracer = _tracer()
    if tracer is not None:
        with tracer.start_as_current_span("progsum.compaction") as own:
            own.set_attributes(event_attributes(state, events))


def deferred(span: Any, state: ConversationState[Any]) -> None:  # noqa: ANN401 - a Span
    """Mark a compaction span whose turn recorded no event (the summarizer is backing off)."""
    span.set_attributes({"progsum.outcome": "deferred", "progsum.messages": len(state)})


def _main(events: Sequence[CompactionEvent]) -> CompactionEvent:
    """The event a compaction span is named for: the first that is more than housekeeping."""
    for event in events:
        if event.outcome not in ("reduced", "archived", "consolidated"):
            return event
    return events[0]


def event_attributes(
    state: ConversationState[Any], events: Sequence[CompactionEvent]
) -> dict[str, Any]:
    """``progsum.*`` attributes of one compaction span (OpenTelemetry attribute values)."""
    main = _main(events)
    attributes: dict[str, Any] = {
        "progsum.outcome": main.outcome,
        "progsum.outcomes": [e.outcome for e in events],
        "progsum.event.number": main.number,
        "progsum.tokens.before": events[0].tokens_before,
        "progsum.tokens.after": events[-1].tokens_after,
        "progsum.tokens.method": events[-1].method,
        "progsum.messages": len(state),
        "progsum.forced": main.forced,
    }
    if state.thread_id is not None:
        attributes["progsum.thread_id"] = state.thread_id
    folded = [e.folded for e in events if e.folded is not None]
    if folded:
        attributes["progsum.folded.start"] = folded[0][0]
        attributes["progsum.folded.end"] = folded[-1][1]
    degraded = [e.degraded_reason for e in events if e.degraded_reason]
    if degraded:
        attributes["progsum.degraded_reason"] = degraded[0]
    if main.stall is not None:
        attributes["progsum.stall"] = main.stall
    if any(e.over_window for e in events):
        attributes["progsum.over_window"] = True
    merges = [e.merge for e in events if e.merge is not None]
    if merges:
        attributes["progsum.items.added"] = sum(len(m.added) for m in merges)
        attributes["progsum.items.retired"] = sum(len(m.retired) for m in merges)
        attributes["progsum.retirements.refused"] = sum(len(m.refused) for m in merges)
    alerts = [e.cost_alert for e in events if e.cost_alert is not None]
    if alerts:
        attributes["progsum.cost_alert.share"] = alerts[-1].share
        attributes["progsum.cost_alert.threshold"] = alerts[-1].threshold
    share = state.summarization_share
    if share is not None:
        attributes["progsum.summarization_share"] = share
    return attributes


def usage_attributes(usage: SummarizerUsage) -> dict[str, int]:
    """GenAI usage attributes; ``input_tokens`` includes cached input, as the conventions ask."""
    return {
        "gen_ai.usage.input_tokens": usage.input_tokens
        + usage.cache_creation_input_tokens
        + usage.cache_read_input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
    }


class SummarizerCall:
    """The span of one summarizer call, given its update when the call returns."""

    __slots__ = ("span",)

    def __init__(self, span: Any) -> None:  # noqa: ANN401 - an opentelemetry Span or None
        self.span = span

    def done(self, update: object) -> None:
        """Record the update's usage and degradation on the span."""
        span = self.span
        if span is None or not isinstance(update, SummaryUpdate):
            return
        if update.usage is not None:
            span.set_attributes(usage_attributes(update.usage))
            span.set_attribute("progsum.summarizer.calls", update.usage.calls)
        if update.degraded is not None:
            span.set_attribute("progsum.degraded_reason", update.degraded)


@contextlib.contextmanager
def summarizer_span(summarizer: object, operation: str) -> Iterator[SummarizerCall]:
    """A ``progsum.{operation}`` span around one call into ``summarizer``."""
    tracer = _tracer()
    if tracer is None:
        yield SummarizerCall(None)
        return
    with tracer.start_as_current_span(f"progsum.{operation}") as span:
        span.set_attribute("progsum.summarizer", type(summarizer).__name__)
        model = getattr(summarizer, "model", None)
        if isinstance(model, str):
            span.set_attribute("gen_ai.request.model", model)
        yield SummarizerCall(span)


class ModelCall:
    """The GenAI client span of one model request, given the response's usage at the end."""

    __slots__ = ("span",)

    def __init__(self, span: Any) -> None:  # noqa: ANN401 - an opentelemetry Span or None
        self.span = span

    def done(
        self,
        usage: SummarizerUsage,
        *,
        response_model: object = None,
        response_id: object = None,
        finish_reason: object = None,
    ) -> None:
        """Record the usage and, where the response gave them, its model, id and stop reason."""
        span = self.span
        if span is None:
            return
        span.set_attributes(usage_attributes(usage))
        if isinstance(response_model, str):
            span.set_attribute("gen_ai.response.model", response_model)
        if isinstance(response_id, str):
            span.set_attribute("gen_ai.response.id", response_id)
        if isinstance(finish_reason, str):
            span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])

    def failed(self, error: BaseException) -> None:
        """Note the error's type (``error.type``), as the conventions ask."""
        if self.span is not None:
            self.span.set_attribute("error.type", type(error).__name__)


@contextlib.contextmanager
def model_span(provider: str, model: str | None, *, max_tokens: int | None) -> Iterator[ModelCall]:
    """A GenAI ``chat {model}`` client span around one model request (re-asks included)."""
    tracer = _tracer()
    if tracer is None:
        yield ModelCall(None)
        return
    from opentelemetry.trace import SpanKind  # noqa: PLC0415 - installed, since a tracer exists

    name = f"chat {model}" if model else "chat"
    with tracer.start_as_current_span(name, kind=SpanKind.CLIENT) as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.provider.name", provider)
        if model is not None:
            span.set_attribute("gen_ai.request.model", model)
        if max_tokens is not None:
            span.set_attribute("gen_ai.request.max_tokens", max_tokens)
        yield ModelCall(span)
