"""The summarizer's requests carry a tag header and, when asked, Anthropic metadata.user_id.

Checked on the wire: a real ``anthropic.Anthropic`` client over ``httpx2.MockTransport``. The
metadata rule is restated here from the Messages API reference (platform.claude.com, "Create a
Message", ``metadata``): an object whose only field is ``user_id``, an opaque identifier (uuid,
hash) of at most 512 characters, never a name, email address or phone number.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import anthropic
import httpx2
import pytest

from progsum import ConfigError, Summary, SummaryRequest
from progsum.summarizers import AnthropicSummarizer
from progsum.testing import summary_request
from tests.conversations import TRIP_RULE, trip_planning
from tests.test_anthropic_summarizer import tool

SUMMARIZER_ID = hashlib.sha256(b"trip-bot summarizer").hexdigest()


def documented_metadata_problems(body: dict[str, Any]) -> list[str]:
    """What the Messages API would refuse about a request's ``metadata`` (empty: fine)."""
    if "metadata" not in body:
        return []
    metadata = body["metadata"]
    if not isinstance(metadata, dict):
        return ["metadata must be an object"]
    problems = [f"unknown metadata field {key!r}" for key in metadata if key != "user_id"]
    user_id = metadata.get("user_id")
    if user_id is not None and (not isinstance(user_id, str) or len(user_id) > 512):
        problems.append("user_id must be a string of at most 512 characters")
    return problems


class Wire:
    """Answers every request with one tool call and keeps the requests as sent."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Keep the request; answer with a valid update."""
        self.requests.append(request)
        response: httpx2.Response = tool({"constraints": [TRIP_RULE]})(request)
        return response

    def client(self) -> anthropic.Anthropic:
        """A real Anthropic client whose transport is this handler."""
        return anthropic.Anthropic(
            api_key="sk-test",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
        )

    def body(self, n: int = 0) -> dict[str, Any]:
        """The JSON body of request ``n``."""
        found: dict[str, Any] = json.loads(self.requests[n].content)
        return found


def request() -> SummaryRequest[Summary]:
    """A summary request over a short trip conversation."""
    return summary_request(trip_planning(6))


def test_requests_carry_the_default_tag_header() -> None:
    """By default every summarizer request names itself in X-Progsum-Tag and X-Progsum-Task."""
    wire = Wire()
    AnthropicSummarizer(wire.client()).summarize(request())
    sent = wire.requests[0]
    assert sent.headers["x-progsum-tag"] == "progsum-summarizer"
    assert sent.headers["x-progsum-task"] == "summarize"
    assert "metadata" not in wire.body()


def test_a_chosen_tag_and_user_id_reach_the_wire() -> None:
    """tag= sets the header; user_id= is sent as metadata.user_id, valid by the documented rule."""
    wire = Wire()
    claude = AnthropicSummarizer(wire.client(), tag="trip-bot-summaries", user_id=SUMMARIZER_ID)
    claude.summarize(request())
    assert wire.requests[0].headers["x-progsum-tag"] == "trip-bot-summaries"
    body = wire.body()
    assert body["metadata"] == {"user_id": SUMMARIZER_ID}
    assert documented_metadata_problems(body) == []


def test_no_tag_sends_no_header() -> None:
    """tag=None leaves the request untagged."""
    wire = Wire()
    AnthropicSummarizer(wire.client(), tag=None).summarize(request())
    assert "x-progsum-tag" not in wire.requests[0].headers
    assert "x-progsum-task" not in wire.requests[0].headers


def test_the_callers_own_headers_win() -> None:
    """extra_headers in create_kwargs are kept and override the tag's headers of the same name."""
    wire = Wire()
    own = {"extra_headers": {"X-Progsum-Task": "nightly", "X-Team": "travel"}}
    AnthropicSummarizer(wire.client(), create_kwargs=own).summarize(request())
    headers = wire.requests[0].headers
    assert (headers["x-progsum-tag"], headers["x-progsum-task"]) == (
        "progsum-summarizer",
        "nightly",
    )
    assert headers["x-team"] == "travel"


@pytest.mark.parametrize(
    ("user_id", "why"),
    [
        ("ops@example.com", "looks like a name, email address or phone number"),
        ("+1 415 555 0100", "looks like a name, email address or phone number"),
        ("Jane Doe", "looks like a name, email address or phone number"),
        ("x" * 513, "1-512 characters"),
        ("", "1-512 characters"),
    ],
)
def test_identifying_or_oversized_user_ids_are_refused(user_id: str, why: str) -> None:
    """A user_id the Messages API rules forbid is a ConfigError naming the value and the fix."""
    with pytest.raises(ConfigError, match=why):
        AnthropicSummarizer(Wire().client(), user_id=user_id)


def test_a_bad_tag_and_double_metadata_are_refused() -> None:
    """A tag that is not a header-safe token, or metadata set twice, is a ConfigError."""
    with pytest.raises(ConfigError, match="tag='two words'"):
        AnthropicSummarizer(Wire().client(), tag="two words")
    with pytest.raises(ConfigError, match="pass one"):
        AnthropicSummarizer(
            Wire().client(),
            user_id=SUMMARIZER_ID,
            create_kwargs={"metadata": {"user_id": "other"}},
        )
