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
