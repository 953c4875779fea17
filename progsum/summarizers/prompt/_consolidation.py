"""The consolidation tool: condensed replacements for a summary that outgrew its budget, checked.

`consolidation_model` has one list per non-binding list field (condensed replacements) and
retirements, and no objective. Given `ConsolidationChecks` (``{CHECKS_KEY:
consolidation_checks(request)}``), its validator rejects an unknown, binding, unexplained or twice
retired id, an added item carrying an exact value the summary does not hold, an addition in a
field none of whose items it retires, additions no shorter than what they retire, and a removed
item whose exact values would then appear in no added or remaining item.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, model_validator

from progsum.contract._guards import unsupported_values
from progsum.judge._values import carried, exact_values, value_keys
from progsum.summarizers.prompt._tool import CHECKS_KEY, check_name, rules, shown_ids
from progsum.summary._request import ConsolidationRequest
from progsum.summary._schema import BaseSummary, FieldSpec, item_key, spec_of

__all__ = [
    "CONSOLIDATION_TOOL_NAME",
    "ConsolidationChecks",
    "ConsolidationRetireEntry",
    "consolidation_checks",
    "consolidation_model",
]

CONSOLIDATION_TOOL_NAME = "record_consolidation"
"""Name of the tool the model calls with a consolidation."""


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
                f"in <summary> under non-binding fields ({shown_ids(condensable)})"
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
        check_name(schema, f)
        if f.binding:
            continue
        fields[f.name] = (
            list[str],
            Field(
                default_factory=list,
                description=f"{f.label}: {f.description}{rules(f)} Only condensed items that "
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
