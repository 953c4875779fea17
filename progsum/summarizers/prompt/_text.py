"""The prompts' text: the static system prompts and the per-call user prompts.

Rendered from ``prompts/*.j2`` through the one strict Jinja environment (`progsum._templates`).
The system prompts have no variables, so every call sends the same bytes and the provider can
cache them; the user prompts show the prior summary (or the summary to condense) with item ids,
every item text escaped so that it cannot forge the prompt's own tags.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from progsum._templates import environment
from progsum.judge._extract import Statement
from progsum.messages._transcript import escape, neutralise, render_segment
from progsum.summary._request import ConsolidationRequest, SummaryRequest
from progsum.summary._schema import BaseSummary, SchemaSpec

__all__ = [
    "consolidation_system_prompt",
    "consolidation_user_prompt",
    "system_prompt",
    "user_prompt",
]

_SUMMARY_TAG = re.compile(r"<(?=\s*/?\s*summary\b)", re.IGNORECASE)
"""The consolidation prompt's own tag, escaped in item texts like
`progsum.messages._transcript.TAGS`."""


@functools.cache
def system_prompt() -> str:
    """The static rules, identical for every call (so the provider can cache them)."""
    return environment().get_template("summarize.system.j2").render()


def user_prompt(request: SummaryRequest[Any], *, clip_chars: int | None) -> str:
    """The per-call prompt: prior summary with ids, must-keep candidates, the delimited segment."""
    spec = request.spec
    prior = request.prior
    extraction = request.extraction
    objective = getattr(prior, spec.objective.name) if spec.objective else ""
    return (
        environment()
        .get_template("summarize.user.j2")
        .render(
            objective=_block(objective),
            fields=_fields(prior, spec, _block),
            prohibitions=_statements(extraction.prohibitions),
            obligations=_statements(extraction.obligations),
            questions=_statements(extraction.questions),
            values=[{"at": at, "value": escape(value)} for at, value in extraction.values],
            task=_task(request, clip_chars),
            first=request.segment.start,
            last=request.segment.end - 1,
            transcript=render_segment(request.segment, clip_chars=clip_chars),
        )
    )


def _task(request: SummaryRequest[Any], clip_chars: int | None) -> str:
    """The user's messages of the kept head (the task the agent works on), as delimited text.

    Only the user's messages: the head's system messages are the agent's own instructions, which
    can be long and say nothing of what the user wants.
    """
    head = request.head
    if head is None:
        return ""
    pairs = [
        (at, m) for (at, m), author in zip(head, head.authors, strict=True) if author == "user"
    ]
    return render_segment(pairs, clip_chars=clip_chars)


def _fields(
    summary: BaseSummary, spec: SchemaSpec, block: Callable[[str], str]
) -> list[dict[str, object]]:
    """The non-empty list fields of ``summary`` for a template, item texts through ``block``."""
    return [
        {
            "name": f.name,
            "label": f.label,
            "binding": f.binding,
            "items": [{"id": i.id, "text": block(i.text)} for i in getattr(summary, f.name)],
        }
        for f in spec.lists
        if getattr(summary, f.name)
    ]


def _statements(statements: tuple[Statement, ...]) -> list[dict[str, object]]:
    return [{"at": s.at, "text": _block(s.text)} for s in statements]


def _block(text: str) -> str:
    """Escaped text whose continuation lines are indented under a list item."""
    return "\n".join(
        ("  " + line if line and k else line)
        for k, line in enumerate(escape(text.strip()).split("\n"))
    )


@functools.cache
def consolidation_system_prompt() -> str:
    """The static consolidation rules, identical for every call (so the provider can cache them)."""
    return environment().get_template("consolidate.system.j2").render()


def consolidation_user_prompt(request: ConsolidationRequest[Any]) -> str:
    """The per-call consolidation prompt: the summary with item ids, its size and its budget."""
    spec = request.spec
    summary = request.summary
    objective = getattr(summary, spec.objective.name) if spec.objective else ""
    excess = request.tokens - request.budget
    return (
        environment()
        .get_template("consolidate.user.j2")
        .render(
            objective=_summary_block(objective),
            fields=_fields(summary, spec, _summary_block),
            tokens=f"{request.tokens:,}",
            budget=f"{request.budget:,}",
            excess=f"{excess:,}" if excess > 0 else "",
            condensable=", ".join(
                f'"{f.name}"' for f in spec.lists if not f.binding and getattr(summary, f.name)
            ),
        )
    )


def _summary_block(text: str) -> str:
    """`_block`, with the ``<summary>`` tag and its look-alikes escaped too."""
    return neutralise(_block(text), _SUMMARY_TAG)
