"""Compact trail lines: file lists with the root once, ids of one kind together, record values.

Full paths are recovered with the agent benchmark's own reader (`bench/retention_agents.py`
``recovered``), written apart from `progsum.judge._pathlist`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from progsum import Compactor, ConversationState, Policy, load_schema
from progsum.contract._artifacts import trail, weight
from progsum.contract._trail import grouped_ids, merge_trail
from progsum.judge._pathlist import lines, parse
from progsum.summary._merge import MergeReport
from progsum.summary._request import Segment
from progsum.summary._schema import spec_of
from progsum.summary._update import SummaryUpdate
from progsum.testing import QueuedSummarizer, segment_of

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
import retention_agents

_NAME = st.text("abcdefgh_", min_size=1, max_size=6)
_PATH = st.lists(_NAME, min_size=1, max_size=4).map(lambda parts: "/".join(parts) + ".py")
_STATE = st.sampled_from(["created", "modified", "deleted", "read"])


@given(st.dictionaries(_PATH.map(lambda p: "/srv/app/" + p), _STATE, min_size=1, max_size=30))
def test_every_listed_path_is_recovered_with_its_state(files: dict[str, str]) -> None:
    """A reader recovers each full path from the line of its state; parse reads them back."""
    written = lines(files)
    for state in set(files.values()):
        mine = "\n".join(line for line in written if line.startswith(state))
        wanted = [p for p, s in files.items() if s == state]
        assert retention_agents.recovered(mine, wanted) == set(wanted)
    back: dict[str, str] = {}
    for line in written:
        back.update(parse(line) or {})
    assert back == files


def test_a_long_list_goes_on_in_parts_each_with_its_root() -> None:
    """Past the line length the files go on in a part of their own that names the root again."""
    files = {f"/srv/app/pkg/module_with_a_long_name_{n}.py": "modified" for n in range(30)}
    written = lines(files)
    assert len(written) > 1
    assert written[1].startswith("modified under /srv/app/pkg/ (part 2): ")
    assert all(len(line) < 400 for line in written)
    assert retention_agents.recovered("\n".join(written), list(files)) == set(files)


def _edit(n: int, name: str, path: str) -> list[dict[str, Any]]:
    """An assistant tool call on ``path`` and its result."""
    use = {"type": "tool_use", "id": f"t{n}", "name": name, "input": {"file_path": path}}
    done = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"line {n}\n" * 300}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [done]}]


def test_a_later_compaction_merges_its_files_into_the_compact_list() -> None:
    """A file first read, then modified, is listed once, as modified; earlier files stay listed."""
    root = "/home/dev/projects/billing-service/"
    first: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the billing code."}]
    for n in range(12):
        first += _edit(n, "Edit" if n % 2 else "Read", f"{root}src/billing/module_{n}.py")
    second: list[dict[str, Any]] = []
    second += _edit(20, "Edit", f"{root}src/billing/module_0.py")  # read before
    second += _edit(21, "Write", f"{root}tests/test_new.py")
    closing = [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks."}]
    compactor: Compactor[Any] = Compactor(
        policy=Policy(context_window=200_000, keep=("messages", 1), header_budget=("tokens", 700)),
        summarizer=QueuedSummarizer(SummaryUpdate(), SummaryUpdate()),
        schema=load_schema("coding-agent"),
    )
    state = compactor.compact(ConversationState([*first, *closing]), force=True)
    state = compactor.compact(state.extend([*second, *closing]), force=True)
    listed = [item.text for item in cast("Any", state.summary).files]
    assert all(line.split(" ", 1)[0] in ("created", "modified", "read") for line in listed)
    text = "\n".join(listed)
    changed = [f"{root}src/billing/module_{n}.py" for n in (0, 1, 3, 5, 7, 9, 11)]
    assert retention_agents.recovered(
        "\n".join(line for line in listed if line.startswith("modified")), changed
    ) == set(changed)
    assert retention_agents.recovered(text, [f"{root}tests/test_new.py"])
    reads = "\n".join(line for line in listed if line.startswith("read"))
    assert not retention_agents.recovered(reads, [f"{root}src/billing/module_0.py"])


def test_compact_lines_of_changed_files_are_dropped_last() -> None:
    """Consolidation drops compact lines of changed files after everything else, read-only first."""
    assert weight("modified under /srv/app/: src/{a.py,b.py}") == 5
    assert weight("created under /srv/app/ (part 2): c.py") == 5
    assert weight("read under /srv/app/: README.md") == 2
    assert weight("reservation_id 2FBBAH, BOH180: returned by get_user_details") == 4


def _tool_segment(result: object) -> Segment:
    """A segment of one OpenAI function call and its JSON result."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "My user id is omar_davis_3817."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "get_user_details",
                        "arguments": json.dumps({"user_id": "omar_davis_3817"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(result)},
        {"role": "assistant", "content": "Here are your reservations and payment methods. " * 30},
    ]
    state = ConversationState(messages)
    return segment_of(state)


USER = {
    "name": {"first_name": "Omar", "last_name": "Davis"},
    "dob": "1980-03-27",
    "payment_methods": {
        "credit_card_9525117": {"source": "credit_card", "id": "credit_card_9525117"},
        "gift_card_6847880": {"source": "gift_card", "id": "gift_card_6847880", "amount": 62},
    },
    "reservations": ["2FBBAH", "BOH180", "EQ1G6C", "JG7FMM", "X7BYG1"],
}


def test_ids_of_one_kind_share_a_line_and_the_record_keeps_its_values() -> None:
    """Five reservation ids take one line; payment ids are named by their list, not by themselves.

    The record's short values (names, dates, amounts) go on the line of its first id.
    """
    segment = _tool_segment(USER)
    schema = load_schema("customer-support")
    texts = [a.text for a in grouped_ids(trail(segment), spec_of(schema), schema())]
    assert (
        "reservation_id 2FBBAH, BOH180, EQ1G6C, JG7FMM, X7BYG1: returned by get_user_details"
        in (texts)
    )
    assert any(t.startswith("payment_method_id credit_card_9525117: ") for t in texts)
    assert any(t.startswith("payment_method_id gift_card_6847880: ") for t in texts)
    merged, _ = merge_trail(
        segment, schema(), MergeReport(), 1, header_limit=2_000, count=lambda t: len(t) // 4
    )
    header = "\n".join(item.text for item in cast("Any", merged).identifiers)
    for value in ("Omar", "Davis", "1980-03-27", "BOH180", "credit_card_9525117"):
        assert value in header


def test_paths_a_compact_line_cannot_hold_keep_their_own_lines() -> None:
    """A path with a space is never put in a compact line, where it would read as two paths."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Tidy the notes."}]
    for n in range(40):
        messages += _edit(n, "Edit", f"/srv/app/notes/module_{n}.py")
    messages += _edit(99, "Edit", "/srv/app/My Notes/todo.md")
    state = ConversationState(messages)
    segment = segment_of(state)
    schema = load_schema("coding-agent")
    merged, _ = merge_trail(
        segment, schema(), MergeReport(), 1, header_limit=400, count=lambda t: len(t) // 4
    )
    listed = [item.text for item in cast("Any", merged).files]
    assert not any("My Notes" in line and " under " in line for line in listed)
    assert any(line.startswith("modified under /srv/app/notes/") for line in listed)
