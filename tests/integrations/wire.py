"""An adapter's Anthropic traffic against the fake prefix check, recorded request by request.

`Wire` puts `tests.prefix_rule.PrefixAPI` (which signs every thinking block it returns with its
prefix and checks every block sent back) behind a real Anthropic client, and records how many
times the compactor had changed what earlier requests sent (a fold, a reduction: its events)
before each request. From the recorded bodies alone, never from progsum's own helpers:

* `Wire.grown` checks the append-only rule between consecutive requests with no such change
  between them: ``system`` and ``tools`` equal, the earlier messages a prefix of the later ones,
  byte for byte with cache breakpoints aside (DESIGN invariant 7);
* `Wire.report` gives the figures of issue 46: requests checked, thinking blocks sent, blocks
  refused, and the blocks left out by the first request after each compaction (every assistant
  message the fake produces opens with a thinking block, so one sent without it was stripped).

The scripted model (`agent_reply`) works like a coding agent: for a person's message it reads a
file, after the first result it reads another, after the second it answers in text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2

from progsum import Compactor, Policy
from progsum.state._events import CompactionEvent
from progsum.summarizers import ExtractiveSummarizer
from tests.prefix_rule import THINKING, PrefixAPI

CHANGES = ("compacted", "reduced", "consolidated", "repaired")
"""Event outcomes that may rewrite what earlier requests sent (a compaction, as the issue says)."""
MODEL = "claude-sonnet-5-5"
"""A model with preserved thinking (the fake checks its prefixes)."""
WORDS = ("the", "parser", "keeps", "a", "cursor", "over", "the", "token", "stream", "and", "backs")


def file_text(path: str) -> str:
    """What the ``read_file`` tool returns: ~300 words that name the file (recall finds it)."""
    start = sum(map(ord, path))
    return f"contents of {path}: " + " ".join(WORDS[(start + k) % len(WORDS)] for k in range(300))


def coding_turns(count: int) -> Iterator[str]:
    """A person's messages: the task and a rule, then questions on files read turns ago."""
    yield "Refactor the parser. Never edit the generated lexer."
    for n in range(1, count):
        yield f"What did module_{3 * n - 18}.py do?" if n > 6 else "Go on."


def _blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def agent_reply(body: Mapping[str, Any], number: int) -> list[dict[str, Any]]:
    """The content after the model's thinking: read a file, read a second one, then answer."""
    last = _blocks((body.get("messages") or [{}])[-1].get("content"))
    results = [b for b in last if isinstance(b, Mapping) and b.get("type") == "tool_result"]
    if results and str(results[0].get("tool_use_id", "")).endswith("_b"):
        return [{"type": "text", "text": f"Step {number} done: the cursor logic is understood."}]
    step = "b" if results else "a"
    return [
        {
            "type": "tool_use",
            "id": f"toolu_{number:04d}_{step}",
            "name": "read_file",
            "input": {"path": f"module_{number}.py"},
        }
    ]


def _plain(value: Any) -> Any:
    """``value`` without cache breakpoints, a string content as the one text block it stands for."""
    if isinstance(value, Mapping):
        plain = {k: _plain(v) for k, v in value.items() if k != "cache_control"}
        if "role" in plain and isinstance(plain.get("content"), str):
            plain["content"] = [{"type": "text", "text": plain["content"]}]
        return plain
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Report:
    """The issue's figures for one adapter's run."""

    requests: int
    compactions: int
    sent: int
    """Thinking blocks the requests sent back."""
    refused: int
    """Requests the fake refused (400: a block bound to a different conversation)."""
    invalid: int
    """Blocks that failed the prefix check (refused, or dropped under ``drop_block``)."""
    left_out: tuple[int, ...]
    """Thinking blocks left out by the first request after each compaction."""
    grown: int
    """Consecutive request pairs without a compaction between them, each checked append-only."""


class Changes:
    """The compactor's prefix changes (as its event hook), counted at each request."""

    def __init__(self) -> None:
        self.changes = 0
        self.before: list[int] = []
        """Per request: the compactor's prefix changes so far."""

    def on_event(self, event: CompactionEvent) -> None:
        """The compactor's event hook: count what changes the prefix."""
        if event.outcome in CHANGES:
            self.changes += 1

    def mark(self) -> None:
        """A request is being answered: record how many changes came before it."""
        self.before.append(self.changes)


class Wire(Changes):
    """The fake Messages API behind real Anthropic clients, and what came before each request."""

    def __init__(self) -> None:
        super().__init__()
        self.api = PrefixAPI(reply=agent_reply)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Record the request's place, then let the fake check and answer it (streamed if asked)."""
        self.mark()
        response = self.api(request)
        if response.status_code != 200 or not json.loads(request.content).get("stream"):
            return response
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content="".join(_events(response.json())).encode(),
        )

    def compactor(self, model: str = MODEL, *, window: int = 12_000) -> Compactor[Any]:
        """A compactor for ``model`` whose events this wire counts (24 turns fold a few times)."""
        return Compactor(
            policy=Policy(model=model, context_window=window),
            summarizer=ExtractiveSummarizer(),
            on_event=self.on_event,
        )

    def client(self) -> anthropic.Anthropic:
        """A real Anthropic client whose transport is this wire."""
        http = httpx2.Client(transport=httpx2.MockTransport(self))
        return anthropic.Anthropic(api_key="sk-test", max_retries=0, http_client=http)

    def async_client(self) -> anthropic.AsyncAnthropic:
        """A real async Anthropic client whose transport is this wire."""
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self))
        return anthropic.AsyncAnthropic(api_key="sk-test", max_retries=0, http_client=http)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Every request body, in order."""
        return self.api.bodies

    def grown(self) -> int:
        """Assert that requests only grow between compactions; return the pairs checked."""
        checked = 0
        for n in range(1, len(self.bodies)):
            if self.before[n] != self.before[n - 1]:
                continue
            old, new = _plain(self.bodies[n - 1]), _plain(self.bodies[n])
            assert new.get("system") == old.get("system"), f"request {n}: system changed"
            assert new.get("tools") == old.get("tools"), f"request {n}: tools changed"
            earlier = old["messages"]
            assert new["messages"][: len(earlier)] == earlier, f"request {n}: history rewritten"
            checked += 1
        return checked

    def checked(self) -> Report:
        """The run's figures, once the claims every adapter's run must meet are asserted.

        It compacted and recalled (several blocks in one request), no block was refused or
        dropped, blocks were sent and stale ones left out, and requests only grew between
        compactions.
        """
        report = self.report()
        assert report.compactions >= 3
        assert recalled(self.bodies) > 3
        assert max(str(body["messages"]).count("<recalled_history ") for body in self.bodies) > 1
        assert report.refused == report.invalid == 0
        assert report.sent > report.requests  # the blocks since each fold are sent
        assert sum(report.left_out) > 0  # the blocks from before each fold are not
        assert report.grown > report.requests // 2
        return report

    def report(self) -> Report:
        """The figures of the run so far."""
        firsts = [n for n in range(1, len(self.before)) if self.before[n] != self.before[n - 1]]
        return Report(
            requests=len(self.bodies),
            compactions=self.changes,
            sent=sum(c.sent for c in self.api.checks),
            refused=self.api.refused,
            invalid=sum(len(c.invalid) + len(c.forged) for c in self.api.checks),
            left_out=tuple(left_out(self.bodies[n]) for n in firsts),
            grown=self.grown(),
        )


def _events(message: dict[str, Any]) -> Iterator[str]:
    """A Messages API reply as the server-sent events of a streamed one."""

    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    content, usage = message["content"], message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield event({"type": "message_start", "message": start})
    for index, block in enumerate(content):
        kind = block["type"]
        empty = {"thinking": {"thinking": "", "signature": ""}, "text": {"text": ""}}.get(kind)
        opened = {**block, **empty} if empty is not None else {**block, "input": {}}
        yield event({"type": "content_block_start", "index": index, "content_block": opened})
        if kind == "thinking":
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        elif kind == "text":
            deltas = [{"type": "text_delta", "text": block["text"]}]
        else:
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        for delta in deltas:
            yield event({"type": "content_block_delta", "index": index, "delta": delta})
        yield event({"type": "content_block_stop", "index": index})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield event({"type": "message_delta", "delta": stop, "usage": usage})
    yield event({"type": "message_stop"})


def left_out(body: Mapping[str, Any]) -> int:
    """Assistant messages of ``body`` sent without the thinking block the fake gave each."""
    return sum(
        1
        for message in body.get("messages") or []
        if message.get("role") == "assistant"
        and not any(
            isinstance(b, Mapping) and b.get("type") in THINKING
            for b in _blocks(message.get("content"))
        )
    )


def recalled(bodies: Sequence[Mapping[str, Any]]) -> int:
    """Requests that carry at least one recall block."""
    return sum("<recalled_history " in str(body.get("messages")) for body in bodies)
