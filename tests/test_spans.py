"""OpenTelemetry spans (the ``otel`` extra), read back with the SDK's in-memory exporter."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from progsum import Compactor, ConversationState, Policy, SummaryUpdate
from progsum.errors import ProviderError
from progsum.summarizers import AnthropicSummarizer, ExtractiveSummarizer, FallbackSummarizer
from progsum.summary._update import SummarizerUsage
from progsum.testing import QueuedSummarizer
from tests.conversations import TRIP_RULE, trip_planning
from tests.test_anthropic_summarizer import tool

SMALL = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 4))
EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module")
def _exporting() -> None:
    """Export to EXPORTER from the global tracer provider, set once per process.

    At run time, not import time: the README's example (run earlier) may have set the provider,
    and only the first setting counts; then the exporter is added to that provider.
    """
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        current.add_span_processor(SimpleSpanProcessor(EXPORTER))
        return
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(provider)


@pytest.fixture(autouse=True)
def spans(_exporting: None) -> Iterator[InMemorySpanExporter]:
    """The exporter, emptied before each test."""
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    """The finished spans called ``name``."""
    return [s for s in exporter.get_finished_spans() if s.name == name]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    """A span's attributes as a plain dict (sequences as lists)."""
    found = dict(span.attributes or {})
    return {k: list(v) if isinstance(v, tuple) else v for k, v in found.items()}


def test_a_quiet_turn_makes_no_span(spans: InMemorySpanExporter) -> None:
    """Below the trigger, no span is started at all."""
    compactor = Compactor(policy=SMALL, summarizer=QueuedSummarizer())
    compactor.maybe_compact(ConversationState(trip_planning(2)))
    assert spans.get_finished_spans() == ()


def test_a_compaction_span_carries_progsum_figures(spans: InMemorySpanExporter) -> None:
    """One progsum.compaction span with the tokens, folded range and outcome of the event."""
    usage = SummarizerUsage(
        input_tokens=900,
        output_tokens=80,
        cache_creation_input_tokens=0,
        cache_read_input_tokens=1_500,
    )
    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": [TRIP_RULE]}, usage=usage))
    state = ConversationState(trip_planning(12), thread_id="trip-7")
    after = Compactor(policy=SMALL, summarizer=fake).maybe_compact(state)
    event = after.events[-1]
    assert event.folded is not None
    (span,) = named(spans, "progsum.compaction")
    found = attributes(span)
    assert found["progsum.outcome"] == "compacted"
    assert found["progsum.outcomes"] == ["compacted"]
    assert found["progsum.tokens.before"] == event.tokens_before
    assert found["progsum.tokens.after"] == event.tokens_after
    assert (found["progsum.folded.start"], found["progsum.folded.end"]) == event.folded
    assert found["progsum.thread_id"] == "trip-7"
    assert found["progsum.messages"] == len(state)
    assert "progsum.degraded_reason" not in found

    (call,) = named(spans, "progsum.summarize")
    assert call.parent is not None
    assert call.parent.span_id == span.context.span_id  # the summarizer call is a child
    assert attributes(call) == {
        "progsum.summarizer": "QueuedSummarizer",
        "progsum.summarizer.calls": 1,
        "gen_ai.usage.input_tokens": 2_400,  # cached input included, as the conventions say
        "gen_ai.usage.output_tokens": 80,
        "gen_ai.usage.cache_read.input_tokens": 1_500,
        "gen_ai.usage.cache_creation.input_tokens": 0,
    }


def test_a_degraded_compaction_span_says_why(spans: InMemorySpanExporter) -> None:
    """The degraded reason of a fallback fold is on the compaction span and the call's span."""
    down = QueuedSummarizer(ProviderError("Anthropic is overloaded (529)", status=529))
    fallback = FallbackSummarizer(down, ExtractiveSummarizer())
    Compactor(policy=SMALL, summarizer=fallback).maybe_compact(ConversationState(trip_planning(12)))
    (span,) = named(spans, "progsum.compaction")
    found = attributes(span)
    assert "overloaded" in found["progsum.degraded_reason"]
    assert found["progsum.outcomes"][0] == "compacted"
    (call,) = named(spans, "progsum.summarize")
    assert "overloaded" in attributes(call)["progsum.degraded_reason"]


def test_a_stall_gets_a_span_of_its_own(spans: InMemorySpanExporter) -> None:
    """A due turn that folds nothing still yields one compaction span, with the stall kind."""
    keep_all = Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 200))
    Compactor(policy=keep_all, summarizer=QueuedSummarizer()).maybe_compact(
        ConversationState(trip_planning(12))
    )
    (span,) = spans.get_finished_spans()
    assert span.name == "progsum.compaction"
    assert attributes(span)["progsum.stall"] == "nothing_to_fold"


def test_a_failing_compact_records_the_error(spans: InMemorySpanExporter) -> None:
    """compact() raising leaves an ERROR-status compaction span with the exception recorded."""
    fake = QueuedSummarizer(ProviderError("Anthropic is overloaded (529)", status=529))
    with pytest.raises(ProviderError):
        Compactor(policy=SMALL, summarizer=fake).compact(ConversationState(trip_planning(12)))
    (span,) = named(spans, "progsum.compaction")
    assert span.status.status_code == StatusCode.ERROR
    assert [e.name for e in span.events] == ["exception"]


class Recording:
    """An HTTP handler answering with scripted Messages API replies, keeping each request."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Keep the request and answer with the next reply (the last one repeats)."""
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        response: httpx2.Response = reply(request)
        return response

    def client(self) -> anthropic.Anthropic:
        """A real Anthropic client over this handler."""
        return anthropic.Anthropic(
            api_key="sk-test",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
        )


def test_the_anthropic_summarizer_emits_a_genai_client_span(spans: InMemorySpanExporter) -> None:
    """Each model request is a CLIENT span 'chat {model}' with GenAI request and usage fields."""
    api = Recording(tool({"constraints": [TRIP_RULE]}))
    claude = AnthropicSummarizer(api.client())
    Compactor(policy=SMALL, summarizer=claude).maybe_compact(ConversationState(trip_planning(12)))
    (chat,) = named(spans, "chat claude-haiku-5-5")
    assert chat.kind == SpanKind.CLIENT
    body = json.loads(api.requests[0].content)
    assert attributes(chat) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": body["model"],
        "gen_ai.request.max_tokens": body["max_tokens"],
        "gen_ai.response.model": "claude-haiku-5-5",
        "gen_ai.response.id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "gen_ai.response.finish_reasons": ["tool_use"],
        "gen_ai.usage.input_tokens": 1_200 + 1_500,
        "gen_ai.usage.output_tokens": 90,
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_creation.input_tokens": 1_500,
    }
    (call,) = named(spans, "progsum.summarize")
    assert chat.parent is not None
    assert chat.parent.span_id == call.context.span_id
    assert attributes(call)["gen_ai.request.model"] == "claude-haiku-5-5"


def test_a_failed_model_request_notes_the_error_type(spans: InMemorySpanExporter) -> None:
    """An HTTP 529 ends the model span in ERROR with error.type set, as the conventions ask."""
    overloaded = httpx2.Response(
        529, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    api = Recording(lambda _: overloaded)
    claude = AnthropicSummarizer(api.client())
    with pytest.raises(ProviderError):
        Compactor(policy=SMALL, summarizer=claude).compact(ConversationState(trip_planning(12)))
    (chat,) = named(spans, "chat claude-haiku-5-5")
    assert chat.status.status_code == StatusCode.ERROR
    assert attributes(chat)["error.type"] == "ProviderError"


def test_without_the_package_spans_are_a_no_op(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When opentelemetry cannot be imported, compaction works the same and emits nothing."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import now raises ImportError
    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": [TRIP_RULE]}))
    state = Compactor(policy=SMALL, summarizer=fake).maybe_compact(
        ConversationState(trip_planning(12))
    )
    assert state.events[-1].outcome == "compacted"
    assert spans.get_finished_spans() == ()
