"""Who writes the summary: ``--summarizer``, else Claude with a key and the extractive one without.

Claude runs inside a fallback to the extractive summarizer, so a provider outage degrades the
summary instead of failing the command. The Anthropic SDK is imported only when it is chosen.
"""

from __future__ import annotations

import os
import sys

from progsum.cli._status import UsageError
from progsum.summarizers._fallback import FallbackSummarizer
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summary._request import Summarizer

__all__ = ["summarizer_for"]


def summarizer_for(choice: str | None) -> tuple[Summarizer, str | None]:
    """The summarizer, and its model's name when one is called."""
    keyed = bool(os.environ.get("ANTHROPIC_API_KEY"))
    if choice is None:
        choice = "anthropic" if keyed else "extractive"
        if not keyed:
            sys.stderr.write(
                "progsum: no ANTHROPIC_API_KEY, so summarizing offline with the extractive "
                "summarizer (the conversation's own sentences as terse notes, no model)\n"
            )
    if choice == "extractive":
        return ExtractiveSummarizer(), None
    if not keyed:
        raise UsageError(
            "--summarizer anthropic needs ANTHROPIC_API_KEY; set it, or use --summarizer "
            "extractive to run offline"
        )
    # the Anthropic SDK and Instructor take about a second to import: only with a key
    from progsum.summarizers.anthropic._summarizer import AnthropicSummarizer  # noqa: PLC0415

    claude = AnthropicSummarizer()
    return FallbackSummarizer(claude, ExtractiveSummarizer()), claude.model
