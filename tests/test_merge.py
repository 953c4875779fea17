"""Schemas and the typed merge: ids, duplicates, retirements, tombstones, binding guards."""

from __future__ import annotations

import pytest

from progsum import BaseSummary, ConfigError, Items, Summary, SummaryUpdate, summary_field
from progsum.summary._merge import merge, normalise
from progsum.summary._schema import Item, objective_field, spec_of
from progsum.summary._update import NewItem, Retirement


def fold(prior: Summary, update: SummaryUpdate, number: int = 1) -> Summary:
    """Merge with a fixed source range, ignoring the report."""
    merged, _ = merge(prior, update, source=(1, 9), compaction=number)
    return merged


def test_default_schema_fields_in_order() -> None:
    """Summary has an objective and six-field order, constraints and decisions binding."""
    spec = spec_of(Summary)
    assert spec.objective is not None
    assert spec.objective.name == "objective"
    assert [f.name for f in spec.lists] == [
        "decisions",
        "constraints",
        "established_facts",
        "open_threads",
        "rejected",
    ]
    assert [f.name for f in spec.binding] == ["decisions", "constraints"]
    assert [f.id_prefix for f in spec.lists] == ["D", "C", "F", "O", "R"]


def test_new_items_get_ids_and_provenance() -> None:
    """New items are numbered per field and carry the segment range (or their own message)."""
    update = SummaryUpdate(
        add={"constraints": ["Budget is $3,000.", NewItem(text="No flights before 9am.", at=4)]}
    )
    merged, report = merge(Summary(), update, source=(1, 9), compaction=1)
    assert merged.constraints == (
        Item(id="C1", text="Budget is $3,000.", source=(1, 9)),
        Item(id="C2", text="No flights before 9am.", source=(4, 5)),
    )
    assert report.added == ("C1", "C2")


def test_prior_items_carry_forward_unchanged() -> None:
    """An update that mentions nothing keeps every prior item byte for byte."""
    prior = fold(Summary(), SummaryUpdate(add={"established_facts": ["Order id is W-12345-Z."]}))
    merged = fold(prior, SummaryUpdate(add={"open_threads": ["Confirm the hotel."]}), 2)
    assert merged.established_facts == prior.established_facts


def test_duplicates_after_normalising_are_dropped() -> None:
    """Case, whitespace and end punctuation differences do not create a second item."""
    prior = fold(Summary(), SummaryUpdate(add={"decisions": ["Use PostgreSQL 16."]}))
    merged, report = merge(
        prior,
        SummaryUpdate(add={"decisions": ["use  postgresql 16", "Use Redis for the cache."]}),
        source=(9, 12),
        compaction=2,
    )
    assert [i.text for i in merged.decisions] == ["Use PostgreSQL 16.", "Use Redis for the cache."]
    assert report.duplicates == ("use  postgresql 16",)
    assert normalise(" Use  PostgreSQL 16. ") == ("use postgresql 16", ("16",))


def test_values_differing_in_case_are_not_duplicates() -> None:
    """Wording may differ in case, exact values may not: two paths differing in case both stay."""
    prior = fold(
        Summary(), SummaryUpdate(add={"established_facts": ["Report at /data/Report.csv."]})
    )
    merged = fold(
        prior, SummaryUpdate(add={"established_facts": ["report at /data/report.csv"]}), 2
    )
    assert [i.text for i in merged.established_facts] == [
        "Report at /data/Report.csv.",
        "report at /data/report.csv",
    ]


def test_binding_item_needs_a_reason_to_retire() -> None:
    """Retiring a constraint without a reason is refused and recorded; with one it tombstones."""
    prior = fold(Summary(), SummaryUpdate(add={"constraints": ["Never touch prod."]}))
    kept, report = merge(
        prior, SummaryUpdate(retire=(Retirement(id="C1"),)), source=(9, 10), compaction=2
    )
    assert kept.constraints == prior.constraints
    assert report.refused[0].id == "C1"
    assert "needs a stated reason" in report.refused[0].why

    gone, report = merge(
        prior,
        SummaryUpdate(retire=(Retirement(id="C1", reason="user lifted it: staging is down"),)),
        source=(9, 10),
        compaction=2,
    )
    assert gone.constraints == ()
    assert report.retired == ("C1",)
    assert gone.retired[0].item == prior.constraints[0]
    assert gone.retired[0].reason == "user lifted it: staging is down"
    assert gone.retired[0].compaction == 2


def test_non_binding_item_retires_without_reason() -> None:
    """Open threads may be closed without a reason; the tombstone stays."""
    prior = fold(Summary(), SummaryUpdate(add={"open_threads": ["Which hotel?"]}))
    merged = fold(prior, SummaryUpdate(retire=(Retirement(id="O1"),)), 2)
    assert merged.open_threads == ()
    assert merged.retired[0].field == "open_threads"


def test_unknown_and_repeated_retirements_are_refused() -> None:
    """Retiring an id that never existed, or one already retired, is refused with why."""
    prior = fold(Summary(), SummaryUpdate(add={"open_threads": ["Which hotel?"]}))
    once = fold(prior, SummaryUpdate(retire=(Retirement(id="O1"),)), 2)
    _, report = merge(
        once,
        SummaryUpdate(retire=(Retirement(id="O1"), Retirement(id="Z9"))),
        source=(9, 10),
        compaction=3,
    )
    assert [(r.id, r.why) for r in report.refused] == [
        ("O1", "already retired"),
        ("Z9", "no such item"),
    ]


def test_ids_are_never_reused_after_retirement() -> None:
    """After O1 is retired, the next open thread is O2, not O1 again."""
    prior = fold(Summary(), SummaryUpdate(add={"open_threads": ["Which hotel?"]}))
    merged = fold(
        prior,
        SummaryUpdate(retire=(Retirement(id="O1"),), add={"open_threads": ["Which train?"]}),
        2,
    )
    assert [i.id for i in merged.open_threads] == ["O2"]


def test_retire_and_add_replace_an_item() -> None:
    """Retiring C1 with a reason and adding a new constraint replaces it, with the history kept."""
    prior = fold(Summary(), SummaryUpdate(add={"constraints": ["Budget is $3,000."]}))
    merged = fold(
        prior,
        SummaryUpdate(
            retire=(Retirement(id="C1", reason="user raised the budget"),),
            add={"constraints": ["Budget is $3,500."]},
        ),
        2,
    )
    assert [(i.id, i.text) for i in merged.constraints] == [("C2", "Budget is $3,500.")]
    assert merged.retired[0].item.text == "Budget is $3,000."


def test_objective_replaced_only_when_given() -> None:
    """None or blank keeps the objective; a new text replaces it."""
    prior = fold(Summary(), SummaryUpdate(objective="Plan a Lisbon trip."))
    assert fold(prior, SummaryUpdate(objective="  "), 2).objective == "Plan a Lisbon trip."
    assert fold(prior, SummaryUpdate(), 2).objective == "Plan a Lisbon trip."
    _, report = merge(
        prior, SummaryUpdate(objective="Plan a Porto trip."), source=(1, 2), compaction=2
    )
    assert report.objective_changed


def test_merge_is_deterministic_and_pure() -> None:
    """The same inputs give equal outputs, and the prior summary is not modified."""
    prior = fold(Summary(), SummaryUpdate(add={"decisions": ["A"], "constraints": ["B"]}))
    snapshot = prior.model_dump()
    update = SummaryUpdate(add={"decisions": ["C"]}, retire=(Retirement(id="D1", reason="x"),))
    assert merge(prior, update, source=(3, 5), compaction=2) == merge(
        prior, update, source=(3, 5), compaction=2
    )
    assert prior.model_dump() == snapshot


def test_unknown_field_in_update_names_the_fields() -> None:
    """An update adding to a field the schema lacks raises with the schema's field names."""
    with pytest.raises(
        ConfigError, match="Summary has no list field 'todo'; its list fields are: decisions"
    ):
        fold(Summary(), SummaryUpdate(add={"todo": ["x"]}))


def test_item_index_outside_segment_is_rejected() -> None:
    """A NewItem claiming a message outside the segment is an error naming the range."""
    with pytest.raises(ConfigError, match=r"message 40, outside the segment \[1, 9\)"):
        fold(Summary(), SummaryUpdate(add={"decisions": [NewItem(text="x", at=40)]}))


class CodingSummary(Summary):
    """The default fields plus the files an agent touched."""

    files_touched: Items = summary_field(
        "Files touched", "Paths created or edited, exact.", id_prefix="FT"
    )


def test_subclass_adds_fields_that_merge_generically() -> None:
    """A subclass's extra list field merges and numbers like the built-in ones."""
    merged, _ = merge(
        CodingSummary(),
        SummaryUpdate(add={"files_touched": ["billing/invoice.py"]}),
        source=(0, 3),
        compaction=1,
    )
    assert isinstance(merged, CodingSummary)
    assert merged.files_touched[0].id == "FT1"
    assert spec_of(CodingSummary).lists[-1].label == "Files touched"


class Research(BaseSummary):
    """A domain schema without the default fields."""

    question: str = objective_field("Question", "The research question.")
    findings: Items = summary_field("Findings", "Results with citations.", binding=True)
    sources: Items = summary_field("Sources", "URLs and references, exact.")


def test_domain_schema_from_base_summary() -> None:
    """A schema built on BaseSummary has its own objective and fields."""
    spec = spec_of(Research)
    assert spec.objective is not None
    assert spec.objective.name == "question"
    assert [(f.name, f.id_prefix, f.binding) for f in spec.lists] == [
        ("findings", "F", True),
        ("sources", "S", False),
    ]


def test_prefix_collision_is_an_error() -> None:
    """Two fields numbering items with the same letter must be told apart."""

    class Clash(BaseSummary):
        facts: Items = summary_field("Facts", "x")
        files: Items = summary_field("Files", "y")

    with pytest.raises(ConfigError, match=r"Clash.files and .facts both number their items F1"):
        spec_of(Clash)


def test_not_a_schema_is_an_error() -> None:
    """Passing a class that is not a summary schema says what to pass."""
    with pytest.raises(ConfigError, match="is not a summary schema"):
        spec_of(dict)
