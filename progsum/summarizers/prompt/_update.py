"""The update tool: the model's answer for one segment, checked against the request.

`response_model` derives the tool-input model from the schema: one list of new item texts per list
field, retirements with reasons, and an optional new objective. Its validator, given the request's
`Checks` through the validation context (``{CHECKS_KEY: checks(request)}``), rejects an unknown
retired id, a binding item retired without a reason or without the user's message, and a new item
carrying an exact value found in neither the segment nor the prior summary, so that Instructor
re-asks the model with the error. `to_update` turns the validated answer into a `SummaryUpdate`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, model_validator

from progsum.contract._enforce import enforce
from progsum.contract._guards import unsupported_values
from progsum.judge._values import value_keys
from progsum.messages._transcript import source_text
from progsum.summarizers.prompt._tool import CHECKS_KEY, check_name, rules, shown_ids
from progsum.summary._request import SummaryRequest
from progsum.summary._schema import BaseSummary, SchemaSpec, spec_of
from progsum.summary._update import NewItem, Retirement, SummarizerUsage, SummaryUpdate

__all__ = [
    "TOOL_NAME",
    "Checks",
    "CitedItem",
    "RetireEntry",
    "checks",
    "response_model",
    "to_update",
]

TOOL_NAME = "record_summary_update"
"""Name of the tool the model calls with its update."""


class RetireEntry(BaseModel):
    """A prior item the segment supersedes or resolves."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Id of an item of the prior summary, as shown in brackets.")
    reason: str = Field(
        description="What in the segment supersedes or resolves it, e.g. 'answered in message "
        "14: the flight is booked'."
    )
    message: int | None = Field(
        default=None,
        description="For a binding item: the index of the user's message in the segment that "
        "reopens, changes or lifts it. Binding items are retired only on the user's word.",
    )


class CitedItem(BaseModel):
    """A new item of a binding field, with the message that states it.

    A plain string is accepted too; the engine then looks for the user's message that states it
    (`progsum.contract`).
    """

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="The item, with its exact values.")
    message: int = Field(
        description="Index of the segment message in which the user states it (or accepts it, "
        "for a decision the assistant proposed)."
    )


@dataclass(frozen=True, slots=True)
class Checks:
    """What the validator needs, passed through Instructor's validation context."""

    prior: Mapping[str, tuple[str, bool]]
    """Live prior item ids: field label, binding."""
    sources: str
    """Full text of the segment and the prior summary, for the exact-value check."""
    request: SummaryRequest[Any] | None = None
    """The request, for the engine's binding contract (`progsum.contract`)."""


class _UpdateBase(BaseModel):
    """Base of the per-schema response models: checks ids, reasons and values against a request."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _check_against_request(self, info: ValidationInfo) -> Self:
        checks = info.context.get(CHECKS_KEY) if isinstance(info.context, Mapping) else None
        if not isinstance(checks, Checks):
            return self  # validated outside a summary request: nothing to compare with
        problems = [*self._retirement_problems(checks), *self._value_problems(checks)]
        if not problems and checks.request is not None:
            problems = self._contract_problems(checks.request)
        if problems:
            raise ValueError("\n".join(["the update must be fixed:", *problems]))
        return self

    def _retirement_problems(self, checks: Checks) -> list[str]:
        problems: list[str] = []
        retire: list[RetireEntry] = getattr(self, "retire", [])
        for k, entry in enumerate(retire):
            known = checks.prior.get(entry.id)
            if known is None:
                problems.append(
                    f"- retire[{k}]: {entry.id!r} is not an item of the prior summary; retire only "
                    f"ids shown in <prior_summary> ({shown_ids(list(checks.prior))})"
                )
            elif known[1] and not entry.reason.strip():
                problems.append(
                    f"- retire[{k}]: {entry.id} is a binding item ({known[0]}); give the reason "
                    "the segment supersedes or resolves it, or do not retire it"
                )
        return problems

    def _contract_problems(self, request: SummaryRequest[Any]) -> list[str]:
        """Binding retirements the engine would refuse: no user message reopens the item."""
        update = to_update(self, request.spec, SummarizerUsage(calls=0))
        verdict = enforce(request, update)
        return [
            f"- retire: {refusal.id}: {refusal.why}; give in 'message' the index of the user's "
            "message that reopens it, or do not retire it"
            for refusal in verdict.refused
        ]

    def _value_problems(self, checks: Checks) -> list[str]:
        problems: list[str] = []
        keys = value_keys(checks.sources)
        for name, texts in self._new_texts():
            for k, text in enumerate(texts):
                missing = unsupported_values(text, keys)
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
                texts.append(
                    (name, [v.text if isinstance(v, CitedItem) else str(v) for v in value])
                )
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
        check_name(schema, f)
        fields[f.name] = (
            list[CitedItem | str] if f.binding else list[str],
            Field(
                default_factory=list,
                description=f"{f.label}: {f.description}{rules(f)} Only items this segment adds; "
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


def checks(request: SummaryRequest[Any]) -> Checks:
    """What the validator compares the model's update with, for ``request``."""
    spec = request.spec
    prior: dict[str, tuple[str, bool]] = {}
    texts = [getattr(request.prior, spec.objective.name)] if spec.objective else []
    for f in spec.lists:
        for item in getattr(request.prior, f.name):
            prior[item.id] = (f.label, f.binding)
            texts.append(item.text)
    if request.head is not None:  # the task the prompt shows: an objective may quote its values
        texts.append(source_text(request.head.messages))
    texts.append(source_text(request.segment.messages))
    return Checks(prior=prior, sources="\n".join(texts), request=request)


def to_update(parsed: object, spec: SchemaSpec, usage: SummarizerUsage) -> SummaryUpdate:
    """The validated tool input (of `response_model` or `consolidation_model`) as an update."""
    add = {
        f.name: tuple(entries)
        for f in spec.lists
        if (entries := [_new_item(t) for t in getattr(parsed, f.name, ()) if _text(t).strip()])
    }
    retire = tuple(
        Retirement(
            id=entry.id, reason=entry.reason.strip(), evidence=getattr(entry, "message", None)
        )
        for entry in getattr(parsed, "retire", ())
    )
    objective = getattr(parsed, "objective", None) if spec.objective else None
    return SummaryUpdate(
        objective=objective if isinstance(objective, str) and objective.strip() else None,
        add=add,
        retire=retire,
        usage=usage,
    )


def _text(entry: object) -> str:
    return entry.text if isinstance(entry, CitedItem) else str(entry)


def _new_item(entry: object) -> str | NewItem:
    if isinstance(entry, CitedItem):
        return NewItem(text=entry.text, cites=(entry.message,))
    return str(entry)
