"""The work ledger: the agent's tasks read from its own planning tools, merged and rendered.

The conversations are built from each tool's documented input schema (bench/planning_sessions.py);
the expected statuses are written out by hand from the calls, never computed with progsum.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from progsum import Compactor, ConversationState, Policy, SummaryUpdate, load_schema
from progsum.contract._artifacts import trail
from progsum.contract._planning import merge_work
from progsum.errors import ConfigError
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._schema import BaseSummary, Summary, spec_of
from progsum.summary._work import (
    MAX_DONE_LINES,
    MAX_EARLIER_CHARS,
    PlanningTool,
    WorkLedger,
    task_lines,
)
from progsum.testing import QueuedSummarizer, scripted_state, segment_of

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

from planning_sessions import (
    TODOS_OK,
    anthropic_call,
    assistant,
    bash,
    edit,
    openai_call,
    task_tracker,
    todo_write,
    update_plan,
    user,
    write_todos,
)

Message = dict[str, Any]


def _ledger(messages: list[Message], schema: type[BaseSummary] = Summary) -> WorkLedger:
    state: ConversationState[Any] = ConversationState(messages)
    own = spec_of(schema).planning_tools
    return merge_work(WorkLedger(), segment_of(state), own)


def _statuses(ledger: WorkLedger) -> dict[str, str]:
    return {task.text: task.status for task in ledger.tasks}


def _session() -> list[Message]:
    """A Claude Code session whose plan moves on: three todos, the first done, the second begun."""
    return [
        user("Add a CSV export to the report command, with tests and docs."),
        *todo_write(
            "t1",
            ("Add the --csv flag to report.py", "in_progress"),
            ("Write tests for the CSV export", "pending"),
            ("Update docs/cli.md", "pending"),
        ),
        *edit("e1", "/repo/report.py"),
        *todo_write(
            "t2",
            ("Add the --csv flag to report.py", "completed"),
            ("Write tests for the CSV export", "in_progress"),
            ("Update docs/cli.md", "pending"),
        ),
    ]


def test_todo_write_gives_each_task_its_status_and_evidence() -> None:
    """Claude Code's TodoWrite: every todo with its status and the message where it changed."""
    ledger = _ledger(_session())
    assert _statuses(ledger) == {
        "Add the --csv flag to report.py": "done",
        "Write tests for the CSV export": "in_progress",
        "Update docs/cli.md": "pending",
    }
    first, second, third = ledger.tasks
    assert (first.id, first.at, first.since) == ("W1", 6, 2)  # the second TodoWrite's result
    assert (second.at, third.at) == (6, 2)
    assert [c.status for c in first.history] == ["in_progress", "done"]


def test_done_task_stays_done_when_a_newer_plan_lists_it_pending() -> None:
    """A done task never reopens on the agent's word: the refusal is kept in its history."""
    messages = [
        *_session(),
        *todo_write(
            "t3",
            ("Add the --csv flag to report.py", "pending"),
            ("Write tests for the CSV export", "completed"),
        ),
    ]
    ledger = _ledger(messages)
    flag = ledger.tasks[0]
    assert flag.status == "done"
    assert flag.at == 6  # the evidence stays the message where it was done
    assert flag.history[-1].status == "pending"
    assert flag.history[-1].note.startswith("not applied")


def test_user_reopens_a_done_task() -> None:
    """A done task reopens when the user, before the newer plan, asks for it again."""
    messages = [
        *_session(),
        user("The --csv flag in report.py is broken: it writes no header row. Fix the csv flag."),
        assistant("I will look at it again."),
        *todo_write(
            "t3",
            ("Add the --csv flag to report.py", "in_progress"),
            ("Write tests for the CSV export", "in_progress"),
        ),
    ]
    ledger = _ledger(messages)
    assert ledger.tasks[0].status == "in_progress"
    assert ledger.tasks[0].at == 10


def test_reopening_folded_before_the_plan_that_acts_on_it() -> None:
    """The user's reopening folded in one compaction lets the next one's plan reopen the task."""
    compactor = _compactor()
    first = [
        *_session(),
        user("The --csv flag in report.py writes no header row: please fix the csv flag again."),
        assistant("I will look at it again."),
    ]
    state = compactor.compact(ConversationState([*first, user("Go ahead.")]), force=True)
    assert _summary(state).work.tasks[0].status == "done"
    assert _summary(state).work.tasks[0].reopened == 7
    second = [
        *todo_write("t3", ("Add the --csv flag to report.py", "in_progress")),
        user("Thanks."),
        assistant("Working on it."),
    ]
    state = compactor.compact(state.extend(second), force=True)
    assert _summary(state).work.tasks[0].status == "in_progress"


def test_newest_plan_supersedes_item_by_item() -> None:
    """A todo left out of the newest list is dropped (history kept); a done one stays done."""
    messages = [
        *_session(),
        *todo_write(
            "t3",
            ("Write tests for the CSV export", "completed"),
            ("Ask the user about Excel support", "pending"),
        ),
    ]
    ledger = _ledger(messages)
    assert _statuses(ledger) == {
        "Add the --csv flag to report.py": "done",
        "Write tests for the CSV export": "done",
        "Update docs/cli.md": "dropped",
        "Ask the user about Excel support": "pending",
    }
    docs = ledger.tasks[2]
    assert docs.reason == "left out of the newest plan"
    assert [text for _, text in task_lines(ledger)] == [
        "done: Add the --csv flag to report.py (message 7)",
        "done: Write tests for the CSV export (message 9)",
        "pending: Ask the user about Excel support",
    ]


def test_claude_code_task_tools_block_and_unblock() -> None:
    """TaskCreate's result names the id; addBlockedBy blocks until the blocker is done."""
    messages = [
        user("Migrate the settings store to SQLite, then deploy it."),
        *anthropic_call(
            "c1",
            "TaskCreate",
            {"subject": "Migrate the settings store", "description": "Move to SQLite."},
            "Task #1 created successfully: Migrate the settings store",
        ),
        *anthropic_call(
            "c2",
            "TaskCreate",
            {"subject": "Deploy to staging", "description": "After the migration."},
            "Task #2 created successfully: Deploy to staging",
        ),
        *anthropic_call(
            "u1", "TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"]}, "Updated task #2"
        ),
        *anthropic_call(
            "u2", "TaskUpdate", {"taskId": "1", "status": "in_progress"}, "Updated task #1"
        ),
    ]
    ledger = _ledger(messages)
    assert _statuses(ledger) == {
        "Migrate the settings store": "in_progress",
        "Deploy to staging": "blocked",
    }
    assert [text for _, text in task_lines(ledger)] == [
        "in progress: Migrate the settings store (since message 9)",
        "blocked: Deploy to staging (message 7: waits for W1)",
    ]
    done = [
        *messages,
        *anthropic_call(
            "u3", "TaskUpdate", {"taskId": "1", "status": "completed"}, "Updated task #1"
        ),
        *anthropic_call("u4", "TaskUpdate", {"taskId": "3", "status": "deleted"}, "No task #3"),
    ]
    ledger = _ledger(done)
    assert _statuses(ledger) == {
        "Migrate the settings store": "done",
        "Deploy to staging": "pending",
    }


def test_task_update_deleted_drops_a_task() -> None:
    """TaskUpdate with status "deleted" drops the task: it leaves the header, not the history."""
    messages = [
        user("Tidy the repository."),
        *anthropic_call(
            "c1", "TaskCreate", {"subject": "Remove old fixtures"}, "Task #1 created successfully"
        ),
        *anthropic_call("u1", "TaskUpdate", {"taskId": "1", "status": "deleted"}, "Updated"),
    ]
    ledger = _ledger(messages)
    assert ledger.tasks[0].status == "dropped"
    assert task_lines(ledger) == []


def test_codex_update_plan() -> None:
    """Codex's update_plan: steps with pending/in_progress/completed, the newest plan winning."""
    messages = [
        user("Fix the flaky test in tests/test_sync.py."),
        *update_plan("p1", ("Reproduce the flake", "in_progress"), ("Fix the race", "pending")),
        *update_plan(
            "p2",
            ("Reproduce the flake", "completed"),
            ("Fix the race", "completed"),
            ("Run the suite 20 times", "in_progress"),
            explanation="The race is fixed.",
        ),
    ]
    assert _statuses(_ledger(messages)) == {
        "Reproduce the flake": "done",
        "Fix the race": "done",
        "Run the suite 20 times": "in_progress",
    }


def test_openhands_task_tracker_reads_plan_and_ignores_view() -> None:
    """OpenHands' task_tracker: ``plan`` sets the list (todo/in_progress/done), ``view`` reads."""
    messages = [
        user("Build the login form with validation."),
        *task_tracker(
            "k1", "plan", ("1", "Design the form", "done"), ("2", "Add validation", "todo")
        ),
        *task_tracker("k2", "view"),
        *task_tracker(
            "k3",
            "plan",
            ("1", "Design the login form", "done"),
            ("2", "Add validation", "in_progress"),
        ),
    ]
    ledger = _ledger(messages)
    assert _statuses(ledger) == {"Design the login form": "done", "Add validation": "in_progress"}
    assert len(ledger.tasks) == 2  # task 1 kept its id when its title changed


def test_deepagents_write_todos() -> None:
    """The write_todos of deepagents (LangChain's TodoListMiddleware): content and status."""
    messages = [
        user("Research three vector databases and compare them."),
        *write_todos("w1", ("List candidates", "completed"), ("Compare latency", "in_progress")),
    ]
    assert _statuses(_ledger(messages)) == {
        "List candidates": "done",
        "Compare latency": "in_progress",
    }


def test_failed_planning_call_changes_nothing() -> None:
    """A planning call whose result is an error records no task."""
    call = todo_write("t1", ("Add tests", "pending"))
    call[1]["content"][0]["is_error"] = True
    assert _ledger([user("Add tests."), *call]).tasks == ()


SCHEMA_WITH_TOOL = """
name = "checklist-agent"
description = "An agent that keeps a checklist."

[[fields]]
name = "facts"
label = "Facts"
description = "What was found."

[[planning_tools]]
name = "set_checklist"
items = "entries"
text = "title"
status = "state"
reason = "why"

[planning_tools.statuses]
open = "pending"
doing = "in_progress"
closed = "done"
stuck = "blocked"
"""


def test_user_configures_their_own_planning_tool(tmp_path: Path) -> None:
    """A schema file maps a custom planning tool; its blocked entries carry their reason."""
    path = tmp_path / "checklist.toml"
    path.write_text(SCHEMA_WITH_TOOL)
    schema = load_schema(path)
    entries = [
        {"title": "Collect the logs", "state": "closed"},
        {"title": "Restart the worker", "state": "stuck", "why": "needs the admin password"},
    ]
    messages = [
        user("Find out why the worker crashed."),
        *openai_call("s1", "set_checklist", {"entries": entries}, "ok"),
    ]
    ledger = _ledger(messages, schema)
    assert [text for _, text in task_lines(ledger)] == [
        "done: Collect the logs (message 3)",
        "blocked: Restart the worker (message 3: needs the admin password)",
    ]


def test_planning_tool_mapping_errors_name_the_fix(tmp_path: Path) -> None:
    """A mapping to an unknown status is refused with the statuses that exist."""
    path = tmp_path / "bad.toml"
    path.write_text(SCHEMA_WITH_TOOL.replace('stuck = "blocked"', 'stuck = "waiting"'))
    with pytest.raises(ConfigError, match="use one of: pending, in_progress, done"):
        load_schema(path)
    with pytest.raises(ConfigError, match="neither items"):
        PlanningTool(name="add_step")


def test_planning_calls_are_not_artifacts() -> None:
    """A planning tool's arguments (todo ids, task ids) never become trail lines."""
    messages = [
        user("Tidy up."),
        *anthropic_call(
            "t1",
            "TodoWrite",
            {"todos": [{"id": "1", "content": "Remove dead code", "status": "pending"}]},
            TODOS_OK,
        ),
        *anthropic_call("u1", "TaskUpdate", {"taskId": "7", "status": "completed"}, "Updated"),
    ]
    state: ConversationState[Any] = ConversationState(messages)
    assert trail(segment_of(state)) == ()
    entries = [{"title": "Read /srv/app/notes.md", "state": "open", "path": "/srv/app/notes.md"}]
    custom = [user("Plan it."), *openai_call("s1", "set_checklist", {"entries": entries}, "ok")]
    assert trail(segment_of(ConversationState(custom)), {"set_checklist"}) == ()


def _summary(state: ConversationState[Any]) -> Any:
    assert state.summary is not None, state.events
    return state.summary


def _compactor(schema: str = "coding-agent") -> Compactor[Any]:
    return Compactor(
        policy=Policy(context_window=200_000, keep=("messages", 2)),
        summarizer=ExtractiveSummarizer(),
        schema=load_schema(schema),
    )


def test_ledger_survives_compactions_with_right_status_at_each_boundary() -> None:
    """Folded in two compactions, the ledger shows every task's status as of each boundary."""
    compactor = _compactor()
    first = [*_session(), *bash("b1", "pytest -q tests/test_report.py", "5 passed in 0.1s")]
    state = compactor.compact(ConversationState(first), force=True)
    assert _statuses(_summary(state).work) == {
        "Add the --csv flag to report.py": "done",
        "Write tests for the CSV export": "in_progress",
        "Update docs/cli.md": "pending",
    }
    second = [
        *todo_write(
            "t3",
            ("Add the --csv flag to report.py", "completed"),
            ("Write tests for the CSV export", "completed"),
            ("Update docs/cli.md", "in_progress"),
        ),
        user("Thanks. Also mention the flag in the changelog."),
        assistant("Will do."),
    ]
    state = compactor.compact(state.extend(second), force=True)
    assert _statuses(_summary(state).work) == {
        "Add the --csv flag to report.py": "done",
        "Write tests for the CSV export": "done",
        "Update docs/cli.md": "in_progress",
    }
    assert "## Tasks" in state.header
    assert "- [W3] in progress: Update docs/cli.md (since message 11)" in state.header


def test_ledger_reaches_the_header_whichever_summarizer_ran() -> None:
    """A scripted (model-like) summarizer that says nothing of the plan still gets the ledger."""
    compactor: Compactor[Any] = Compactor(
        policy=Policy(context_window=200_000, keep=("messages", 2)),
        summarizer=QueuedSummarizer(SummaryUpdate()),
    )
    state = compactor.compact(ConversationState([*_session(), user("Go on.")]), force=True)
    assert "- [W1] in progress: Add the --csv flag to report.py (since message 3)" in state.header


def test_work_ledger_header_snapshot(snapshot_md: SnapshotAssertion) -> None:
    """The header of a coding session with a plan, after two compactions (the Tasks section)."""
    script: list[Message | SummaryUpdate] = [
        *_session(),
        *bash("b1", "pytest -q", "1 failed, 4 passed in 0.2s"),
        SummaryUpdate(add={"codebase_facts": ["report.py builds rows in build_rows()."]}),
        *todo_write(
            "t3",
            ("Add the --csv flag to report.py", "completed"),
            ("Write tests for the CSV export", "completed"),
            ("Update docs/cli.md", "in_progress"),
            ("Ask about Excel support", "pending"),
        ),
        user("Thanks. Keep the docs short."),
        assistant("Understood."),
        SummaryUpdate(),
        assistant("Updating the docs now."),
    ]
    state = scripted_state(script, schema=load_schema("coding-agent"))
    assert state.header == snapshot_md


def test_a_users_request_is_open_until_the_plan_that_does_it_is_done() -> None:
    """A request the user made stays open while its tasks run and closes once they are done.

    The open thread is retired with the tasks that did it as the reason; a request the plan does
    not cover stays open.
    """
    compactor = _compactor()
    first = [
        user("Start with the report command."),
        assistant("Reading the code."),
        user("Add a CSV export flag to the report command."),
        user("Also rename the old --out flag."),
        *todo_write("t1", ("Add the CSV export flag to report", "in_progress")),
        assistant("Working on it."),
    ]
    state = compactor.compact(ConversationState([*first, user("Go on.")]), force=True)
    threads = [item.text for item in _summary(state).open_threads]
    assert "Add a CSV export flag to the report command." in threads
    second = [
        *todo_write("t2", ("Add the CSV export flag to report", "completed")),
        assistant("Done."),
        user("Thanks."),
    ]
    state = compactor.compact(state.extend(second), force=True)
    threads = [item.text for item in _summary(state).open_threads]
    assert "Add a CSV export flag to the report command." not in threads
    assert "Also rename the old --out flag." in threads
    done = next(t for t in _summary(state).retired if "CSV export" in t.item.text)
    assert done.reason.startswith("done: W1")


def test_the_ledger_survives_saving_and_loading_the_state() -> None:
    """A saved state keeps every task with its history; a state saved before the ledger loads."""
    compactor = _compactor()
    state = compactor.compact(ConversationState([*_session(), user("Go on.")]), force=True)
    schema = load_schema("coding-agent")
    loaded = ConversationState.from_json(state.to_json(), schema=schema)
    assert _summary(loaded).work == _summary(state).work
    assert loaded.header == state.header
    older = state.to_json().replace('"work":', '"work_unused":')
    assert '"work_unused"' in older
    data = json.loads(older)
    data["summary"].pop("work_unused")
    assert _summary(ConversationState.from_json(json.dumps(data), schema=schema)).work.tasks == ()


def test_a_long_history_of_done_tasks_stays_a_few_lines() -> None:
    """Past `MAX_DONE_LINES` done tasks, the older ones share one line, oldest first, cut short.

    Open tasks are always listed one per line.
    """
    done = [(f"Port handler number {n:02d} to the new API", "completed") for n in range(30)]
    messages = [user("Port every handler."), *todo_write("t1", *done, ("Run the suite", "pending"))]
    lines = [text for _, text in task_lines(_ledger(messages))]
    assert len(lines) == MAX_DONE_LINES + 2
    assert lines[0].startswith("done earlier (18 tasks): Port handler number 00 to the new API; ")
    assert len(lines[0]) <= MAX_EARLIER_CHARS
    assert lines[1] == "done: Port handler number 18 to the new API (message 3)"
    assert lines[-1] == "pending: Run the suite"
