"""Metering: the tokens of every API response of one call, as Instructor receives them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from instructor.core import Hooks

from progsum.messages._formats import field as read
from progsum.summary._update import SummarizerUsage

__all__ = ["Meter", "usage_of"]


@dataclass
class Meter:
    """Meters every API response of one summary call (the first attempt and each re-ask).

    Usage is read inside Instructor's ``completion:response`` hook, because Instructor later
    overwrites each response's ``usage`` with the running total of the call.
    """

    usages: list[SummarizerUsage] = field(default_factory=list)
    cached: str | None = None
    """The tool whose request asked for a prompt cache (``cache_control`` on the system block)."""
    tool: str | None = None
    """The tool the model was asked to call (None: a JSON-mode client, which answers in text)."""
    last: object = None
    """The last response received (None before any): kept to tell a malformed body."""
    started: float = field(default_factory=time.perf_counter)

    def hooks(self) -> Hooks:
        """Per-call Instructor hooks that meter each response."""
        hooks = Hooks()
        hooks.on("completion:response", self.record)
        return hooks

    def record(self, response: object) -> None:
        """Note one response and its own usage."""
        self.usages.append(usage_of(read(response, "usage")))
        self.last = response

    def usage(self) -> SummarizerUsage:
        """Tokens summed over every response, wall-clock latency, number of calls."""
        total = SummarizerUsage(latency_s=time.perf_counter() - self.started, calls=0)
        for usage in self.usages:
            total += usage
        return total


def usage_of(usage: object) -> SummarizerUsage:
    """Anthropic usage as is; OpenAI usage mapped to Anthropic's meaning (cache reads apart)."""
    if read(usage, "prompt_tokens") is not None:
        cached = _int(read(read(usage, "prompt_tokens_details"), "cached_tokens"))
        return SummarizerUsage(
            input_tokens=_int(read(usage, "prompt_tokens")) - cached,
            output_tokens=_int(read(usage, "completion_tokens")),
            cache_read_input_tokens=cached,
        )
    return SummarizerUsage(
        input_tokens=_int(read(usage, "input_tokens")),
        output_tokens=_int(read(usage, "output_tokens")),
        cache_creation_input_tokens=_int(read(usage, "cache_creation_input_tokens")),
        cache_read_input_tokens=_int(read(usage, "cache_read_input_tokens")),
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
