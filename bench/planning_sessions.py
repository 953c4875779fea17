"""Agent sessions that keep their plan with a planning tool, built from the documented inputs.

No real transcript available to the team carries a planning tool call (the two long Claude Code
sessions in the shared data use none; see bench/agent_work.sources.md), so these fixtures are
written from each tool's documented input schema, cited in progsum/contract/_planning.py: Claude
Code's ``TodoWrite`` and ``TaskCreate``/``TaskUpdate`` as Anthropic ``tool_use`` blocks, Codex's
``update_plan``, OpenHands' ``task_tracker``, deepagents' ``write_todos`` and a user's own
``set_checklist`` (declared in a schema's ``[[planning_tools]]``) as OpenAI chat ``tool_calls``.

`sessions()` builds one session per tool from one scenario (`SCENARIO`): a plan that moves on
between rounds of work (file reads, edits and test runs with outputs of realistic size, so that
small windows compact several times), a newer plan that lists a done task as pending again
without the user reopening it, a task the user drops, and a done task the user reopens. Each
session carries the truth: the status of every task after each planning call, written by hand
in the scenario, never computed by progsum. tests/test_planning.py builds its small
conversations with the same builders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

Message = dict[str, Any]
Shape = Literal["anthropic", "openai"]

TODOS_OK = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to "
    "track your progress. Please proceed with the current tasks if applicable"
)
"""The result Claude Code's TodoWrite returns."""


def user(text: str) -> Message:
    """A message the user typed."""
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    """An assistant message with text only."""
    return {"role": "assistant", "content": text}


def anthropic_call(call_id: str, name: str, args: dict[str, Any], result: str) -> list[Message]:
    """An Anthropic tool round: the assistant's ``tool_use`` and the user's ``tool_result``."""
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}],
        },
    ]


def openai_call(call_id: str, name: str, args: dict[str, Any], result: str) -> list[Message]:
    """An OpenAI chat tool round: the assistant's ``tool_calls`` and the ``tool`` message."""
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def call(shape: Shape, call_id: str, name: str, args: dict[str, Any], result: str) -> list[Message]:
    """A tool round in ``shape``."""
    build = anthropic_call if shape == "anthropic" else openai_call
    return build(call_id, name, args, result)


def todo_write(call_id: str, *todos: tuple[str, str]) -> list[Message]:
    """A Claude Code ``TodoWrite`` round with ``(content, status)`` todos."""
    items = [
        {"content": content, "status": status, "activeForm": content + " (working)"}
        for content, status in todos
    ]
    return anthropic_call(call_id, "TodoWrite", {"todos": items}, TODOS_OK)


def update_plan(call_id: str, *steps: tuple[str, str], explanation: str = "") -> list[Message]:
    """A Codex ``update_plan`` round with ``(step, status)`` steps."""
    args: dict[str, Any] = {"plan": [{"step": s, "status": st} for s, st in steps]}
    if explanation:
        args["explanation"] = explanation
    return openai_call(call_id, "update_plan", args, "Plan updated")


def task_tracker(call_id: str, command: str, *tasks: tuple[str, str, str]) -> list[Message]:
    """An OpenHands ``task_tracker`` round with ``(id, title, status)`` tasks."""
    args: dict[str, Any] = {"command": command}
    if tasks:
        args["task_list"] = [{"id": i, "title": t, "status": s} for i, t, s in tasks]
    return openai_call(call_id, "task_tracker", args, "Task list updated")


def write_todos(call_id: str, *todos: tuple[str, str]) -> list[Message]:
    """A deepagents ``write_todos`` round with ``(content, status)`` todos."""
    args = {"todos": [{"content": c, "status": s} for c, s in todos]}
    return openai_call(call_id, "write_todos", args, f"Updated todo list to {args['todos']}")


def bash(call_id: str, command: str, output: str, shape: Shape = "anthropic") -> list[Message]:
    """A shell round (Claude Code's ``Bash``, or a ``bash`` function call)."""
    return call(
        shape, call_id, "Bash" if shape == "anthropic" else "bash", {"command": command}, output
    )


def edit(call_id: str, path: str, shape: Shape = "anthropic") -> list[Message]:
    """An edit of ``path`` (Claude Code's ``Edit``, or an ``edit_file`` function call)."""
    args = {"file_path": path, "old_string": "rows = []", "new_string": "rows = list(source)"}
    name = "Edit" if shape == "anthropic" else "edit_file"
    return call(shape, call_id, name, args, f"The file {path} has been updated.")


def read(call_id: str, path: str, lines: int, shape: Shape = "anthropic") -> list[Message]:
    """A read of ``path`` returning ``lines`` numbered lines of code."""
    body = "\n".join(
        f"{n:>6}\u2192    value_{n} = compute(rows[{n}], scale={n % 7}, label='r{n}')"
        for n in range(1, lines + 1)
    )
    name = "Read" if shape == "anthropic" else "read_file"
    return call(shape, call_id, name, {"file_path": path}, body)


Status = Literal["pending", "in_progress", "done", "blocked", "dropped"]


@dataclass(frozen=True, slots=True)
class Plan:
    """A planning call: the listed ``(task, tool status word)`` pairs, and the truth after it."""

    listed: tuple[tuple[str, str], ...]
    truth: dict[str, Status]


@dataclass(frozen=True, slots=True)
class Session:
    """One fixture session: its messages, the schema it needs, and the truth after each call.

    ``truth[i]`` is the status of every task after the planning call whose result is message
    ``i``; a boundary at cutoff ``c`` expects the last truth of a message before ``c``.
    """

    tool: str
    shape: Shape
    messages: list[Message]
    truth: dict[int, dict[str, Status]]


A, B, C, D = (
    "Add the --csv flag to report.py",
    "Write tests for the CSV export",
    "Update docs/cli.md",
    "Support Excel output",
)
SCENARIO: tuple[str | int | Plan, ...] = (
    "Add a CSV export to the report command, with tests and docs. Excel output would be nice.",
    Plan(
        ((A, "in_progress"), (B, "pending"), (C, "pending"), (D, "pending")),
        {A: "in_progress", B: "pending", C: "pending", D: "pending"},
    ),
    3,
    Plan(
        ((A, "completed"), (B, "in_progress"), (C, "pending"), (D, "pending")),
        {A: "done", B: "in_progress", C: "pending", D: "pending"},
    ),
    3,
    # the agent lists the done task as pending again: the user did not reopen it
    Plan(
        ((A, "pending"), (B, "completed"), (C, "in_progress"), (D, "pending")),
        {A: "done", B: "done", C: "in_progress", D: "pending"},
    ),
    "Skip the Excel output, we do not need it.",
    Plan(
        ((A, "completed"), (B, "completed"), (C, "in_progress")),
        {A: "done", B: "done", C: "in_progress", D: "dropped"},
    ),
    3,
    "The --csv flag in report.py writes no header row: please fix the csv flag again.",
    Plan(
        ((A, "in_progress"), (B, "completed"), (C, "completed")),
        {A: "in_progress", B: "done", C: "done", D: "dropped"},
    ),
    3,
    Plan(
        ((A, "completed"), (B, "completed"), (C, "completed")),
        {A: "done", B: "done", C: "done", D: "dropped"},
    ),
    2,
    "Thanks, that is all for now.",
)
"""The plan's story, in order: a user message (str), a planning call (`Plan`), or rounds of work
(int: each round reads a file, edits it and runs the tests)."""

_WORDS = {
    "TodoWrite": {"completed": "completed"},
    "update_plan": {"completed": "completed"},
    "write_todos": {"completed": "completed"},
    "task_tracker": {"pending": "todo", "completed": "done"},
    "set_checklist": {"pending": "open", "in_progress": "doing", "completed": "closed"},
}
"""Each list tool's word for the scenario's statuses (its documented enum)."""

CHECKLIST_SCHEMA = """\
name = "checklist-agent"
description = "A coding agent that keeps its plan with its own set_checklist tool."

[objective]
name = "goal"
label = "Goal"
description = "The change the user wants made."

[[fields]]
name = "files"
label = "Files touched"
description = "One item per file, written as 'path: what changed'."
kind = "keyed"
extract = ["files"]

[[fields]]
name = "commands"
label = "Commands and test status"
description = "One item per command run, written as 'command: latest outcome'."
kind = "keyed"
extract = ["commands"]

[[fields]]
name = "facts"
label = "Facts"
description = "What was learned about the code."
id_prefix = "K"
extract = ["facts", "errors", "identifiers", "answers"]

[[fields]]
name = "open_threads"
label = "Open work"
description = "The user's requests and questions still open."
extract = ["questions"]

[[planning_tools]]
name = "set_checklist"
items = "entries"
text = "title"
status = "state"

[planning_tools.statuses]
open = "pending"
doing = "in_progress"
closed = "done"
"""
"""The schema a user writes for their own planning tool (`PlanningTool` via TOML)."""

LIST_TOOLS = ("TodoWrite", "update_plan", "task_tracker", "write_todos", "set_checklist")


def sessions() -> list[Session]:
    """One session per planning tool, all from `SCENARIO` (see the module docstring)."""
    found = [_list_session(tool) for tool in LIST_TOOLS]
    found.append(_task_tools_session())
    return found


def _list_session(tool: str) -> Session:
    shape: Shape = "anthropic" if tool == "TodoWrite" else "openai"
    messages: list[Message] = []
    truth: dict[int, dict[str, Status]] = {}
    ids = {text: str(n) for n, text in enumerate((A, B, C, D), start=1)}
    for step, part in enumerate(SCENARIO):
        if isinstance(part, str):
            messages.append(user(part))
        elif isinstance(part, int):
            messages.extend(_work(shape, step, part))
        else:
            messages.extend(_plan_call(tool, f"plan{step}", part, ids))
            truth[len(messages) - 1] = dict(part.truth)
    return Session(tool, shape, messages, truth)


def _plan_call(tool: str, call_id: str, plan: Plan, ids: dict[str, str]) -> list[Message]:
    words = _WORDS[tool]
    listed = [(text, words.get(status, status)) for text, status in plan.listed]
    if tool == "TodoWrite":
        return todo_write(call_id, *listed)
    if tool == "update_plan":
        return update_plan(call_id, *listed)
    if tool == "write_todos":
        return write_todos(call_id, *listed)
    if tool == "task_tracker":
        view = task_tracker(call_id + "v", "view")
        return [*view, *task_tracker(call_id, "plan", *((ids[t], t, s) for t, s in listed))]
    entries = [{"title": t, "state": s} for t, s in listed]
    return openai_call(call_id, "set_checklist", {"entries": entries}, "checklist saved")


def _work(shape: Shape, step: int, rounds: int) -> list[Message]:
    """``rounds`` rounds of work: read a file, edit it, run the tests."""
    messages: list[Message] = []
    for n in range(rounds):
        path = f"/home/dev/reports/src/report/{['cli', 'export', 'rows'][n % 3]}.py"
        tag = f"{step}-{n}"
        messages.extend(read(f"r{tag}", path, 60, shape))
        messages.extend(edit(f"e{tag}", path, shape))
        tally = "\n".join(f"tests/test_report.py::test_case_{k} PASSED" for k in range(30))
        messages.extend(
            bash(f"b{tag}", "pytest -q tests/test_report.py", f"{tally}\n30 passed", shape)
        )
    return messages


def _task_tools_session() -> Session:
    """Claude Code's TaskCreate/TaskUpdate: a task blocked by another until it is done."""
    m: list[Message] = [user("Migrate the settings store to SQLite, then deploy it to staging.")]
    truth: dict[int, dict[str, Status]] = {}
    mig, dep, note = "Migrate the settings store", "Deploy to staging", "Write the release note"

    def create(call_id: str, subject: str, number: int, state: dict[str, Status]) -> None:
        args = {"subject": subject, "description": subject + "."}
        result = f"Task #{number} created successfully: {subject}"
        m.extend(anthropic_call(call_id, "TaskCreate", args, result))
        truth[len(m) - 1] = state

    def update(call_id: str, args: dict[str, Any], *states: Status) -> None:
        m.extend(anthropic_call(call_id, "TaskUpdate", args, f"Updated task #{args['taskId']}"))
        truth[len(m) - 1] = dict(zip((mig, dep, note), states, strict=False))

    create("c1", mig, 1, {mig: "pending"})
    create("c2", dep, 2, {mig: "pending", dep: "pending"})
    update("u1", {"taskId": "2", "addBlockedBy": ["1"]}, "pending", "blocked")
    update("u2", {"taskId": "1", "status": "in_progress"}, "in_progress", "blocked")
    m.extend(_work("anthropic", 1, 3))
    update("u3", {"taskId": "1", "status": "completed"}, "done", "pending")
    create("c3", note, 3, {mig: "done", dep: "pending", note: "pending"})
    update("u4", {"taskId": "2", "status": "in_progress"}, "done", "in_progress", "pending")
    m.extend(_work("anthropic", 2, 3))
    # the agent sets the done migration back to in progress: the user did not reopen it
    update("u5", {"taskId": "1", "status": "in_progress"}, "done", "in_progress", "pending")
    update("u6", {"taskId": "3", "status": "deleted"}, "done", "in_progress", "dropped")
    m.extend(_work("anthropic", 3, 3))
    update("u7", {"taskId": "2", "status": "completed"}, "done", "done", "dropped")
    m.append(user("Thanks, that is all."))
    return Session("TaskCreate/TaskUpdate", "anthropic", m, truth)
