"""A fake Anthropic Messages API that enforces each model family's documented request rules.

Written from Anthropic's pages (cited per rule; ``docs/models.md`` lists them), independently of
progsum's own tables in ``progsum.summarizers._shapes`` and ``progsum.policy._windows``: a request
the real API would refuse gets the HTTP 400 ``invalid_request_error`` it would get. Accepted
requests are answered with a tool call (after a thinking block when thinking is on), and with
usage whose cache counters follow the documented minimum cacheable prefix per model.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2

Body = dict[str, Any]
Answer = Callable[[Body], Mapping[str, Any] | None]
"""Tool input for an accepted request, or None for a text-only reply (no tool call)."""

# -- the rules, per documented family ------------------------------------------------------------

FORCED_TOOL_ERROR = (
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-fable-5-1",
    "claude-mythos-5-1",
)
"""What's new in Claude Opus 5.5 / Sonnet 5.5: "Forced tool use returns an error" (the first
breaking changes of Opus 5.5 "also apply on Claude Fable 5.1"); Mythos 5.1 shares Fable 5.1's
specifications."""
THINKS_BY_DEFAULT = re.compile(r"^claude-(haiku|sonnet|opus|fable|mythos)-5(-\d+)?$")
"""Claude 5.x: adaptive thinking is on when ``thinking`` is left out (model pages' "Thinking:
Adaptive" rows; Haiku 5.5 migration guide). Claude 4.x thinks only when asked."""
CANNOT_DISABLE = ("claude-opus-5-5", "claude-fable-5-1", "claude-mythos-5-1")
"""What's new in Claude Opus 5.5: "Thinking can't be disabled" (also Fable 5.1): ``disabled`` and
``enabled`` + ``budget_tokens`` return 400."""
BETWEEN_TOOLS_MODELS = ("claude-sonnet-5-5",)
"""What's new in Claude Sonnet 5.5: ``between_tools`` turns off up-front thinking (replacing
``disabled``); the SDK's fallback docs say other models may not support it."""
NO_MANUAL_THINKING = THINKS_BY_DEFAULT
"""Haiku 5.5 migration guide, Sonnet 5 overview: ``enabled`` + ``budget_tokens`` returns 400."""
NO_SAMPLING = ("claude-haiku-5-5", "claude-sonnet-5")
"""Haiku 5.5 migration guide ("Remove temperature, top_p and top_k"), Sonnet 5 overview."""
NO_PREFILL = ("claude-haiku-5-5",)
"""Haiku 5.5 migration guide: requests must end messages with a user turn."""
DISABLE_ONLY_UP_TO_HIGH = ("claude-haiku-5-5", "claude-opus-5")
"""Prompting Claude Haiku 5.5 / What's new in Opus 5.5: ``disabled`` works only at effort low,
medium or high; xhigh and max return 400."""
MAX_BREAKPOINTS = 4
"""Prompt caching: at most 4 cache breakpoints per request, counted over the whole body (see
`breakpoints`)."""
CACHE_MINIMUM = {
    "claude-haiku-5-5": 512,
    "claude-opus-5": 512,
    "claude-sonnet-5": 1_024,
    "claude-haiku-4-5": 4_096,
    "claude-opus-4-6": 4_096,
    "claude-opus-4-5": 4_096,
    "claude-opus-4-7": 2_048,
    "claude-opus-4-8": 1_024,
    "claude-sonnet-4-5": 1_024,
}
"""Minimum cacheable prompt length (prompt caching page; Haiku 5.5 model page). Models missing
here get ``UNLISTED_CACHE_MINIMUM``, so a cache asked for on them is never written."""
UNLISTED_CACHE_MINIMUM = 1_000_000
CHARS_PER_TOKEN = 3.0
"""The fake's own token estimate: conservative for Claude's newer tokenizer."""


def violations(body: Body) -> list[str]:
    """Why the real API would refuse ``body`` (empty when it would accept it)."""
    model = str(body.get("model", ""))
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    choice = body.get("tool_choice") or {}
    forced = choice.get("type") in ("tool", "any")
    effort = (body.get("output_config") or {}).get("effort")
    found: list[str] = []
    if forced and model in FORCED_TOOL_ERROR:
        found.append(f"tool_choice.type={choice['type']!r} is not supported for {model}")
    active = kind in ("enabled", "adaptive") or (kind is None and THINKS_BY_DEFAULT.match(model))
    if forced and active:
        found.append("Thinking may not be enabled when tool_choice forces tool use.")
    if kind in ("disabled", "enabled") and model in CANNOT_DISABLE:
        found.append(f'"thinking.type.{kind}" is not supported for this model')
    if kind == "disabled" and model in BETWEEN_TOOLS_MODELS:
        found.append('"thinking.type.disabled" is not supported; use "between_tools"')
    if kind == "between_tools" and model not in BETWEEN_TOOLS_MODELS:
        found.append('"thinking.type.between_tools" is not supported for this model')
    if kind == "enabled" and NO_MANUAL_THINKING.match(model):
        found.append('"thinking.type.enabled" is not supported for this model')
    if kind == "disabled" and model in DISABLE_ONLY_UP_TO_HIGH and effort in ("xhigh", "max"):
        found.append(f'"thinking.type.disabled" is not supported at effort {effort!r}')
    if model in NO_SAMPLING:
        found += [
            f"{key} is not supported for {model}"
            for key in ("temperature", "top_p", "top_k")
            if key in body
        ]
    messages = body.get("messages") or []
    if model in NO_PREFILL and messages and messages[-1].get("role") == "assistant":
        found.append("assistant message prefill is not supported for this model")
    found_breakpoints = breakpoints(body)
    if found_breakpoints > MAX_BREAKPOINTS:
        found.append(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {found_breakpoints}."
        )
    return found


def breakpoints(value: object) -> int:
    """How many ``cache_control`` breakpoints a request body (or any part of one) carries.

    The rule (Prompt caching, https://platform.claude.com/docs/en/build-with-claude/prompt-caching):
    a request may define at most 4 cache breakpoints, and the count covers every place a
    ``cache_control`` can sit, in the order the prefix is built: tool definitions, system blocks,
    then message content blocks; a top-level ``cache_control`` (automatic caching) takes a slot
    too. Past the limit the API answers 400 "A maximum of 4 blocks with cache_control may be
    provided. Found 5." (the text as reported in coder/mux#3112). Every dict holding the key
    counts, wherever it is, whatever its value: stricter than any one reading of the page.
    """
    if isinstance(value, dict):
        here = 1 if "cache_control" in value else 0
        return here + sum(breakpoints(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list):
        return sum(breakpoints(v) for v in value)
    return 0


def thinks(body: Body) -> bool:
    """Whether the model thinks before answering ``body`` (so its reply opens with thinking)."""
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    model = str(body.get("model", ""))
    return kind in ("enabled", "adaptive") or (
        kind is None and bool(THINKS_BY_DEFAULT.match(model))
    )


def estimate(value: object) -> int:
    """The fake's token estimate of a JSON value."""
    return int(len(json.dumps(value, ensure_ascii=False)) / CHARS_PER_TOKEN)


# -- the fake API --------------------------------------------------------------------------------


@dataclass
class RuleAPI:
    """An HTTP handler for ``/v1/messages`` that refuses what each family's docs refuse."""

    answer: Answer
    bodies: list[Body] = field(default_factory=list)
    refusals: list[list[str]] = field(default_factory=list)
    cached: set[str] = field(default_factory=set)
    """Digests of prefixes written to the fake's cache."""

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Check the body against the rules; answer 400 or a reply."""
        body: Body = json.loads(request.content)
        self.bodies.append(body)
        problems = violations(body)
        self.refusals.append(problems)
        if problems:
            error = {"type": "invalid_request_error", "message": "; ".join(problems)}
            return httpx2.Response(400, json={"type": "error", "error": error})
        return httpx2.Response(200, json=self._reply(body))

    def client(self) -> anthropic.Anthropic:
        """A real Anthropic client whose transport is this fake."""
        http = httpx2.Client(transport=httpx2.MockTransport(self))
        return anthropic.Anthropic(api_key="sk-test", max_retries=0, http_client=http)

    def async_client(self) -> anthropic.AsyncAnthropic:
        """A real async Anthropic client whose transport is this fake."""
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self))
        return anthropic.AsyncAnthropic(api_key="sk-test", max_retries=0, http_client=http)

    def _reply(self, body: Body) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if thinks(body):
            content.append({"type": "thinking", "thinking": "", "signature": "sig-01"})
        tool_input = self.answer(body)
        if tool_input is None:
            content.append({"type": "text", "text": "I have read the segment."})
        elif not body.get("tools"):  # JSON mode: the answer is the reply's text
            content.append({"type": "text", "text": json.dumps(dict(tool_input))})
        else:
            tool = body["tools"][0]["name"]
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{len(self.bodies):03d}",
                    "name": tool,
                    "input": dict(tool_input),
                }
            )
        return {
            "id": f"msg_{len(self.bodies):03d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use"
            if body.get("tools") and tool_input is not None
            else "end_turn",
            "stop_sequence": None,
            "usage": self._usage(body),
        }

    def _usage(self, body: Body) -> dict[str, int]:
        total = estimate([body.get("tools"), body.get("system"), body.get("messages")])
        prefix = _cached_prefix(body)
        minimum = CACHE_MINIMUM.get(str(body["model"]), UNLISTED_CACHE_MINIMUM)
        written = read = 0
        if prefix is not None and estimate(prefix) >= minimum:
            digest = hashlib.sha256(json.dumps(prefix, sort_keys=True).encode()).hexdigest()
            if digest in self.cached:
                read = estimate(prefix)
            else:
                written = estimate(prefix)
                self.cached.add(digest)
        return {
            "input_tokens": total - written - read,
            "output_tokens": 120,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }


def _cached_prefix(body: Body) -> list[Any] | None:
    """Tools and system blocks up to the last system block marked for caching, if one is."""
    system = body.get("system")
    if not isinstance(system, list):
        return None
    marked = [i for i, block in enumerate(system) if "cache_control" in block]
    if not marked:
        return None
    blocks = [
        {k: v for k, v in b.items() if k != "cache_control"} for b in system[: marked[-1] + 1]
    ]
    return [body.get("tools"), blocks]
