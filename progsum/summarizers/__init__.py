"""Summarizers: turn a segment of the conversation into an update of the typed summary.

* `ExtractiveSummarizer`: deterministic, offline, no model; the default without an API key and the
  last resort of a fallback chain.
* `AnthropicSummarizer`: a model through Instructor (Anthropic by default, any Instructor client).
* `FallbackSummarizer`: tries summarizers in order, marking the result degraded when the first
  one failed, so the agent loop never sees a summarizer exception.
* `default_summarizer()`: Claude with an extractive fallback when ``ANTHROPIC_API_KEY`` is set,
  else the extractive summarizer alone.

Each is imported on first use, so ``import progsum`` does not import the Anthropic SDK.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from progsum.summarizers._fallback import FallbackSummarizer, default_summarizer
    from progsum.summarizers.anthropic._summarizer import AnthropicSummarizer
    from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer

__all__ = [
    "AnthropicSummarizer",
    "ExtractiveSummarizer",
    "FallbackSummarizer",
    "default_summarizer",
]

_HOMES = {
    "AnthropicSummarizer": "progsum.summarizers.anthropic._summarizer",
    "ExtractiveSummarizer": "progsum.summarizers.extractive._summarizer",
    "FallbackSummarizer": "progsum.summarizers._fallback",
    "default_summarizer": "progsum.summarizers._fallback",
}


def __getattr__(name: str) -> _typing.Any:  # noqa: ANN401 - module attribute hook
    home = _HOMES.get(name)
    if home is None:
        message = f"module 'progsum.summarizers' has no attribute {name!r}"
        raise AttributeError(message)
    return getattr(_importlib.import_module(home), name)
