"""The summary as a binding header: the text the model reads as its system header.

Deterministic: the same summary renders to the same bytes (prompt caches, snapshot tests).
Every string the template gets is `inert` (DESIGN invariant 11).
"""

from __future__ import annotations

from progsum._memo import memoized
from progsum._templates import compile_template, environment
from progsum.summary._inert import inert, inert_item
from progsum.summary._schema import BaseSummary, spec_of
from progsum.summary._work import task_lines

__all__ = ["render_header", "work_lines"]


def render_header(
    summary: BaseSummary,
    *,
    folded: tuple[int, int],
    compactions: int,
    thread_id: str | None = None,
) -> str:
    """Render ``summary`` as the header; empty when it holds nothing.

    Every string the template gets is `inert`: one line that cannot open a section, fence or
    list item, without control, bidi or zero-width characters (DESIGN invariant 11).

    Args:
        summary: The current summary.
        folded: Log range ``[start, end)`` the summary covers.
        compactions: How many compactions produced it.
        thread_id: The thread of the archive that holds every folded message word for word:
            the header then names where they are kept. None when they are not all there (no
            archive, or a write still pending), so the header promises no archive.
    """
    spec = spec_of(type(summary))
    objective = inert(getattr(summary, spec.objective.name)) if spec.objective else ""
    sections = []
    for f in spec.lists:
        items = getattr(summary, f.name)
        if items:
            read = [_entry(i.id, i.text) for i in items]
            sections.append(
                {
                    "label": inert(f.label),
                    "binding": f.binding,
                    "entries": [entry for entry, _ in read],
                    "lines": "".join(line for _, line in read),
                }
            )
    tasks = [_entry(task_id, text) for task_id, text in task_lines(summary.work)]
    if not objective and not sections and not tasks:
        return ""
    labels = [inert(f.label) for f in spec.binding]
    phrase = _join_labels(labels) if labels else ""
    template = (
        environment().get_template("header.md.j2")
        if spec.template is None
        else compile_template(spec.template)
    )
    return template.render(
        first=folded[0] + 1,
        last=folded[1],
        compactions=compactions,
        binding_phrase=phrase,
        objective=objective,
        objective_label=inert(spec.objective.label) if spec.objective else "",
        sections=sections,
        tasks=[entry for entry, _ in tasks],
        tasks_lines="".join(line for _, line in tasks),
        schema=inert(spec.name),
        thread_id=inert(thread_id or "").replace('"', '\\"'),  # the template quotes it
    )


@memoized("progsum.summary._header.entry", 512 * 1024)  # a fold renders every live item again
def _entry(item_id: str, text: str) -> tuple[dict[str, str], str]:
    """An item as a template reads it (``id``, ``text``, both inert) and as its header line.

    The line is ``prompts/header.entry.md.j2`` rendered for it. The dict is shared by every
    header that holds the item; templates only read it.
    """
    entry = {"id": inert(item_id), "text": inert_item(text)}
    line = environment().get_template("header.entry.md.j2").render(**entry)
    return entry, line


def work_lines(summary: BaseSummary) -> list[str]:
    """The header lines of the summary's work state: its tasks and the artifact trail's lines.

    The trail's lines are the items our code copied from tool calls (``origin="extracted"``,
    ``author="tool"``: `progsum.contract._trail`), in schema order. What an agent's header budget
    follows (`progsum.policy.Policy.in_conversation`).
    """
    lines = [line for _, line in (_entry(i, t) for i, t in task_lines(summary.work))]
    for f in spec_of(type(summary)).lists:
        lines.extend(
            _entry(item.id, item.text)[1]
            for item in getattr(summary, f.name)
            if item.origin == "extracted" and item.author == "tool"
        )
    return lines


def _join_labels(labels: list[str]) -> str:
    words = [labels[0]] + [label[:1].lower() + label[1:] for label in labels[1:]]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]
