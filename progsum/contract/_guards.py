"""Guards that keep a summary honest: exact values, and the user's prohibitions.

Pure functions. Summarizers and the engine's contract use `unsupported_values` to refuse items
whose numbers, ids, paths or URLs are not carried token-exactly by what was summarized; the engine
uses `uncovered_prohibitions` to add, verbatim, any user prohibition the summary left out, and
`constraint_field`/`fact_field` to know where rules and facts go (`progsum.contract._ledger`
keeps the user's values).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from progsum.judge import _seam as seam
from progsum.judge._extract import Statement
from progsum.judge._lexicon import stop_words, words
from progsum.judge._values import carried, stated_values, value_keys
from progsum.summary._merge import MergeReport, Refusal, merge
from progsum.summary._request import SummaryRequest
from progsum.summary._schema import FieldSpec, SchemaSpec, SummaryT
from progsum.summary._update import NewItem, SummaryUpdate

__all__ = [
    "BUDGET_FULL",
    "constraint_field",
    "covers",
    "fact_field",
    "uncovered_prohibitions",
    "unsupported_values",
]

BUDGET_FULL = "the binding budget is full; kept as a fact so that nothing is lost"
"""Why a user's rule is kept as a fact: binding items are at their budget."""

_TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
COVERAGE = 0.6
"""Share of a prohibition's content words a constraint must hold (with its values) to cover it."""

_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
MIN_WORD = 3
"""Words shorter than this carry no content for coverage."""


def unsupported_values(text: str, sources: str | frozenset[str]) -> tuple[str, ...]:
    """The exact values of ``text`` that ``sources`` does not carry token-exactly.

    ``sources`` is text, or its `progsum.judge._values.value_keys`; "$3" is not carried by "$3,000".
    """
    keys = value_keys(sources) if isinstance(sources, str) else sources
    return tuple(value for value in stated_values(text) if not carried(value, keys))


def _plain(text: str) -> str:
    """Typographic apostrophes and quotes as ASCII, so "don\u2019t" and "don't" compare equal."""
    return text.translate(_TYPOGRAPHIC)


def _content_words(text: str) -> set[str]:
    stop = stop_words()
    return {w for w in _WORD.findall(text.casefold()) if w not in stop and len(w) >= MIN_WORD}


def covers(constraint: str, prohibition: str) -> bool:
    """Whether ``constraint`` states ``prohibition``.

    It does when it contains the prohibition verbatim, or when the judge reads it as a prohibition
    (a ``must_not`` rule) that keeps all the prohibition's exact values and most (`COVERAGE`) of
    its content words.
    """
    constraint, prohibition = _plain(constraint), _plain(prohibition)
    folded, wanted = (
        " ".join(constraint.casefold().split()),
        " ".join(prohibition.casefold().split()),
    )
    if wanted.rstrip(" .!") in folded:
        return True
    if seam.judge(constraint, seam.context("user")).modality != "must_not":
        return False
    keys = value_keys(constraint)
    if any(not carried(value, keys) for value in stated_values(prohibition)):
        return False
    words = _content_words(prohibition)
    if not words:
        return True
    return len(words & _content_words(constraint)) >= COVERAGE * len(words)


def uncovered_prohibitions(
    prohibitions: Iterable[Statement], constraints: Sequence[str]
) -> list[Statement]:
    """The prohibitions no constraint covers (see `covers`)."""
    return [p for p in prohibitions if not any(covers(c, p.text) for c in constraints)]


def constraint_field(spec: SchemaSpec) -> FieldSpec | None:
    """Where guarded prohibitions go.

    The field that declares ``extract=("constraints", ...)``, else ``constraints`` if the schema
    has it, else the first binding field whose name mentions constraints, rules, policies,
    requirements, guardrails, restrictions or prohibitions (the lexicon's
    ``fields.constraints``), else None (no guard for this schema).
    """
    declared = spec.extracting("constraints")
    if declared is not None:
        return declared
    for f in spec.lists:
        if f.name == "constraints":
            return f
    for f in spec.binding:
        if any(word in f.name for word in words("fields.constraints")):
            return f
    return None


def fact_field(spec: SchemaSpec) -> FieldSpec | None:
    """Where demoted binding items and restored values that are no rule go.

    The non-binding field that declares ``extract=("facts", ...)``, else the first non-binding
    field named or labelled like facts, findings, results, notes or observations (the lexicon's
    ``fields.facts``); else the first non-binding field; None when every field is binding.
    """
    declared = spec.extracting("facts")
    if declared is not None and not declared.binding:
        return declared
    loose = [f for f in spec.lists if not f.binding]
    for f in loose:
        name = f"{f.name} {f.label}".casefold()
        if any(w in name for w in words("fields.facts")):
            return f
    return loose[0] if loose else None


def guard_prohibitions(
    request: SummaryRequest[SummaryT],
    merged: SummaryT,
    report: MergeReport,
    number: int,
    *,
    room: int | None = None,
    cost: Callable[[str], int] | None = None,
) -> tuple[SummaryT, MergeReport, tuple[str, ...]]:
    """Add, verbatim, every user prohibition of the segment that no constraint covers.

    A prohibition binds while the binding budget has ``room`` for it (``cost``: the tokens an
    item takes); past it, it is kept as a fact and named in the report's ``demoted`` (as
    `progsum.contract._enforce` files a summarizer's binding items), so binding items never
    outgrow their budget and nothing is lost. Returns the guarded summary, the merge report
    with the added ids, and those ids.
    """
    target = constraint_field(request.spec)
    if target is None:
        return merged, report, ()
    live = [item.text for item in getattr(merged, target.name)]
    missing = uncovered_prohibitions(request.extraction.prohibitions, live)
    if not missing:
        return merged, report, ()
    facts = fact_field(request.spec)
    add: dict[str, list[NewItem]] = {}
    demoted: list[Refusal] = []
    for p in missing:
        name = target.name
        if room is not None and cost is not None and facts is not None:
            if cost(p.text) > room:
                name = facts.name
                demoted.append(Refusal(id=p.text[:80], why=BUDGET_FULL))
            else:
                room -= cost(p.text)
        item = NewItem(text=p.text, at=p.at, origin="extracted", cites=(p.at,), author="user")
        add.setdefault(name, []).append(item)
    guard = SummaryUpdate(add={name: tuple(items) for name, items in add.items()})
    segment = request.segment
    guarded, extra = merge(merged, guard, source=(segment.start, segment.end), compaction=number)
    combined = report.model_copy(
        update={
            "added": report.added + extra.added,
            "duplicates": report.duplicates + extra.duplicates,
            "demoted": (*report.demoted, *demoted),
        }
    )
    return guarded, combined, extra.added
