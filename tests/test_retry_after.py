"""The failure backoff honours the provider's retry-after.

A rate-limited provider says when to ask again (``retry-after`` in seconds, an HTTP date, or
``retry-after-ms``). The engine's backoff counts turns; a fast agent loop can pass those turns in
less time than the provider asked for, so the summarizer is not called again before that moment
either. The provider is a real ``anthropic.Anthropic`` client over a mock transport.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anthropic
import httpx2
import pytest

from progsum import Compactor, ConversationState, Policy
from progsum.errors import ProviderError
from progsum.summarizers import AnthropicSummarizer
from progsum.summarizers.prompt._update import TOOL_NAME
from progsum.testing import summary_request
from tests.conversations import trip_planning

START = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        """The current time."""
        return self.now


class Provider:
    """Rate-limited (429 with the given headers) until ``open``, then it answers with a summary."""

    def __init__(self, **headers: str) -> None:
        self.headers = headers
        self.open = False
        self.calls = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """One Messages API answer."""
        self.calls += 1
        if not self.open:
            body = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}
            return httpx2.Response(429, json=body, headers=self.headers)
        model = json.loads(request.content)["model"]
        return httpx2.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": {}}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 900, "output_tokens": 30},
            },
        )

    def summarizer(self) -> AnthropicSummarizer:
        """The summarizer over a real client whose transport is this provider."""
        client = anthropic.Anthropic(
            api_key="sk-test",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
        )
        return AnthropicSummarizer(client)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "120"}, 120.0),
        ({"retry-after-ms": "1500", "retry-after": "2"}, 1.5),
        ({"retry-after": "in five minutes"}, 300.0),  # an HTTP date, written when the test runs
    ],
    ids=["seconds", "milliseconds", "http-date"],
)
def test_a_provider_error_carries_the_retry_after(headers: dict[str, str], seconds: float) -> None:
    """The ProviderError of a 429 says how long the provider asked to wait, in seconds."""
    if headers.get("retry-after") == "in five minutes":
        when = datetime.now(UTC) + timedelta(minutes=5)
        headers = {"retry-after": format_datetime(when, usegmt=True)}
    provider = Provider(**headers)
    request = summary_request([{"role": "user", "content": "Plan the trip."}])
    with pytest.raises(ProviderError) as caught:
        provider.summarizer().summarize(request)
    assert caught.value.retry_after == pytest.approx(seconds, abs=5.0)  # a date has whole seconds


def _turns(compactor: Compactor[Any], state: ConversationState[Any], n: int) -> Any:
    """``n`` turns of a user message and a long reply, each followed by ``maybe_compact``."""
    for k in range(n):
        state = state.append({"role": "user", "content": f"What about stop {k}?"})
        reply = {"role": "assistant", "content": f"Stop {k} is a walk by the river. " * 20}
        state = compactor.maybe_compact(state.append(reply))
    return state


def test_the_summarizer_is_not_asked_again_before_the_retry_after() -> None:
    """Turns pass the turn backoff, but the call waits until the provider's moment; then it goes."""
    provider = Provider(**{"retry-after": "120"})
    clock = Clock()
    compactor = Compactor(
        policy=Policy(context_window=2_000), summarizer=provider.summarizer(), clock=clock
    )
    state = _turns(compactor, ConversationState(trip_planning()), 1)
    (failed,) = [e for e in state.events if e.outcome == "failed"]
    assert failed.not_before == START + timedelta(seconds=120)
    assert "retry-after" in failed.reason
    assert provider.calls == 1
    provider.open = True
    clock.now = START + timedelta(seconds=60)
    state = _turns(compactor, state, 30)  # many due turns, far past the turn backoff
    assert sum(e.outcome == "compacted" for e in state.events) >= 2  # folded offline meanwhile
    assert provider.calls == 1  # still inside the provider's 120 s
    clock.now = START + timedelta(seconds=121)
    state = _turns(compactor, state, 30)
    assert provider.calls >= 2
    assert any(e.outcome == "compacted" and not e.degraded for e in state.events)
