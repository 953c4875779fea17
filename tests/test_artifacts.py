"""The artifact trail: files, commands, errors, ids and sources from tool calls, in every header.

Expected lines are written out by hand from the fixtures (tests/fixtures/agents and
tests/fixtures/bench), never computed with progsum's own trail; the tau-bench ids are read from
the fixture's raw JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from progsum import Compactor, ConversationState, Policy, Summary, SummaryUpdate, load_schema
from progsum.contract._artifacts import expendable, trail
from progsum.contract._enforce import ITEM_OVERHEAD
from progsum.contract._trail import HEADER_TEXT, merge_trail, target_field
from progsum.policy._policy import MIN_WINDOW
from progsum.policy._tokens import DEFAULT_SAFETY_MARGIN
from progsum.replay._importers import Imported, read_conversations
from progsum.summarizers import ExtractiveSummarizer
from progsum.summarizers.anthropic._summarizer import AnthropicSummarizer
from progsum.summary._merge import MergeReport
from progsum.summary._schema import Items, spec_of, summary_field
from progsum.testing import QueuedSummarizer, segment_of
from tests.test_anthropic_summarizer import ScriptedAPI, tool

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import retention_agents

FIXTURES = Path(__file__).parent / "fixtures"
AGENTS = FIXTURES / "agents"


def _state(imported: Imported) -> ConversationState[Any]:
    return ConversationState().extend(imported.messages, authors=imported.authors or None)


def _lines(path: Path) -> list[str]:
    (imported, *_) = read_conversations(path)
    return [a.text for a in trail(segment_of(_state(imported)))]


def _compacted(path: Path, schema: str, **policy: Any) -> ConversationState[Any]:
    """The file's conversation and a closing user turn, compacted once (all but that turn)."""
    (imported, *_) = read_conversations(path)
    closing = {"role": "user", "content": "Thanks, that is all."}
    compactor: Compactor[Any] = Compactor(
        policy=Policy(context_window=200_000, keep=("messages", 1), **policy),
        summarizer=ExtractiveSummarizer(),
        schema=load_schema(schema),
    )
    return compactor.compact(_state(imported).append(closing), force=True)


def test_swe_agent_run_fills_files_touched() -> None:
    """The issue's failure: coding-agent 'files touched 0' on a SWE-agent run (function calls)."""
    state = _compacted(FIXTURES / "bench" / "swe_agent" / "dates-fix.traj", "coding-agent")
    files = [item.text for item in _summary(state).files]
    assert "src/dates.py: modified (submit diff)" in files
    assert "- [F1] src/dates.py: modified (submit diff)" in state.header


def test_airline_run_fills_customer_and_order_ids() -> None:
    """The issue's failure: customer-support 'customer and order ids 0' on airline data."""
    path = FIXTURES / "bench" / "tau_bench" / "airline.json"
    (record, *_) = json.loads(path.read_text())
    results = [json.loads(m["content"]) for m in record["traj"] if m["role"] == "tool"]
    wanted = {*results[0]["reservations"], results[1]["reservation_id"]}
    state = _compacted(path, "customer-support")
    ids = " ".join(item.text for item in _summary(state).identifiers)
    assert wanted <= set(ids.replace(":", " ").replace(",", " ").split())  # ids share lines
    assert "user_id mia_li_3668: used by get_user_details" in ids


def test_swe_agent_text_actions_give_files_commands_and_errors() -> None:
    """Text actions: create/edit follow the open file, rm deletes, a rerun resolves the error."""
    lines = _lines(AGENTS / "swe_agent" / "text-actions.traj")
    assert lines == [
        "reproduce.py: deleted (create, edit, bash)",
        "src/dates.py: modified (edit, submit diff, 2 edits)",
        "python reproduce.py: ran",
        "python -m pytest tests/test_dates.py -q: 2 passed",
        "rm reproduce.py: ran",
        "submit: ran",
        (
            "error in python -m pytest tests/test_dates.py -q: NameError: name 'days_in_month' "
            "is not defined; resolved at message 17"
        ),
    ]


def test_claude_code_tools_give_files_commands_and_error_status() -> None:
    """Claude Code Read/Write/Edit/Bash: created vs modified, exit codes with test counts."""
    lines = _lines(AGENTS / "claude_code" / "csv-export.jsonl")
    assert "/home/USER/app/lib/reports/export.ex: created (Write)" in lines
    assert "/home/USER/app/lib/reports/render.ex: modified (Edit)" in lines
    assert "/home/USER/app/lib/reports/csv.ex: modified (Edit)" in lines
    assert "/home/USER/app/config/config.exs: modified (Edit)" in lines
    assert "mix test test/reports/export_test.exs 2>&1: exit 0, 3 tests, 0 failures" in lines
    errors = [line for line in lines if line.startswith("error in mix test")]
    assert errors == [
        (
            "error in mix test test/reports/export_test.exs 2>&1: ** (UndefinedFunctionError) "
            f"function Reports.CSV.encode/1 is undefined; resolved at message {_first_pass() + 1}"
        )
    ]
    assert all("\n" not in line for line in lines)


def test_reused_call_ids_pair_by_position() -> None:
    """Two calls reuse one id: each result answers the call right before it."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Cancel my order."}]
    for name, args, result in (
        ("get_order", {"order_id": "W2378156"}, {"order_id": "W2378156", "status": "pending"}),
        ("cancel_order", {"order_id": "W2378156"}, {"order_id": "W2378156", "status": "cancelled"}),
    ):
        function = {"name": name, "arguments": json.dumps(args)}
        call = {"id": "call_1", "type": "function", "function": function}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": json.dumps(result)})
    lines = [a.text for a in trail(segment_of(ConversationState(messages)))]
    assert lines == ["order_id W2378156: returned by cancel_order, status cancelled"]


def test_trail_reaches_the_header_through_a_model_summarizer() -> None:
    """A real Anthropic client over a mock transport: the trail is merged beside its update."""
    api = ScriptedAPI(tool({"objective": "Add a CSV export.", "codebase_facts": []}))
    (imported, *_) = read_conversations(AGENTS / "claude_code" / "csv-export.jsonl")
    compactor: Compactor[Any] = Compactor(
        policy=Policy(context_window=200_000, keep=("messages", 2)),
        summarizer=AnthropicSummarizer(api.client()),
        schema=load_schema("coding-agent"),
    )
    state = compactor.compact(_state(imported), force=True)
    assert api.bodies  # the model was asked
    assert "/home/USER/app/lib/reports/export.ex: created (Write)" in state.header
    assert "## Commands and test status" in state.header


def test_trail_reaches_the_header_through_the_users_own_summarizer() -> None:
    """A queued summarizer that adds nothing still gets the trail, in the facts field."""
    (imported, *_) = read_conversations(AGENTS / "swe_agent" / "text-actions.traj")
    compactor: Compactor[Any] = Compactor(
        policy=Policy(context_window=200_000, keep=("messages", 1)),
        summarizer=QueuedSummarizer(SummaryUpdate()),
    )
    state = compactor.compact(_state(imported), force=True)
    facts = [item.text for item in _summary(state).established_facts]
    assert "src/dates.py: modified (edit, 2 edits)" in facts  # the submit stays in the tail
    assert _summary(state).constraints == ()
    assert _summary(state).decisions == ()


class _BindingFiles(Summary):
    """A schema whose files field is binding: the trail must go to the facts instead."""

    files: Items = summary_field(
        "Files", "Files touched.", binding=True, extract=("files",), id_prefix="FT"
    )


def test_trail_never_goes_into_a_binding_field() -> None:
    """A binding field that declares files is skipped; the facts field takes them."""
    target = target_field(spec_of(_BindingFiles), "files")
    assert target is not None
    assert target.name == "established_facts"


def test_a_newer_state_supersedes_the_file_entry() -> None:
    """Read in one compaction, modified in the next: one live entry, the old one a tombstone."""
    read_only: list[Any] = [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": [_use("t1", "Read", file_path="src/app.py")]},
        {"role": "user", "content": [_result("t1", "def main(): ...\n" * 200)]},
        {"role": "assistant", "content": "Read it."},
    ]
    edited: list[Any] = [
        {"role": "user", "content": "Go on."},
        {"role": "assistant", "content": [_use("t2", "Edit", file_path="src/app.py")]},
        {"role": "user", "content": [_result("t2", "The file src/app.py has been updated.")]},
        {"role": "assistant", "content": "Edited. " + "Details of the change. " * 200},
        {"role": "assistant", "content": "Edited."},
        {"role": "user", "content": "Thanks."},
    ]
    compactor: Compactor[Any] = Compactor(
        policy=Policy(context_window=200_000, keep=("messages", 1)),
        summarizer=QueuedSummarizer(SummaryUpdate(), SummaryUpdate()),
        schema=load_schema("coding-agent"),
    )
    state = compactor.compact(ConversationState(read_only), force=True)
    assert [i.text for i in _summary(state).files] == ["src/app.py: read (Read)"]
    state = compactor.compact(state.extend(edited), force=True)
    assert [i.text for i in _summary(state).files] == ["src/app.py: modified (Edit)"]
    (tombstone,) = [t for t in _summary(state).retired if t.field == "files"]
    assert tombstone.item.text == "src/app.py: read (Read)"


def test_trail_keeps_changed_files_first_within_its_share_of_the_header() -> None:
    """Over budget, the trail lists files compactly, modified before read-only, within its room."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Refactor."}]
    paths = [f"/srv/app/pkg{n % 4}/module_number_{n}.py" for n in range(60)]
    for n, path in enumerate(paths):
        name = "Edit" if n % 3 == 0 else "Read"
        messages.append({"role": "assistant", "content": [_use(f"t{n}", name, file_path=path)]})
        messages.append({"role": "user", "content": [_result(f"t{n}", "line\n" * 100)]})
    state = ConversationState(messages)
    segment = segment_of(state)
    schema = load_schema("coding-agent")
    merged, _ = merge_trail(
        segment, schema(), MergeReport(), 1, header_limit=400, count=lambda text: len(text) // 4
    )
    kept = [item.text for item in cast("Any", merged).files]
    cost = sum(len(text) // 4 + ITEM_OVERHEAD for text in kept)
    assert cost <= int(400 / DEFAULT_SAFETY_MARGIN) - HEADER_TEXT
    found = retention_agents.recovered("\n".join(kept), paths)
    edited = {paths[n] for n in range(0, 60, 3)}
    assert edited <= found
    assert len(found) < 60  # some read-only files did not fit
    assert all(
        line.startswith(("modified under /srv/app/", "read under /srv/app/")) for line in kept
    )


def test_expendable_lines_are_the_cheap_ones() -> None:
    """Read-only files, greps and passing commands are expendable; changes and failures are not."""
    assert expendable("src/a.py: read (Read)")
    assert expendable('Grep "foo" in src: 3 lines of results')
    assert expendable("git status: exit 0")
    assert not expendable("src/a.py: modified (Edit)")
    assert not expendable("pytest -q: exit 1, 2 failed")
    assert not expendable("error in pytest -q: AssertionError; unresolved")


def test_agent_retention_gate_on_fixtures() -> None:
    """The fixture version of bench/retention_agents.py: thresholds on files and reused values."""
    rows = retention_agents.rows(AGENTS, windows=(1_000,))  # the smallest: each fixture folds
    claude = [r for r in rows if r["kind"] == "claude-code"]
    tau = [r for r in rows if r["kind"] == "tau-bench"]
    assert claude
    assert tau
    for row in rows:
        assert not row["over_budget"], row
        assert row["compactions"], row
    assert _total(claude, "files_progsum") >= 0.95 * _total(claude, "files")
    assert _total(rows, "values_progsum") > _total(rows, "values_truncation")
    counts = retention_agents.malformed(AGENTS)
    assert counts["items"] > 0
    assert counts["multi_line"] == counts["markup"] == counts["over_long"] == 0


@pytest.mark.parametrize("path", sorted(p.name for p in (AGENTS / "swe_agent").iterdir()))
def test_trail_is_deterministic(path: str) -> None:
    """The same segment gives the same trail, line for line."""
    file = AGENTS / "swe_agent" / path
    assert _lines(file) == _lines(file)


def _summary(state: ConversationState[Any]) -> Any:
    assert state.summary is not None, state.events
    return state.summary


def _total(rows: list[dict[str, object]], key: str) -> int:
    return sum(cast("int", row[key]) for row in rows)


def _use(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _result(call_id: str, content: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def _first_pass() -> int:
    """Log index of the first Bash result without an error in the csv-export fixture."""
    (imported, *_) = read_conversations(AGENTS / "claude_code" / "csv-export.jsonl")
    for index, message in enumerate(imported.messages):
        content = message["content"]
        if isinstance(content, list) and any(
            b.get("type") == "tool_result"
            and b["tool_use_id"].startswith("toolu_b")
            and not b.get("is_error")
            for b in content
        ):
            return index
    raise AssertionError("no passing run")


def test_command_lines_never_leave_a_quote_or_bracket_open() -> None:
    """A heredoc commit or a cut key ends before what it leaves open, so it reads as a note."""
    heredoc = "git add . && git commit -m \"$(cat <<'EOF'\nFix the parser\nEOF\n)\""
    long = 'bd create --title="Add the quality alias" --description="' + "words " * 40 + '"'
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Commit it."}]
    for n, command in enumerate((heredoc, long)):
        messages.append({"role": "assistant", "content": [_use(f"b{n}", "Bash", command=command)]})
        messages.append({"role": "user", "content": [_result(f"b{n}", "done")]})
    lines = [a.text for a in trail(segment_of(ConversationState(messages)))]
    assert "git add . && git commit -m… (+3 lines): exit 0" in lines
    for line in lines:
        assert line.count('"') % 2 == 0, line
        assert line.count("(") == line.count(")"), line
    assert any(line.startswith('bd create --title="Add the quality alias"') for line in lines)


def test_id_keys_come_from_the_lexicon() -> None:
    """Id-like keys, a list of ids, a key that only looks like one, a kind kept as named."""
    from progsum.contract._identifiers import ids_in  # noqa: PLC0415

    record = {
        "reservation_id": "ZFA04Y",
        "zip_code": "94105",
        "reservations": ["NO6JO3"],
        "confirmation_number": "AB12345",
        "status_code": 404,
    }
    assert list(ids_in(record, "")) == [
        ("reservation_id", "ZFA04Y"),
        ("reservation_id", "NO6JO3"),
        ("confirmation_number", "AB12345"),
    ]


NATIVE = FIXTURES / "native"


def test_progsum_keeps_what_claude_code_s_own_summary_kept_at_no_larger_size() -> None:
    """The gate's coding row: values and files beside Claude Code's own compaction summary.

    The fixture's summary names the epic, its last task and one full path; the files it names
    without their directory, which a reader cannot recover. progsum's request, no larger than
    that summary, keeps every changed file and more of the reused values (6 of 8 measured).
    """
    (found,) = retention_agents.native(NATIVE)
    row = cast("dict[str, int]", found)
    assert row["folded"] == 49
    assert row["values"] == 8
    assert row["files"] == 8
    assert row["values_claude"] == 3  # rpt-k4m, rpt-k4m.3 and /repo/api/routes/reports.py
    assert row["files_claude"] == 1
    assert not row["over_budget"]
    assert row["compactions"]
    assert row["tokens"] <= row["summary_tokens"]
    assert row["values_progsum"] >= row["values_claude"]
    assert row["files_progsum"] >= 0.95 * row["files"]


@pytest.mark.parametrize("tokens", [10, 999, 1_000, 4_441, 12_345])
def test_the_summary_window_is_the_smallest_whose_input_holds_the_summary(tokens: int) -> None:
    """The progsum side of the row gets no more window than Claude Code's summary takes."""
    window = retention_agents.summary_window(tokens)
    assert window >= MIN_WINDOW
    assert (Policy(context_window=window).input_window or 0) >= tokens
    if window > MIN_WINDOW:
        assert (Policy(context_window=window - 1).input_window or 0) < tokens


def _bash_round(call_id: str, command: str, output: str) -> list[dict[str, Any]]:
    """A Claude Code Bash call and its result."""
    return [
        {"role": "assistant", "content": [_use(call_id, "Bash", command=command)]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
        },
    ]


def _edit_round(call_id: str, path: str) -> list[dict[str, Any]]:
    """A Claude Code Edit call and its result."""
    edit = _use(call_id, "Edit", file_path=path, old_string="a", new_string="b")
    return [
        {"role": "assistant", "content": [edit]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": f"{path} updated"}
            ],
        },
    ]


def test_branches_and_commits_the_session_made_are_trail_lines() -> None:
    """A branch it created and each commit git reported ("[branch sha] subject") are kept."""
    messages = [
        {"role": "user", "content": "Fix the rounding and open a pull request."},
        *_bash_round(
            "b1",
            "git switch -c fix/decimal-context && git commit -am 'Stop the global context'",
            "Switched to a new branch 'fix/decimal-context'\n"
            "[fix/decimal-context 4e1d2c9] Stop the global context\n 2 files changed",
        ),
        *_bash_round("b2", "git checkout -b spike/cache", "Switched to a new branch"),
    ]
    lines = [a.text for a in trail(segment_of(ConversationState(messages)))]
    assert "branch fix/decimal-context: created (git switch -c)" in lines
    assert "branch spike/cache: created (git checkout -b)" in lines
    assert "commit 4e1d2c9: on fix/decimal-context, Stop the global context" in lines


def test_an_edit_that_was_reverted_is_not_shown_as_in_place() -> None:
    """``git restore`` or ``git checkout --`` after an edit: the file reads reverted."""
    messages = [
        {"role": "user", "content": "Try the quick fix, and undo it if the tests fail."},
        *_edit_round("e1", "src/app.py"),
        *_edit_round("e2", "src/cli.py"),
        *_bash_round("b1", "pytest -q", "Exit code 1\n1 failed, 3 passed"),
        *_bash_round("b2", "git restore src/app.py && git checkout -- src/cli.py", ""),
    ]
    lines = [a.text for a in trail(segment_of(ConversationState(messages)))]
    assert "src/app.py: reverted (Edit, git restore)" in lines
    assert "src/cli.py: reverted (Edit, git checkout --)" in lines


def test_a_reverted_file_keeps_its_own_line_beside_compact_lines() -> None:
    """Compact lines hold created, modified, deleted and read files; a reverted one stays apart.

    It is no longer listed as modified either, once it is reverted.
    """
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the handlers."}]
    for n in range(12):
        messages += _edit_round(f"e{n}", f"/srv/app/src/handlers_{n:02d}.py")
    messages += _bash_round("b1", "git restore /srv/app/src/handlers_03.py", "")
    compactor: Compactor[Any] = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 1)),
        summarizer=ExtractiveSummarizer(),
        schema=load_schema("coding-agent"),
    )
    state = compactor.compact(
        ConversationState([*messages, {"role": "user", "content": "Thanks."}]), force=True
    )
    files = [item.text for item in _summary(state).files]
    assert any(text.startswith("modified under /srv/app/src/") for text in files), files
    assert "/srv/app/src/handlers_03.py: reverted (Edit, git restore)" in files
    listed = " ".join(t for t in files if t.startswith("modified under"))
    assert "handlers_03.py" not in listed


def test_a_failed_test_run_names_its_failing_tests() -> None:
    """The tests a run reports failing (pytest, unittest, go test) follow its counts."""
    pytest_output = (
        "Exit code 1\n..F.F\n=== short test summary info ===\n"
        "FAILED tests/test_export.py::test_header_row - AssertionError: no header\n"
        "FAILED tests/test_export.py::test_quoting\n2 failed, 3 passed in 0.41s"
    )
    unittest_output = (
        "Exit code 1\nFAIL: test_total (billing.tests.InvoiceTests)\n---\n"
        "Ran 4 tests in 0.01s\nFAILED (failures=1)"
    )
    go_output = "Exit code 1\n--- FAIL: TestParse (0.00s)\nFAIL\tgithub.com/acme/app\t0.02s"
    messages = [
        {"role": "user", "content": "Run the tests."},
        *_bash_round("b1", "pytest -q", pytest_output),
        *_bash_round("b2", "python -m unittest", unittest_output),
        *_bash_round("b3", "go test ./...", go_output),
    ]
    lines = [a.text for a in trail(segment_of(ConversationState(messages)))]
    assert (
        "pytest -q: exit 1, 2 failed, 3 passed; failing: "
        "tests/test_export.py::test_header_row, tests/test_export.py::test_quoting"
    ) in lines
    assert (
        "python -m unittest: exit 1, 4 tests; failing: billing.tests.InvoiceTests.test_total"
        in lines
    )
    assert "go test ./...: exit 1, FAIL: TestParse" not in lines
    assert any(
        line.startswith("go test ./...: exit 1") and "failing: TestParse" in line for line in lines
    )
