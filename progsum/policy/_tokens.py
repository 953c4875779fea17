"""Token accounting: a pluggable counter, a zero-dependency estimator, and usage anchoring.

Estimates are per message and cached by the conversation state, so a turn costs O(new messages).
When the caller hands back the provider's reported usage, the count becomes "last real usage +
estimate of what changed since", with the estimator's observed error ratio correcting the change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol, TypeAlias, runtime_checkable

from progsum.errors import ConfigError
from progsum.messages._formats import Message, field, parts
from progsum.policy._windows import token_factor

__all__ = [
    "DEFAULT_SAFETY_MARGIN",
    "Anchor",
    "HeuristicCounter",
    "Method",
    "TokenCounter",
    "anchor_usage",
    "count_with_anchor",
    "usage_tokens",
]

DEFAULT_SAFETY_MARGIN = 1.3
"""Multiplier on estimates until real usage has been seen (estimators are wrong both ways)."""

RATIO_BOUNDS = (0.5, 2.5)
"""Clamp for the observed real/estimated ratio, so one odd report cannot derail the count."""
RATIO_LOW, RATIO_HIGH = RATIO_BOUNDS

MIN_OBSERVABLE_CHANGE = 64
"""Smallest change in estimated tokens between two reports that is used to learn the ratio."""

Method: TypeAlias = Literal["anchored", "estimated"]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens; the engine caches ``count_message`` per message, so it may be slow-ish."""

    def count_message(self, message: Message) -> int:
        """Tokens this message adds to a request, framing included."""
        ...

    def count_text(self, text: str) -> int:
        """Tokens of a plain text (used for the rendered summary header)."""
        ...


_DENSE = '{}[]()<>=:;"/\\|_$#@*&%+`~^0123456789'.encode("ascii")
"""Symbols and digits: text dense in them (code, JSON, logs, ids) tokenizes finer than prose.

Counted on the UTF-8 bytes (`bytes.translate` deletes through a 256-entry table, several times
faster than `str.translate`); ASCII bytes never occur inside a multi-byte character, so the count
is the number of these characters in the text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HeuristicCounter:
    """A zero-dependency token estimator, tuned to err slightly high.

    Prose, code/JSON/log-like text and non-ASCII text count at different rates; each message adds a
    fixed framing cost, each content block a smaller one, and images and documents a fixed cost.
    """

    prose_chars_per_token: float = 3.6
    """ASCII prose: Anthropic documents ~3.5 characters per token for English."""
    data_chars_per_token: float = 2.6
    """ASCII text dense in symbols and digits (code, JSON, logs, ids) tokenizes finer."""
    non_ascii_tokens_per_extra_byte: float = 0.5
    """Per UTF-8 byte beyond the first: ~0.5 token for accented Latin, ~1 per CJK character."""
    message_tokens: int = 4
    """Framing per message (role markers)."""
    part_tokens: int = 3
    """Framing per content block, tool call or tool result."""
    image_tokens: int = 1_600
    """An image at the provider's default resolution cap."""
    document_tokens: int = 3_000
    """A document (PDF) of a few pages."""
    scale: float = 1.0
    """Multiplies every estimate: the model's tokenizer density (`for_model` sets it)."""

    @classmethod
    def for_model(cls, model: str | None) -> HeuristicCounter:
        """An estimator scaled for ``model``'s tokenizer (Claude 4.7 and later count ~30% more).

        Unknown or missing model names get the unscaled estimator.
        """
        if model is None:
            return cls()
        try:
            return cls(scale=token_factor(model))
        except ConfigError:
            return cls()

    def count_text(self, text: str) -> int:
        """Estimate the tokens of ``text``."""
        return math.ceil(self._text(text) * self.scale)

    def _text(self, text: str) -> float:
        """Unscaled estimate of ``text``."""
        if not text:
            return 0.0
        length = len(text)
        if text.isascii():
            ascii_length, extra_bytes = length, 0
            data = text.encode("ascii")
        else:
            ascii_length = len(text.encode("ascii", "ignore"))
            data = text.encode("utf-8", "surrogatepass")
            extra_bytes = len(data) - length
        if ascii_length:
            dense = len(data) - len(data.translate(None, _DENSE))
            density = min(1.0, dense / ascii_length / 0.25)  # 25% symbols/digits reads as data
            rate = self.prose_chars_per_token + density * (
                self.data_chars_per_token - self.prose_chars_per_token
            )
            ascii_tokens = ascii_length / rate
        else:
            ascii_tokens = 0.0
        return ascii_tokens + extra_bytes * self.non_ascii_tokens_per_extra_byte

    def count_message(self, message: Message) -> int:
        """Estimate the tokens ``message`` adds to a request."""
        if type(message) is dict and "type" not in message and "tool_calls" not in message:
            content = message.get("content")
            if type(content) is str:  # a plain chat message: one text part
                total = self.message_tokens + self.part_tokens + self._text(content)
                return math.ceil(total * self.scale)
        total = float(self.message_tokens)
        for kind, text in parts(message):
            total += self.part_tokens
            if kind == "image":
                total += self.image_tokens
            elif kind == "document":
                total += self.document_tokens
            else:
                total += self._text(text)
        return math.ceil(total * self.scale)


class Anchor(NamedTuple):
    """The last real usage report and what the estimator thought of the same context.

    A named tuple: an immutable value built on every turn that reports usage, where a frozen
    dataclass costs five times as much to build.

    Attributes:
        tokens: Real tokens of the context (prompt + reply) the provider reported.
        estimate: The estimate of that same context when it was reported.
        ratio: Learnt real/estimated ratio for changes since; None until two reports differ enough
            (the policy's safety margin applies meanwhile).
        observations: How many report pairs have refined ``ratio``.
    """

    tokens: int
    estimate: int
    ratio: float | None = None
    observations: int = 0


_built = tuple.__new__
"""Builds an `Anchor` from its four fields without the keyword handling of its constructor."""


def anchor_usage(previous: Anchor | None, tokens: int, estimate: int) -> Anchor:
    """Record a usage report of ``tokens`` for a context estimated at ``estimate``.

    The ratio is learnt from the change between two reports, not from their totals, so the fixed
    cost the estimator cannot see (system prompt, tool definitions) stays in the anchor and does
    not inflate the ratio.
    """
    if previous is None:
        return _built(Anchor, (tokens, estimate, None, 0))
    _, was, ratio, observations = previous
    change = estimate - was
    if -MIN_OBSERVABLE_CHANGE < change < MIN_OBSERVABLE_CHANGE:
        return _built(Anchor, (tokens, estimate, ratio, observations))
    observed = (tokens - previous[0]) / change
    if observed < RATIO_LOW:
        observed = RATIO_LOW
    elif observed > RATIO_HIGH:
        observed = RATIO_HIGH
    if ratio is not None:
        observed = (ratio + observed) / 2
    return _built(Anchor, (tokens, estimate, observed, observations + 1))


def count_with_anchor(anchor: Anchor | None, estimate: int, margin: float) -> tuple[int, Method]:
    """The counted figure for a context estimated at ``estimate``, and how it was obtained.

    Without an anchor: the estimate times ``margin``. With one: the reported tokens plus the change
    in estimate since, scaled by the learnt ratio. Until a ratio is learnt, growth is scaled by
    ``margin`` and shrinkage (a compaction) is not, so the count errs high either way.
    """
    if anchor is None:
        return math.ceil(estimate * margin), "estimated"
    change = estimate - anchor.estimate
    if anchor.ratio is not None:
        ratio = anchor.ratio
    else:
        ratio = margin if change > 0 else 1.0
    counted = anchor.tokens + math.ceil(change * ratio)
    return max(0, counted), "anchored"


def usage_tokens(usage: object) -> int:
    """Tokens of the context a provider reported: everything sent plus the reply.

    Accepts an Anthropic ``Usage`` (input + cache creation + cache read + output tokens), an OpenAI
    ``CompletionUsage`` (prompt + completion tokens), either as a dict, or a plain int.
    """
    if isinstance(usage, bool):
        raise ConfigError(f"usage={usage!r} is not a token count; pass response.usage or an int")
    if isinstance(usage, int):
        if usage < 0:
            raise ConfigError(f"usage={usage} is negative; pass the provider's reported count")
        return usage
    if (
        isinstance(usage, Mapping)
        or hasattr(usage, "input_tokens")
        or hasattr(usage, "prompt_tokens")
    ):
        keys_anthropic = (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
        if field(usage, "input_tokens") is not None:
            return sum(int(field(usage, key) or 0) for key in keys_anthropic)
        if field(usage, "prompt_tokens") is not None:
            return int(field(usage, "prompt_tokens")) + int(field(usage, "completion_tokens") or 0)
    raise ConfigError(
        f"usage={usage!r} has neither 'input_tokens' (Anthropic) nor 'prompt_tokens' (OpenAI); "
        "pass response.usage or an int"
    )
