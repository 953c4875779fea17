"""The chat gate's ceiling (bench/retention_ceiling.py): an answer-aware summarizer, a set cover."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import pytest
import retention
import retention_ceiling

from progsum.summary._request import SummaryRequest
from progsum.summary._update import NewItem, SummaryUpdate

pytestmark = pytest.mark.bench  # outside the default run: python -m pytest -m bench

FIXTURES = Path(__file__).parent / "fixtures"


class _Fixed:
    """A summarizer that always proposes the same update."""

    def __init__(self, update: SummaryUpdate) -> None:
        self.update = update

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:  # noqa: ARG002
        return self.update


def test_answer_aware_proposes_only_the_notes_that_answer_a_probe() -> None:
    """A joined note keeps its answering notes under its label; the rest of the update goes."""
    update = SummaryUpdate(
        add={
            "established_facts": (
                "Speaker 1: has jeep; works in marketing",
                NewItem(text="Speaker 2: loves Paris", at=3, origin="extracted"),
            ),
            "constraints": ("Never fly red-eye.",),
        }
    )
    aware = retention_ceiling.AnswerAware([("marketing",), ("paris",)], inner=_Fixed(update))
    proposed = aware.summarize(cast("SummaryRequest[Any]", None))
    facts = proposed.add["established_facts"]
    assert facts[0] == "Speaker 1: works in marketing"
    assert isinstance(facts[1], NewItem)
    assert (facts[1].text, facts[1].at, facts[1].origin) == (
        "Speaker 2: loves Paris",
        3,
        "extracted",
    )
    assert "constraints" not in proposed.add
    assert aware.proposed == [("Speaker 1", "works in marketing"), ("Speaker 2", "loves Paris")]


def test_cover_takes_most_new_probes_per_token_within_the_budget() -> None:
    """Greedy: the densest note first, a note with nothing new never, and never past the budget."""
    notes = [
        (10, frozenset({1, 2})),  # 0.2 new per token, 0.1 once 1 is covered
        (4, frozenset({1})),  # 0.25: first
        (6, frozenset({3})),  # 0.17: second
        (1, frozenset({5})),  # nothing new when the tail already holds 5
    ]
    assert retention_ceiling.cover(notes, 20, frozenset({5})) == {1, 2, 3, 5}
    assert retention_ceiling.cover(notes, 14, frozenset({5})) == {1, 3, 5}
    # nothing covered yet: 5 (one per token) goes first, then 1; 3 would take 6 of the 4 left
    assert retention_ceiling.cover(notes, 9, frozenset()) == {1, 5}
    assert retention_ceiling.cover(notes, 0, frozenset({7})) == {7}


def test_features_count_the_answering_notes_with_and_without_each_feature() -> None:
    """A stative note that answers, an episodic one that does not, a value that does not."""
    seen = [("works in marketing", True), ("will go tonight", False), ("paid $40", False)]
    split = retention_ceiling.features(seen)
    assert split["stative first verb"] == (1, 1, 2, 0)
    assert split["short-horizon time word"] == (1, 0, 2, 1)
    assert split["exact value"] == (1, 0, 2, 1)


def test_the_ceiling_on_the_fixture_streams() -> None:
    """On the fixtures the answer-aware run keeps no fewer than shipped, nor does the cover."""
    row = retention_ceiling.measure(retention.msc(FIXTURES / "retention"), 1_000, limit=4)
    assert row.probes > 0
    assert row.aware >= row.shipped > 0, row
    assert row.cover >= row.shipped, row
    assert any(hit for _, hit in row.seen)  # the notes it proposed, each marked answering or not
