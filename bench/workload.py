"""The synthetic agent workload of the cost benchmarks, and how they time it.

Every chat message carries about 263 estimated tokens; the tool-heavy session repeats a user
request, an assistant tool call, a 2,400-character tool result and an assistant answer. Timings
are wall clock (``perf_counter``), garbage collection paused, as the minimum and the median of
repeated runs (docs/performance.md).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from progsum import SummaryRequest, SummaryUpdate
from progsum.policy._tokens import HeuristicCounter
from progsum.testing import FunctionSummarizer

WORDS = [
    "the",
    "agent",
    "compared",
    "both",
    "itineraries",
    "and",
    "kept",
    "the",
    "cheaper",
    "option",
    "because",
    "the",
    "later",
    "train",
    "arrives",
    "before",
    "check-in",
    "and",
    "the",
    "hotel",
    "confirmed",
    "breakfast",
    "for",
    "two",
    "guests",
    "every",
    "morning",
]
MESSAGE_TOKENS = 263
"""Estimated tokens of one chat message of the workload."""
TOOL_RESULT_CHARS = 2_400
"""Characters of one tool result: above the reduction's 2,000-character clearing threshold."""
GROWN_WINDOW = 200_000
"""The window of a grown session: one a timed turn cannot fill."""


def _text(tokens: int, seed: int) -> str:
    """Prose of about ``tokens`` estimated tokens (`HeuristicCounter`), varied by ``seed``."""
    counter = HeuristicCounter()
    words: list[str] = [f"Turn {seed}:"]
    n = seed
    while counter.count_message({"role": "user", "content": " ".join(words)}) < tokens:
        words.append(WORDS[n % len(WORDS)])
        n += 7
    return " ".join(words)


TEXTS = [_text(MESSAGE_TOKENS, seed) for seed in range(64)]


def chat(n: int) -> dict[str, Any]:
    """Chat message ``n`` (OpenAI and Anthropic alike): about 263 tokens, alternating roles."""
    return {"role": "user" if n % 2 == 0 else "assistant", "content": TEXTS[n % len(TEXTS)]}


def tool_message(n: int) -> dict[str, Any]:
    """Message ``n`` of the tool-heavy Anthropic session: request, call, result, answer."""
    step, call = n % 4, f"toolu_{n // 4:07d}"
    if step == 0:
        return {"role": "user", "content": TEXTS[n % len(TEXTS)]}
    if step == 1:
        return {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look that up."},
                {"type": "tool_use", "id": call, "name": "search", "input": {"q": f"q{n}"}},
            ],
        }
    if step == 2:  # noqa: PLR2004 - the third message of a cycle
        body = (f"row {n}: " + TEXTS[n % len(TEXTS)] + "\n") * 4
        return {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": f"toolu_{n // 4:07d}",
                    "content": body[:TOOL_RESULT_CHARS],
                }
            ],
        }
    return {"role": "assistant", "content": TEXTS[(n + 3) % len(TEXTS)]}


def one_fact(request: SummaryRequest[Any]) -> SummaryUpdate:
    """An instant summarizer: one fact per segment, in words of its last user request.

    The words come from the segment, so the engine's contract keeps the fact, and the summary
    grows with the session as a real one does (about 80 characters per compaction).
    """
    texts = [
        message["content"]
        for _, message in request.segment
        if message["role"] == "user" and isinstance(message["content"], str)
    ]
    if not texts:
        return SummaryUpdate()
    words = texts[-1].split()
    return SummaryUpdate(add={"established_facts": [" ".join(words[:14]) + "."]})


def fake() -> FunctionSummarizer:
    """The instant fake summarizer of every row."""
    return FunctionSummarizer(one_fact)


# -- timing ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Timing:
    """Minimum and median of repeated runs, in microseconds."""

    low: float
    median: float

    def show(self) -> str:
        """``min / median`` with a unit fit for the size."""
        if self.median >= 1_000:  # noqa: PLR2004 - print milliseconds from 1 ms on
            return f"{self.low / 1_000:,.2f} / {self.median / 1_000:,.2f} ms"
        return f"{self.low:,.1f} / {self.median:,.1f} µs"


def timing(samples: Sequence[float]) -> Timing:
    """The minimum and median of ``samples``."""
    return Timing(min(samples), statistics.median(samples))


def timed(run: Callable[[], object], repeats: int) -> Timing:
    """Time ``run`` ``repeats`` times (µs), garbage collection paused."""
    samples: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter_ns()
            run()
            samples.append((time.perf_counter_ns() - start) / 1_000)
    finally:
        gc.enable()
    return timing(samples)


def fresh_message(n: int, round_: int) -> dict[str, Any]:
    """`tool_message` ``n`` with every text numbered by ``round_``: texts no earlier round had."""
    message = tool_message(n)
    content = message["content"]
    mark = "[" + "".join(chr(ord("a") + int(digit)) for digit in str(round_)) + "] "  # no value
    if isinstance(content, str):
        return {**message, "content": mark + content}
    blocks = []
    for block in content:
        if block["type"] == "text":
            blocks.append({**block, "text": mark + block["text"]})
        elif block["type"] == "tool_result":
            blocks.append({**block, "content": mark + block["content"]})
        else:
            blocks.append(block)
    return {**message, "content": blocks}
