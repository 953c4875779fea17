"""Sizes: the estimated tokens of a call's static prefix, and the chunks of a long segment.

Estimates use the heuristic counter of the summary model (`progsum.policy._tokens`); the model's
profile (`progsum.policy._windows`) gives its long-prompt price threshold.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from instructor.v2.providers.anthropic.schema import generate_anthropic_schema
from pydantic import BaseModel

from progsum.policy._tokens import HeuristicCounter
from progsum.policy._windows import find_profile
from progsum.summarizers._chunking import chunk_bounds
from progsum.summarizers.anthropic._call import Call
from progsum.summary._request import SummaryRequest

__all__ = ["chunks", "prefix_tokens"]

_LONG_PROMPT_MARGIN = 0.9
"""Chunks aim at 90% of a long-prompt threshold: the token estimate is a heuristic."""


def prefix_tokens(call: Call, model: str | None) -> int:
    """Estimated tokens of the static prefix: the tool definition and the system prompt."""
    counter = HeuristicCounter.for_model(model)
    return counter.count_text(_tool_json(call.response_model)) + counter.count_text(call.system)


def chunks(request: SummaryRequest[Any], call: Call, model: str | None) -> list[tuple[int, int]]:
    """Log ranges summarized one call each: the whole segment, or chunks under the threshold.

    Chunks only when the segment's prompt would pass the model's long-prompt price threshold
    (`progsum.policy._windows.ModelProfile.long_prompt`).
    """
    segment = request.segment
    whole = [(segment.start, segment.end)]
    found = find_profile(model) if model else None
    if found is None or found.long_prompt is None or len(segment) < 2:  # noqa: PLR2004 - a pair
        return whole
    counter = HeuristicCounter.for_model(model)
    prefix = prefix_tokens(call, model)
    total = prefix + counter.count_text(call.prompt)
    limit = int(found.long_prompt * _LONG_PROMPT_MARGIN)
    if total <= limit:
        return whole
    costs = [counter.count_message(message) for message in segment.messages]
    overhead = total - sum(costs)  # prefix, instructions, prior summary, framing
    return chunk_bounds(segment, costs, max(1, limit - overhead))


@functools.cache
def _tool_json(response_model: type[BaseModel]) -> str:
    """The tool definition Instructor sends for ``response_model``, as JSON text."""
    return json.dumps(generate_anthropic_schema(response_model), ensure_ascii=False)
