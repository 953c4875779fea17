"""What a model summarizer asks and how its answer is checked: prompts and the response model.

Pure (pydantic and Jinja, no provider SDK), so any model summarizer can reuse it. The response model
is derived from the schema: one list of new item texts per list field, retirements with reasons,
and an optional new objective. Its validator, given the request's `Checks` through the validation
context (``{CHECKS_KEY: checks(request)}``), rejects

* a retired id that is not an item of the prior summary,
* a binding item (a decision or constraint) retired without a reason,
* a new item (or objective) carrying an exact value (`progsum.values.exact_values`) found verbatim
  neither in the segment's full text nor in the prior summary,

so that Instructor re-asks the model with the error.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, model_validator

from progsum.errors import ConfigError
from progsum.extract import Statement
from progsum.guards import unsupported_values
from progsum.render import environment
from progsum.schema import BaseSummary, FieldSpec, SchemaSpec, spec_of
from progsum.summarizer import SummaryRequest
from progsum.transcript import escape, render_segment, source_text
from progsum.update import Retirement, SummarizerUsage, SummaryUpdate

__all__ = [
    "CHECKS_KEY",
    "TOOL_NAME",
    "Checks",
    "RetireEntry",
    "checks",
    "response_model",
    "system_prompt",
    "to_update",
    "user_prompt",
]

TOOL_NAME = "record_summary_update"
"""Name of the tool the model calls with its update."""
CHECKS_KEY = "progsum_checks"
"""Key of the `Checks` in the validation context."""

_RESERVED = ("retire", "objective")
_MAX_IDS_SHOWN = 40


# -- the response model --------------------------------------------------------------------------


class RetireEntry(BaseModel):
    """A prior item the segment supersedes or resolves."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Id of an item of the prior summary, as shown in brackets.")
    reason: str = Field(
        description="What in the segment supersedes or resolves it, e.g. 'answered in message "
        "14: the flight is booked'."
    )


@dataclass(frozen=True, slots=True)
class Checks:
    """What the validator needs, passed through Instructor's validation context."""

    prior: Mapping[str, tuple[str, bool]]
    """Live prior item ids: field label, binding."""
    sources: str
    """Full text of the segment and the prior summary, for the exact-value check."""


class _UpdateBase(BaseModel):
    """Base of the per-schema response models: checks ids, reasons and values against a request."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _check_against_request(self, info: ValidationInfo) -> Self:
        checks = info.context.get(CHECKS_KEY) if isinstance(info.context, Mapping) else None
        if not isinstance(checks, Checks):
            return self  # validated outside a summary request: nothing to compare with
        problems = [*self._retirement_problems(checks), *self._value_problems(checks)]
        if problems:
            raise ValueError("\n".join(["the update must be fixed:", *problems]))
        return self

    def _retirement_problems(self, checks: Checks) -> list[str]:
        problems: list[str] = []
        retire: list[RetireEntry] = getattr(self, "retire", [])
        for k, entry in enumerate(retire):
            known = checks.prior.get(entry.id)
            if known is None:
                ids = list(checks.prior)
                shown = ", ".join(ids[:_MAX_IDS_SHOWN]) + (
                    ", ..." if len(ids) > _MAX_IDS_SHOWN else ""
                )
                problems.append(
                    f"- retire[{k}]: {entry.id!r} is not an item of the prior summary; retire only "
                    f"ids shown in <prior_summary> ({shown or 'there are none'})"
                )
            elif known[1] and not entry.reason.strip():
                problems.append(
                    f"- retire[{k}]: {entry.id} is a binding item ({known[0]}); give the reason "
                    "the segment supersedes or resolves it, or do not retire it"
                )
        return problems

    def _value_problems(self, checks: Checks) -> list[str]:
        problems: list[str] = []
        for name, texts in self._new_texts():
            for k, text in enumerate(texts):
                missing = unsupported_values(text, checks.sources)
                if missing:
                    where = name if name == "objective" else f"{name}[{k}]"
                    problems.append(
                        f"- {where}: {text!r} carries {', '.join(missing)}, which appear(s) "
                        "nowhere in the segment or the prior summary; copy every value exactly as "
                        "written there, or leave the item out"
                    )
        return problems

    def _new_texts(self) -> list[tuple[str, list[str]]]:
        texts: list[tuple[str, list[str]]] = []
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name == "objective" and isinstance(value, str):
                texts.append((name, [value]))
            elif name != "retire" and isinstance(value, list):
                texts.append((name, [str(v) for v in value]))
        return texts


@functools.cache
def response_model(schema: type[BaseSummary]) -> type[BaseModel]:
    """The tool-input model for ``schema`` (cached per schema class).

    One ``list[str]`` of new items per list field (described by the field's metadata),
    ``retire``: a list of ``{id, reason}``, and ``objective`` (a new one, or null) when the schema
    has an objective field.

    Raises:
        ConfigError: a list field is called ``retire`` or ``objective``.
    """
    spec = spec_of(schema)
    fields: dict[str, Any] = {}
    for f in spec.lists:
        if f.name in _RESERVED:
            raise ConfigError(
                f"{schema.__name__}.{f.name} clashes with the summarizer's own {f.name!r} field; "
                "rename the list field (e.g. to 'retired_items' or 'goals')"
            )
        fields[f.name] = (
            list[str],
            Field(
                default_factory=list,
                description=f"{f.label}: {f.description}{_rules(f)} Only items this segment adds; "
                "never repeat or reword a prior item.",
            ),
        )
    fields["retire"] = (
        list[RetireEntry],
        Field(
            default_factory=list,
            description="Prior items the segment supersedes or resolves, each with why. Leave "
            "out items the segment merely does not mention.",
        ),
    )
    if spec.objective is not None:
        fields["objective"] = (
            str | None,
            Field(
                default=None,
                description=f"{spec.objective.label}: {spec.objective.description} Null unless "
                "the goal itself changed in this segment.",
            ),
        )
    model: type[BaseModel] = create_model(
        TOOL_NAME,
        __base__=_UpdateBase,
        __doc__="Record what the segment adds to the summary: new items per field, the prior "
        "items it supersedes or resolves (with why), and a new objective only if the goal changed.",
        **fields,
    )
    return model


def _rules(spec: FieldSpec) -> str:
    """What the field's schema rules mean for the model, as sentences after its description."""
    rules = ""
    if spec.binding:
        rules += " Binding: it stays until retired with a reason."
    if spec.kind == "keyed":
        rules += (
            " Write each item as 'key: value' (e.g. 'Order A-1042: refund issued'); an item with "
            "the key of a prior item replaces it, so give the new value under the same key."
        )
    if spec.max_items is not None:
        rules += f" Only the latest {spec.max_items} items are kept."
    return rules


# -- prompts -------------------------------------------------------------------------------------


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
            fields=[
                {
                    "name": f.name,
                    "label": f.label,
                    "binding": f.binding,
                    "items": [{"id": i.id, "text": _block(i.text)} for i in getattr(prior, f.name)],
                }
                for f in spec.lists
                if getattr(prior, f.name)
            ],
            prohibitions=_statements(extraction.prohibitions),
            obligations=_statements(extraction.obligations),
            questions=_statements(extraction.questions),
            values=[{"at": at, "value": escape(value)} for at, value in extraction.values],
            first=request.segment.start,
            last=request.segment.end - 1,
            transcript=render_segment(request.segment, clip_chars=clip_chars),
        )
    )


def _statements(statements: tuple[Statement, ...]) -> list[dict[str, object]]:
    return [{"at": s.at, "text": _block(s.text)} for s in statements]


def _block(text: str) -> str:
    """Escaped text whose continuation lines are indented under a list item."""
    return "\n".join(
        ("  " + line if line and k else line)
        for k, line in enumerate(escape(text.strip()).split("\n"))
    )


def checks(request: SummaryRequest[Any]) -> Checks:
    """What the validator compares the model's update with, for ``request``."""
    spec = request.spec
    prior: dict[str, tuple[str, bool]] = {}
    texts = [getattr(request.prior, spec.objective.name)] if spec.objective else []
    for f in spec.lists:
        for item in getattr(request.prior, f.name):
            prior[item.id] = (f.label, f.binding)
            texts.append(item.text)
    texts.append(source_text(request.segment.messages))
    return Checks(prior=prior, sources="\n".join(texts))


def to_update(parsed: object, spec: SchemaSpec, usage: SummarizerUsage) -> SummaryUpdate:
    """The validated tool input as a `SummaryUpdate`."""
    add = {
        f.name: tuple(texts)
        for f in spec.lists
        if (texts := [t for t in getattr(parsed, f.name) if t.strip()])
    }
    retire = tuple(
        Retirement(id=entry.id, reason=entry.reason.strip())
        for entry in getattr(parsed, "retire", ())
    )
    objective = getattr(parsed, "objective", None) if spec.objective else None
    return SummaryUpdate(
        objective=objective if isinstance(objective, str) and objective.strip() else None,
        add=add,
        retire=retire,
        usage=usage,
    )
