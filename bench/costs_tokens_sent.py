"""OpenAI-shaped requests priced incrementally: the figures of pricing each request whole.

`costs_tokens` prices every request of a stream: its whole JSON body counted, and the prompt
cache read by `prefix.openai_cache_read` (a running digest over each message's sorted JSON). At a
200k window a request holds a thousand messages or more, so dumping, counting and hashing each
message again per request made a row quadratic in the stream (τ-bench at 200k did not finish in
10 minutes). `Sent` keeps each message's texts while it stays in the requests, and the running
digests of the longest prefix the last request shares with this one, so a request costs its new
messages plus a join and one count of the body. The figures are the same, text for text: the
body's JSON is the join of its messages' (``json.dumps``' separators), and the digests and
token sums run over the same texts in the same order.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import prefix

from progsum.messages._formats import to_record
from progsum.policy._tokens import HeuristicCounter
from tests import prefix_rule

_COUNTER = HeuristicCounter()


@dataclass(frozen=True, slots=True)
class _Texts:
    message: object
    """The message itself, held so that its ``id`` is not reused while it is remembered."""
    plain: str
    """``json.dumps`` of its record, as the body's JSON holds it."""
    tokens: int
    """Tokens of its sorted JSON (`prefix.openai_cache_read`'s unit)."""
    sorted_bytes: bytes


@dataclass
class Sent:
    """One stream's OpenAI-shaped requests and the prompt cache they fill."""

    cache: prefix.Cache = field(default_factory=prefix.Cache)
    _texts: dict[int, _Texts] = field(default_factory=dict)
    _chain: list[tuple[bytes, Any, int, str]] = field(default_factory=list)
    """Per message of the last request: its sorted JSON, the digest object, tokens and digest
    so far."""

    def price(self, messages: Sequence[Any]) -> tuple[str, int]:
        """The request body's JSON text (``{"messages": [...]}``) and its tokens read from cache.

        The same as ``json.dumps({"messages": to_record(messages)}, ensure_ascii=False)`` and
        ``prefix.openai_cache_read(to_record(messages), cache)``.
        """
        texts = [self._of(m) for m in messages]
        chain = self._chain
        shared = 0
        while (
            shared < min(len(chain), len(texts)) and chain[shared][0] == texts[shared].sorted_bytes
        ):
            shared += 1
        del chain[shared:]
        read = 0
        for at, text in enumerate(texts):
            if at < shared:
                _, _, total, digest = chain[at]
            else:
                running = chain[at - 1][1].copy() if at else hashlib.sha256()
                running.update(text.sorted_bytes)
                total = (chain[at - 1][2] if at else 0) + text.tokens
                digest = running.hexdigest()
                chain.append((text.sorted_bytes, running, total, digest))
            if digest in self.cache.written and total >= prefix.OPENAI_MINIMUM:
                read = total - total % prefix.OPENAI_STEP
            self.cache.written.add(digest)
        self._texts = {id(m): t for m, t in zip(messages, texts, strict=True)}
        return '{"messages": [' + ", ".join(t.plain for t in texts) + "]}", read

    def _of(self, message: Any) -> _Texts:  # noqa: ANN401 - a logged message
        known = self._texts.get(id(message))
        if known is not None and known.message is message:
            return known
        record = to_record(message)
        ordered = json.dumps(record, sort_keys=True, ensure_ascii=False)
        return _Texts(
            message,
            json.dumps(record, ensure_ascii=False),
            _COUNTER.count_text(ordered),
            ordered.encode(),
        )


@dataclass(frozen=True, slots=True)
class _Message:
    message: object
    """The message itself, held so that its ``id`` is not reused while it is remembered."""
    plain: str
    """``json.dumps`` of its record, as the body's JSON holds it."""
    role: str
    blocks: tuple[tuple[str, bool], ...]
    """Each content block's sorted JSON without ``cache_control``, and whether it is marked."""


@dataclass
class SentAnthropic:
    """One stream's Anthropic requests and the prompt cache they fill, priced incrementally.

    The same figures as ``json.dumps(body)`` and ``prefix.anthropic_cache_read(body, cache)`` of
    ``body = {"system": to_record(system), "messages": to_record(messages)}``: each cache unit (a
    system block, or a message's block with the message's index and role) is dumped, counted and
    hashed once while the requests keep it in the same place.
    """

    cache: prefix.Cache = field(default_factory=prefix.Cache)
    _messages: dict[int, _Message] = field(default_factory=dict)
    _chain: list[tuple[str, Any, int, str]] = field(default_factory=list)
    """Per unit of the last request: its text, the digest object, tokens and digest so far."""

    def price(self, system: Sequence[Any], messages: Sequence[Any]) -> tuple[str, int, int]:
        """The body's JSON text and the tokens it reads from and writes to the cache."""
        records = [to_record(b) for b in system]
        shown = [self._of(m) for m in messages]
        units: list[tuple[str, bool]] = [
            (json.dumps(prefix_rule.plain(b), sort_keys=True, ensure_ascii=False), _marked(b))
            for b in prefix_rule.blocks(records)
        ]
        for at, message in enumerate(shown):
            role = json.dumps(message.role)
            units.extend((f"[{at}, {role}, {text}]", marked) for text, marked in message.blocks)
        digests, tokens = self._digests([text for text, _ in units])
        read, written = 0, 0
        marks = [at for at, (_, marked) in enumerate(units) if marked]
        for mark in marks:
            for end in range(mark, max(-1, mark - prefix.LOOKBACK), -1):
                if digests[end] in self.cache.written:
                    read = max(read, tokens[end + 1])
                    break
        for mark in marks:
            if tokens[mark + 1] >= prefix.CACHE_MINIMUM:
                self.cache.written.add(digests[mark])
                written = max(written, tokens[mark + 1] - read)
        self._messages = {id(m): s for m, s in zip(messages, shown, strict=True)}
        system_text = ", ".join(json.dumps(r, ensure_ascii=False) for r in records)
        body = ", ".join(s.plain for s in shown)
        return f'{{"system": [{system_text}], "messages": [{body}]}}', read, written

    def _digests(self, texts: Sequence[str]) -> tuple[list[str], list[int]]:
        """The running digest after each unit, and the tokens before each (one more: the total)."""
        chain = self._chain
        shared = 0
        while shared < min(len(chain), len(texts)) and chain[shared][0] == texts[shared]:
            shared += 1
        del chain[shared:]
        for at in range(shared, len(texts)):
            running = chain[at - 1][1].copy() if at else hashlib.sha256()
            running.update(texts[at].encode())
            total = (chain[at - 1][2] if at else 0) + _COUNTER.count_text(texts[at])
            chain.append((texts[at], running, total, running.hexdigest()))
        return [c[3] for c in chain], [0, *(c[2] for c in chain)]

    def _of(self, message: Any) -> _Message:  # noqa: ANN401 - a logged message
        known = self._messages.get(id(message))
        if known is not None and known.message is message:
            return known
        record = to_record(message)
        blocks = tuple(
            (json.dumps(prefix_rule.plain(b), sort_keys=True, ensure_ascii=False), _marked(b))
            for b in prefix_rule.blocks(record.get("content"))
        )
        return _Message(message, json.dumps(record, ensure_ascii=False), record.get("role"), blocks)


def _marked(block: object) -> bool:
    return isinstance(block, dict) and "cache_control" in block
