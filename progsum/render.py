"""Rendering: the summary as a binding header, and the model view for Anthropic and OpenAI.

One strict, sandboxed Jinja environment renders every template in ``prompts/``. The same state
renders to the same bytes, so provider prompt caches hit and snapshot tests stay stable.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jinja2 import FileSystemLoader, StrictUndefined, Template, TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment

from progsum.breakpoints import mark
from progsum.errors import ConfigError
from progsum.inert import inert
from progsum.messages import FORMAT_NAMES, Message, field
from progsum.reduce import visible
from progsum.resources import data_dir
from progsum.schema import BaseSummary, spec_of
from progsum.state import register_header_renderer

if TYPE_CHECKING:
    from progsum.state import ConversationState

__all__ = ["compile_template", "environment", "render_anthropic", "render_header", "render_openai"]


@functools.cache
def environment() -> SandboxedEnvironment:
    """The one Jinja environment: strict undefined, no autoescape, sandboxed, loads ``prompts/``."""
    return SandboxedEnvironment(
        loader=FileSystemLoader(data_dir("prompts")),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


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
        thread_id: The conversation's thread id: the header then names where the folded messages
            are kept (its provenance).
    """
    spec = spec_of(type(summary))
    objective = inert(getattr(summary, spec.objective.name)) if spec.objective else ""
    sections = [
        {
            "label": inert(f.label),
            "binding": f.binding,
            "entries": [
                {"id": inert(i.id), "text": inert(i.text)} for i in getattr(summary, f.name)
            ],
        }
        for f in spec.lists
        if getattr(summary, f.name)
    ]
    if not objective and not sections:
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
        schema=inert(spec.name),
        thread_id=inert(thread_id or "").replace('"', '\\"'),  # the template quotes it
    )


_RECENT_LIMIT = 32
"""Headers remembered by `_remembered_header`: a compaction renders one summary several times
(probes, the final state, consolidation), a fleet worker a few threads in turn."""

_recent: dict[tuple[int, tuple[int, int], int, str | None], tuple[BaseSummary, str]] = {}
_recent_lock = threading.Lock()


def _remembered_header(
    summary: BaseSummary, folded: tuple[int, int], compactions: int, thread_id: str | None
) -> str:
    """`render_header`, rendered once per summary object and arguments (summaries are frozen)."""
    key = (id(summary), folded, compactions, thread_id)
    with _recent_lock:
        found = _recent.get(key)
    if found is not None and found[0] is summary:  # the same object, not a new one at its id
        return found[1]
    text = render_header(summary, folded=folded, compactions=compactions, thread_id=thread_id)
    with _recent_lock:
        if len(_recent) >= _RECENT_LIMIT:
            del _recent[next(iter(_recent))]
        _recent[key] = (summary, text)
    return text


register_header_renderer(_remembered_header)


@functools.cache
def compile_template(source: str) -> Template:
    """A schema's own header template, compiled once in the one environment.

    Raises:
        ConfigError: the source is not valid Jinja.
    """
    try:
        return environment().from_string(source)
    except TemplateSyntaxError as exc:
        raise ConfigError(
            f"the schema's header template does not compile: {exc.message} (line {exc.lineno}); "
            "fix the Jinja syntax"
        ) from exc


def render_anthropic(
    state: ConversationState[Any],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    cache: bool = False,
) -> tuple[list[Mapping[str, Any]], list[Message]]:
    """The Anthropic Messages API view: ``(system_blocks, messages)``.

    The caller's system prompt comes first, unchanged (so its cached prefix survives), then the
    summary header as its own text block. Messages are the kept first task message and the verbatim
    tail, the caller's own objects (old tool data the cheap reduction cleared shows as a
    placeholder, in a copy); a user turn opens the list.

    With ``cache=True`` the last system block (the header) and the last kept message carry
    ``cache_control`` breakpoints, on copies (`progsum.breakpoints.mark`): the log is unchanged,
    at most 4 breakpoints are sent, and between compactions the request before the newest message
    renders the same bytes, so the provider reads it from the cache.

    Raises:
        ConfigError: the conversation is in OpenAI format.
    """
    _require_format(state, "anthropic", "render_openai")
    blocks: list[Mapping[str, Any]] = []
    if isinstance(system, str):
        if system:
            blocks.append({"type": "text", "text": system})
    elif system is not None:
        blocks.extend(system)
    if state.header:
        blocks.append({"type": "text", "text": state.header})
    messages = visible(state)
    if messages and field(messages[0], "role") != "user":
        bridge = environment().get_template("bridge.user.j2").render().strip()
        messages.insert(0, {"role": "user", "content": bridge})
    return mark(blocks, messages) if cache else (blocks, messages)


def render_openai(state: ConversationState[Any], *, system: str | None = None) -> list[Message]:
    """The OpenAI Chat Completions view: one message list.

    The caller's system prompt (argument, then any leading system/developer messages of the log),
    then the summary header as a system message, then the kept first task message and the tail.

    Raises:
        ConfigError: the conversation is in Anthropic format.
    """
    _require_format(state, "openai", "render_anthropic")
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    effective = visible(state)
    leading = 0
    while leading < len(effective) and field(effective[leading], "role") in ("system", "developer"):
        leading += 1
    messages.extend(effective[:leading])
    if state.header:
        messages.append({"role": "system", "content": state.header})
    messages.extend(effective[leading:])
    return messages


def _require_format(state: ConversationState[Any], wanted: str, other: str) -> None:
    fmt = state.format
    if fmt == "responses":
        other = "progsum.responses.render_responses"
    if fmt is not None and fmt != wanted:
        raise ConfigError(
            f"this conversation is in {FORMAT_NAMES[fmt]} format ({state.format_evidence}); "
            f"use {other}() for it"
        )


def _join_labels(labels: list[str]) -> str:
    words = [labels[0]] + [label[:1].lower() + label[1:] for label in labels[1:]]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]
