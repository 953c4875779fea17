"""One model call: what it asks for, its tool-input model, its two prompts, its validator's checks.

Pure: a `Call` is built from a request by the prompt package (`progsum.summarizers.prompt`),
before any client is touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel

from progsum.summarizers.prompt._consolidation import consolidation_checks, consolidation_model
from progsum.summarizers.prompt._text import (
    consolidation_system_prompt,
    consolidation_user_prompt,
    system_prompt,
    user_prompt,
)
from progsum.summarizers.prompt._update import checks, response_model
from progsum.summary._request import ConsolidationRequest, SummaryRequest
from progsum.summary._schema import BaseSummary

__all__ = [
    "CONSOLIDATE",
    "SUMMARIZE",
    "Call",
    "Task",
    "condensable",
    "consolidation_call",
    "summary_call",
]


@dataclass(frozen=True, slots=True)
class Task:
    """What a call asks for, in the words its error messages use."""

    method: str
    """The public method: "summarize"."""
    answer: str
    """What the model returns: "summary update"."""
    nothing: str
    """What a failure left undone: "nothing was summarized"."""
    smaller: str
    """How to need fewer output tokens, after "raise max_tokens": " or fold smaller segments"."""


SUMMARIZE = Task(
    "summarize", "summary update", "nothing was summarized", " or fold smaller segments"
)
CONSOLIDATE = Task("consolidate", "consolidation", "nothing was consolidated", "")


@dataclass(frozen=True, slots=True)
class Call:
    """One model call: the tool's input model, the two prompts and the validator's checks."""

    task: Task
    response_model: type[BaseModel]
    system: str
    prompt: str
    checks: object

    @property
    def tool(self) -> str:
        """The name of the tool whose input is the answer."""
        return self.response_model.__name__


def summary_call(request: SummaryRequest[Any], *, clip_chars: int | None) -> Call:
    """The call that asks for the update of ``request.segment``."""
    return Call(
        task=SUMMARIZE,
        response_model=response_model(cast("type[BaseSummary]", request.schema)),
        system=system_prompt(),
        prompt=user_prompt(request, clip_chars=clip_chars),
        checks=checks(request),
    )


def consolidation_call(request: ConsolidationRequest[Any]) -> Call:
    """The call that asks to condense ``request.summary``."""
    return Call(
        task=CONSOLIDATE,
        response_model=consolidation_model(cast("type[BaseSummary]", request.schema)),
        system=consolidation_system_prompt(),
        prompt=consolidation_user_prompt(request),
        checks=consolidation_checks(request),
    )


def condensable(request: ConsolidationRequest[Any]) -> bool:
    """Whether ``request``'s summary has an item of a non-binding field to consolidate."""
    summary = request.summary
    return any(getattr(summary, f.name) for f in request.spec.lists if not f.binding)
