"""What a model summarizer asks and how its answer is checked: prompts and the response models.

Pure (pydantic and Jinja, no provider SDK), so any model summarizer can reuse it.

**Summarizing a segment.** The response model is derived from the schema: one list of new item
texts per list field, retirements with reasons, and an optional new objective. Its validator, given
the request's `Checks` through the validation context (``{CHECKS_KEY: checks(request)}``), rejects

* a retired id that is not an item of the prior summary,
* a binding item (a decision or constraint) retired without a reason,
* a new item (or objective) carrying an exact value (`progsum.judge.values.exact_values`) found verbatim
  neither in the segment's full text nor in the prior summary,

so that Instructor re-asks the model with the error.

**Consolidating a summary that outgrew its budget.** `consolidation_model` has one list per
non-binding list field (condensed replacements) and retirements, and no objective. Given
`ConsolidationChecks` (``{CHECKS_KEY: consolidation_checks(request)}``), it rejects

* a retired id that is not an item of the summary, a binding item, a retirement without a reason,
  or the same id retired twice,
* an added item carrying an exact value the summary does not hold,
* an added item in a field none of whose items it retires, and additions no shorter than what
  they retire,
* a retired (or keyed-superseded) item whose exact values would then appear in no added or
  remaining item.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, model_validator

from progsum.contract.enforce import enforce
from progsum.contract.guards import unsupported_values
from progsum.errors import ConfigError
from progsum.judge.extract import Statement
from progsum.judge.values import carried, exact_values, value_keys
from progsum.messages.transcript import escape, render_segment, source_text
from progsum.summary.request import ConsolidationRequest, SummaryRequest
from progsum.summary.schema import BaseSummary, FieldSpec, SchemaSpec, item_key, spec_of
from progsum.summary.update import NewItem, Retirement, SummarizerUsage, SummaryUpdate
from progsum.templates import environment

__all__ = [
    "CHECKS_KEY",
    "CONSOLIDATION_TOOL_NAME",
    "TOOL_NAME",
    "Checks",
    "ConsolidationChecks",
    "ConsolidationRetireEntry",
    "RetireEntry",
    "checks",
    "consolidation_checks",
    "consolidation_model",
    "consolidation_system_prompt",
    "consolidation_user_prompt",
    "response_model",
    "system_prompt",
    "to_update",
    "user_prompt",
]

TOOL_NAME = "record_summary_update"
"""Name of the tool the model calls with its update."""
CONSOLIDATION_TOOL_NAME = "record_consolidation"
"""Name of the tool the model calls with a consolidation."""
CHECKS_KEY = "progsum_checks"
"""Key of the `Checks` (or `ConsolidationChecks`) in the validation context."""

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
        _check_name(schema, f)
        fields[f.name] = (
            list[CitedItem | str] if f.binding else list[str],
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


def _check_name(schema: type[BaseSummary], spec: FieldSpec) -> None:
    if spec.name in _RESERVED:
        raise ConfigError(
            f"{schema.__name__}.{spec.name} clashes with the summarizer's own {spec.name!r} "
            "field; rename the list field (e.g. to 'retired_items' or 'goals')"
        )


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
            fields=_fields(prior, spec, _block),
            prohibitions=_statements(extraction.prohibitions),
            obligations=_statements(extraction.obligations),
            questions=_statements(extraction.questions),
            values=[{"at": at, "value": escape(value)} for at, value in extraction.values],
            first=request.segment.start,
            last=request.segment.end - 1,
            transcript=render_segment(request.segment, clip_chars=clip_chars),
        )
    )


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


# -- consolidation -------------------------------------------------------------------------------

_SUMMARY_TAG = re.compile(r"<(?=\s*/?\s*summary\b)", re.IGNORECASE)
"""The consolidation prompt's own tag, escaped in item texts like `progsum.messages.transcript.TAGS`."""


class ConsolidationRetireEntry(BaseModel):
    """A non-binding item whose content a condensed item, or another item, now holds."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Id of an item of a non-binding field, as shown in brackets.")
    reason: str = Field(
        description="Why it can go, naming what now holds it, e.g. 'duplicate of F3' or 'merged "
        "with F4 and F9 into one item on the hotel booking'."
    )


@dataclass(frozen=True, slots=True)
class ConsolidationChecks:
    """What the consolidation validator needs, passed through Instructor's validation context."""

    items: Mapping[str, tuple[FieldSpec, str]]
    """Every live item of the summary by id: its field and its text."""
    objective: str
    """The objective's text: it stays, and so do its values."""
    sources: str
    """The whole summary's text, for the exact-value check of added items."""


class _ConsolidationBase(BaseModel):
    """Base of the per-schema consolidation models: checks a consolidation against the summary."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _check_against_summary(self, info: ValidationInfo) -> Self:
        checks = info.context.get(CHECKS_KEY) if isinstance(info.context, Mapping) else None
        if not isinstance(checks, ConsolidationChecks):
            return self  # validated outside a consolidation request: nothing to compare with
        retire: list[ConsolidationRetireEntry] = getattr(self, "retire", [])
        added = {
            name: [t for t in value if t.strip()]
            for name, value in self
            if name != "retire" and isinstance(value, list)
        }
        problems, retired = _retirement_problems(retire, checks)
        gone = _gone(added, retired, checks)
        problems += _addition_problems(added, gone, checks)
        problems += _lost_value_problems(added, gone, checks)
        if problems:
            raise ValueError("\n".join(["the consolidation must be fixed:", *problems]))
        return self


def _retirement_problems(
    retire: list[ConsolidationRetireEntry], checks: ConsolidationChecks
) -> tuple[list[str], dict[str, str]]:
    """Problems of the retirements, and the accepted ones: item id to field name."""
    problems: list[str] = []
    retired: dict[str, str] = {}
    for k, entry in enumerate(retire):
        known = checks.items.get(entry.id)
        if known is None:
            condensable = [i for i, (f, _) in checks.items.items() if not f.binding]
            problems.append(
                f"- retire[{k}]: {entry.id!r} is not an item of the summary; retire only ids shown "
                f"in <summary> under non-binding fields ({_ids(condensable)})"
            )
        elif known[0].binding:
            problems.append(
                f"- retire[{k}]: {entry.id} is a binding item ({known[0].label}); consolidation "
                "keeps binding items as they are, so take it out of retire"
            )
        elif entry.id in retired:
            problems.append(f"- retire[{k}]: {entry.id} is retired twice; retire each item once")
        else:
            if not entry.reason.strip():
                problems.append(
                    f"- retire[{k}]: {entry.id} has no reason; say what now holds it, e.g. "
                    "'duplicate of F3' or 'merged with F4 into one item'"
                )
            retired[entry.id] = known[0].name
    return problems, retired


def _gone(
    added: Mapping[str, list[str]], retired: Mapping[str, str], checks: ConsolidationChecks
) -> dict[str, tuple[str, str]]:
    """The items the answer removes, by id: field name, and why when it is not a retirement.

    Besides the retired items, an added item of a keyed field replaces the items with its key.
    """
    gone = {i: (name, "") for i, name in retired.items()}
    for i, (f, text) in checks.items.items():
        keys = {item_key(t) for t in added.get(f.name, ())} - {None}
        if i not in gone and f.kind == "keyed" and item_key(text) in keys:
            gone[i] = (f.name, f" (an added item with its key replaces it in {f.name})")
    return gone


def _addition_problems(
    added: Mapping[str, list[str]],
    gone: Mapping[str, tuple[str, str]],
    checks: ConsolidationChecks,
) -> list[str]:
    """Added items with unknown values, in a field with nothing removed, or not shorter."""
    problems: list[str] = []
    fields = {name for name, _ in gone.values()}
    for name, texts in added.items():
        for k, text in enumerate(texts):
            missing = unsupported_values(text, checks.sources)
            if missing:
                problems.append(
                    f"- {name}[{k}]: {text!r} carries {', '.join(missing)}, which appear(s) "
                    "nowhere in the summary; copy every value exactly as written in the items it "
                    "replaces, or leave it out"
                )
        if texts and name not in fields:
            problems.append(
                f"- {name}: adds {len(texts)} item(s) but retires none of this field's items; add "
                "a condensed item only in the field of the items it replaces"
            )
    added_chars = sum(len(t) for texts in added.values() for t in texts)
    retired_chars = sum(len(checks.items[i][1]) for i in gone)
    if added_chars and added_chars >= retired_chars:
        problems.append(
            f"- the added items take {added_chars:,} characters and the items they retire "
            f"{retired_chars:,}; a consolidation must shrink the summary, so make the "
            "replacements shorter than what they replace, or retire nothing"
        )
    return problems


def _lost_value_problems(
    added: Mapping[str, list[str]],
    gone: Mapping[str, tuple[str, str]],
    checks: ConsolidationChecks,
) -> list[str]:
    """Removed items whose exact values would appear in no added or remaining item."""
    remaining = value_keys(
        "\n".join(
            [
                checks.objective,
                *(text for i, (_, text) in checks.items.items() if i not in gone),
                *(t for texts in added.values() for t in texts),
            ]
        )
    )
    problems: list[str] = []
    for i, (_, why) in gone.items():
        lost = [v for v in exact_values(checks.items[i][1]) if not carried(v, remaining)]
        if lost:
            problems.append(
                f"- {i}{why}: {', '.join(lost)} would then appear nowhere in the summary; carry "
                f"every value of {i}, exactly, into an added item, or keep {i}"
            )
    return problems


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:_MAX_IDS_SHOWN]) + (", ..." if len(ids) > _MAX_IDS_SHOWN else "")
    return shown or "there are none"


@functools.cache
def consolidation_model(schema: type[BaseSummary]) -> type[BaseModel]:
    """The consolidation tool-input model for ``schema`` (cached per schema class).

    One ``list[str]`` of condensed items per non-binding list field, and ``retire``: a list of
    ``{id, reason}``. Binding fields and the objective are left out: a consolidation never
    changes them.

    Raises:
        ConfigError: a list field is called ``retire`` or ``objective``.
    """
    fields: dict[str, Any] = {}
    for f in spec_of(schema).lists:
        _check_name(schema, f)
        if f.binding:
            continue
        fields[f.name] = (
            list[str],
            Field(
                default_factory=list,
                description=f"{f.label}: {f.description}{_rules(f)} Only condensed items that "
                "replace items you retire from this field, each keeping every exact value of "
                "what it replaces.",
            ),
        )
    fields["retire"] = (
        list[ConsolidationRetireEntry],
        Field(
            default_factory=list,
            description="Items of non-binding fields to remove: near-duplicates, and items whose "
            "content an added item or another item now holds, each with why. Never a binding "
            "item.",
        ),
    )
    model: type[BaseModel] = create_model(
        CONSOLIDATION_TOOL_NAME,
        __base__=_ConsolidationBase,
        __doc__="Condense the summary: retire near-duplicate and verbose items of non-binding "
        "fields, each with why, and add shorter items in the same fields that keep every exact "
        "value of what they replace.",
        **fields,
    )
    return model


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
    """`_block`, with look-alikes of the ``<summary>`` tag escaped too."""
    return _SUMMARY_TAG.sub("&lt;", _block(text))


def consolidation_checks(request: ConsolidationRequest[Any]) -> ConsolidationChecks:
    """What the consolidation validator compares the model's answer with, for ``request``."""
    spec = request.spec
    items: dict[str, tuple[FieldSpec, str]] = {}
    for f in spec.lists:
        for item in getattr(request.summary, f.name):
            items[item.id] = (f, item.text)
    objective = getattr(request.summary, spec.objective.name) if spec.objective else ""
    sources = "\n".join([objective, *(text for _, text in items.values())])
    return ConsolidationChecks(items=items, objective=objective, sources=sources)
