"""Records kept by the thousand (items, tombstones, reports, events) share their fields-sets."""

from __future__ import annotations

import copy
import pickle

from progsum import Summary, SummaryUpdate
from progsum.state._events import CompactionEvent
from progsum.summary._merge import MergeReport, Refusal, merge
from progsum.summary._record import Record
from progsum.summary._schema import Item, Tombstone
from progsum.summary._update import Retirement


def _retired(count: int) -> Summary:
    """A summary whose ``count`` facts were added, then all retired (a tombstone each)."""
    facts = [f"Fact number {n} is {n * 7}." for n in range(count)]
    summary, _ = merge(
        Summary(), SummaryUpdate(add={"established_facts": facts}), source=(0, 4), compaction=1
    )
    retire = tuple(Retirement(id=item.id) for item in summary.established_facts)
    summary, _ = merge(summary, SummaryUpdate(retire=retire), source=(4, 8), compaction=2)
    return summary


def test_tombstones_and_their_items_share_one_fields_set() -> None:
    """Every tombstone of a merge holds the same fields-set object, and so does every item."""
    retired = _retired(5).retired
    assert len(retired) == 5
    assert len({id(t.model_fields_set) for t in retired}) == 1
    assert len({id(t.item.model_fields_set) for t in retired}) == 1


def test_shared_fields_set_reads_as_pydantic_own() -> None:
    """A shared fields-set names exactly the fields given, so exclude_unset dumps as before."""
    item = Item(id="F1", text="Gate B12.", source=(0, 2))
    assert item.model_fields_set == {"id", "text", "source"}
    given = {"id": "F1", "text": "Gate B12.", "source": (0, 2)}
    assert item.model_dump(exclude_unset=True) == given
    other = Item(id="F2", text="Gate C3.", source=(2, 4), author="user")
    assert other.model_fields_set == {"id", "text", "source", "author"}
    assert item.model_fields_set is not other.model_fields_set


def test_a_copy_with_an_update_names_the_updated_fields_too() -> None:
    """`model_copy(update=)` adds the updated names to the copy's set, not to the shared one."""
    report = MergeReport(added=("F1",))
    updated = report.model_copy(update={"retired": ("F0",)})
    assert report.model_fields_set == {"added"}
    assert updated.model_fields_set == {"added", "retired"}
    assert updated.model_fields_set is MergeReport(added=(), retired=()).model_fields_set


def test_records_loaded_from_json_share_and_round_trip() -> None:
    """A summary read back from JSON equals the original and its tombstones share their set."""
    summary = _retired(4)
    loaded = Summary.model_validate_json(summary.model_dump_json())
    assert loaded == summary
    assert len({id(t.model_fields_set) for t in loaded.retired}) == 1


def test_pickled_and_deep_copied_records_are_equal() -> None:
    """Pickling and deep copies keep each record's fields and fields-set."""
    tomb = _retired(2).retired[0]
    pickled = pickle.loads(pickle.dumps(tomb))  # noqa: S301 - our own bytes
    for again in (pickled, copy.deepcopy(tomb), copy.copy(tomb)):
        assert again == tomb
        assert again.model_fields_set == tomb.model_fields_set
        assert isinstance(again, Tombstone)


def test_every_kept_record_is_a_record() -> None:
    """Items, tombstones, merge reports and compaction events are all `Record`s."""
    for kind in (Item, Tombstone, MergeReport, Refusal, CompactionEvent):
        assert issubclass(kind, Record), kind
