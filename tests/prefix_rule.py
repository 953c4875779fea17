"""A fake of the Anthropic Messages API's prefix check on thinking blocks, written from its pages.

The rule, as Anthropic documents it for models with preserved thinking (Claude Fable and Mythos
5.1 and 5.2, Opus 5.5, Sonnet 5.5, Haiku 5.5):

* "Preserved thinking" (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking):
  the top-level ``system``, ``tools`` and the messages before a ``thinking`` or
  ``redacted_thinking`` block are its prefix; if the prefix differs from what was sent when the
  block was produced, that block **and every later thinking block** are invalid, and the API
  answers 400 or drops them.
* "Prefix checks on thinking blocks" (.../preserved-thinking/prefix-checks): a check also fails
  when a thinking block between others was left out or moved; ``cache_control`` markers are left
  out of the comparison.
* "Fix a thinking block bound to a different conversation"
  (.../preserved-thinking/fix-bound-to-a-different-conversation): the 400 reads "Invalid
  `signature` in `thinking` block. The block is bound to a different conversation."; with
  ``thinking.block_binding.prefix_mismatch_behavior: "drop_block"`` and the beta header
  ``thinking-binding-controls-2026-08-01`` the request succeeds and the invalid blocks are
  dropped (listed in ``input_transformations``).

The fake plays the rule with signatures it makes itself: every thinking block it returns is
signed with an HMAC of the prefix of the request that produced it, and every block a request
sends back must present the same prefix. Leaving out or moving a block changes the prefix of
the blocks after it, so those fail too. It knows nothing of progsum: it reads request bodies.
A string ``content`` or ``system`` is compared as the one text block it is shorthand for.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2

PRESERVED = (
    "claude-fable-5-2",
    "claude-mythos-5-2",
    "claude-fable-5-1",
    "claude-mythos-5-1",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)
"""The models the prefix-check pages list as running the check ("supportedModels")."""
BETA = "thinking-binding-controls-2026-08-01"
THINKING = ("thinking", "redacted_thinking")
BOUND_ERROR = (
    "Invalid `signature` in `thinking` block. The block is bound to a different conversation. "
    "Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "
    '"drop_block".'
)
_KEY = b"prefix-rule-fake"

Body = dict[str, Any]
Reply = Callable[[Body, int], list[dict[str, Any]]]
"""The content after the reply's thinking block, for a request and its number."""


def plain(value: object) -> Any:
    """``value`` without ``cache_control`` anywhere: what the prefix check compares."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def blocks(content: object) -> list[Any]:
    """A ``content`` or ``system`` value as blocks: a string is its one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def compared(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the prefix check reads of a request: system, tools and messages, as plain blocks."""
    return {
        "system": plain(blocks(body.get("system"))),
        "tools": plain(body.get("tools") or []),
        "messages": [
            {"role": m.get("role"), "content": plain(blocks(m.get("content")))}
            for m in body.get("messages") or []
        ],
    }


def prefix_digest(body: Mapping[str, Any], message: int, block: int) -> str:
    """The digest of the prefix of content block ``block`` of message ``message`` in ``body``.

    The prefix is ``system``, ``tools``, every message before it and the blocks before it in its
    own message, without ``cache_control``.
    """
    messages = list(body.get("messages") or [])
    own = messages[message] if message < len(messages) else {"role": "assistant", "content": []}
    prefix = compared({**body, "messages": messages[:message]})
    prefix["partial"] = {
        "role": own.get("role"),
        "content": plain(blocks(own.get("content")))[:block],
    }
    text = json.dumps(prefix, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def sign(body: Mapping[str, Any], message: int, block: int) -> str:
    """The fake's signature of a block produced at that place of ``body``."""
    digest = prefix_digest(body, message, block)
    return hmac.new(_KEY, digest.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Check:
    """What the prefix check made of one request."""

    sent: int
    """Thinking blocks the request sent back."""
    invalid: tuple[tuple[int, int], ...]
    """``(message, block)`` of each block that failed the check, or was after one that did."""
    forged: tuple[tuple[int, int], ...]
    """Blocks whose signature the fake never issued."""


def check(body: Mapping[str, Any]) -> Check:
    """The prefix check of a request body: which thinking blocks it sends, which fail."""
    sent = 0
    invalid: list[tuple[int, int]] = []
    forged: list[tuple[int, int]] = []
    failed = False
    for m, message in enumerate(body.get("messages") or []):
        for b, block in enumerate(blocks(message.get("content"))):
            if not isinstance(block, Mapping) or block.get("type") not in THINKING:
                continue
            sent += 1
            signature = str(block.get("signature") or block.get("data") or "")
            if not _issued(signature):
                forged.append((m, b))
                continue
            failed = failed or not hmac.compare_digest(signature, sign(body, m, b))
            if failed:
                invalid.append((m, b))
    return Check(sent, tuple(invalid), tuple(forged))


_ISSUED: set[str] = set()


def _issued(signature: str) -> bool:
    return signature in _ISSUED


def signed(signature: str) -> str:
    """Record ``signature`` as one the fake issued (a block it produced)."""
    _ISSUED.add(signature)
    return signature


def produce(body: Mapping[str, Any], content_after: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The assistant message a preserved-thinking model returns for ``body``: thinking first.

    Its thinking block is signed for the prefix it was produced under (the request's messages,
    then nothing of its own message before it).
    """
    position = len(body.get("messages") or [])
    thinking = {
        "type": "thinking",
        "thinking": f"(reasoning for request of {position} messages)",
        "signature": signed(sign(body, position, 0)),
    }
    return {"role": "assistant", "content": [thinking, *map(dict, content_after)]}


def resign(body: Mapping[str, Any], message: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """``message`` as if the model had produced it for ``body``: its thinking re-signed.

    For replaying a recorded transcript through progsum: each logged assistant message is taken
    as the answer to the request progsum rendered before it. Returns the copy and how many
    thinking blocks it holds.
    """
    position = len(body.get("messages") or [])
    content = blocks(message.get("content"))
    copy = {**message, "content": [dict(b) if isinstance(b, Mapping) else b for b in content]}
    count = 0
    for b, block in enumerate(copy["content"]):
        if isinstance(block, dict) and block.get("type") in THINKING:
            key = "signature" if block["type"] == "thinking" else "data"
            partial = {**body, "messages": [*(body.get("messages") or []), copy]}
            block[key] = signed(sign(partial, position, b))
            count += 1
    return copy, count


# -- the fake API --------------------------------------------------------------------------------


@dataclass
class PrefixAPI:
    """An HTTP handler for ``/v1/messages`` that signs thinking and runs the prefix check.

    Models in `PRESERVED` check every block sent back: a failure is the documented 400, unless
    the request asks for ``drop_block`` with the beta header (then the invalid blocks are dropped
    and counted). Other models check nothing. Accepted requests are answered by ``reply`` after
    a signed thinking block.
    """

    reply: Reply
    bodies: list[Body] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    refused: int = 0
    dropped: int = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Check the request; answer 400 or a reply."""
        body: Body = json.loads(request.content)
        self.bodies.append(body)
        outcome = check(body)
        self.checks.append(outcome)
        model = str(body.get("model", ""))
        if outcome.forged:
            return _error(
                f"messages.{outcome.forged[0][0]}: Invalid `signature` in `thinking` block."
            )
        if model in PRESERVED and outcome.invalid:
            drops = _drops(request, body)
            if not drops:
                self.refused += 1
                m, b = outcome.invalid[0]
                return _error(f"messages.{m}.content.{b}: {BOUND_ERROR}")
            self.dropped += len(outcome.invalid)
        message = produce(body, self.reply(body, len(self.bodies)))
        usage = {"input_tokens": len(request.content) // 4, "output_tokens": 40}
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{len(self.bodies):04d}",
                "type": "message",
                "model": model,
                "stop_reason": "tool_use"
                if any(b.get("type") == "tool_use" for b in message["content"])
                else "end_turn",
                "stop_sequence": None,
                "usage": usage,
                **message,
            },
        )

    def client(self) -> anthropic.Anthropic:
        """A real Anthropic client whose transport is this fake."""
        http = httpx2.Client(transport=httpx2.MockTransport(self))
        return anthropic.Anthropic(api_key="sk-test", max_retries=0, http_client=http)


def _drops(request: httpx2.Request, body: Body) -> bool:
    """Whether the request asks the API to drop blocks that fail the check."""
    betas = request.headers.get("anthropic-beta", "")
    binding = (body.get("thinking") or {}).get("block_binding") or {}
    asked = binding.get("prefix_mismatch_behavior") == "drop_block"
    return asked and BETA in [b.strip() for b in betas.split(",")]


def _error(message: str) -> httpx2.Response:
    error = {"type": "invalid_request_error", "message": message}
    return httpx2.Response(400, json={"type": "error", "error": error})
