"""The agent's plan, read from its own planning tools into the work ledger.

Pure and deterministic. `merge_work` reads a folded segment's tool calls and their results
(`progsum.contract._steps`, paired by position) and applies each call of a planning tool, in
order, to the prior `progsum.summary._work.WorkLedger`:

* A **list tool** (Claude Code's ``TodoWrite``, Codex's ``update_plan``, OpenHands'
  ``task_tracker``, deepagents' ``write_todos``) sends the whole plan. The newest list supersedes
  the older one item by item: an entry names a task by the tool's id when it has one, else by
  its words (case-folded, whitespace collapsed); a listed task takes the listed status; a live
  task of the same tool family that the list leaves out is *dropped* (kept in the history, not
  shown), unless it was done: a done task stays done.
* A **task tool** (Claude Code's ``TaskCreate`` and ``TaskUpdate``) creates or changes one task,
  named by its id (``TaskCreate``'s from its result). ``addBlockedBy`` blocks a task until the
  tasks it names are done; the last of them done, it is pending again.
* **A done task never reopens unless the user reopens it**: a later call that lists it as pending
  or in progress changes nothing (the refusal is kept in its history) unless a message of the
  segment, written by the user before that call, refers to the task (`progsum.contract._support.
  refers`: a shared value or half its content words) and reopens it (the judge's ``reopens``).
* Evidence: every change records the log index of the tool result that made it.

Which tools are read: `KNOWN_TOOLS`, each from its documented input schema (cited beside it), and
the schema's own (`progsum.summary._schema.BaseSummary.planning_tools`), which override a known
tool of the same name. A call that failed (an error result) or whose arguments do not match the
mapping changes nothing. See docs/work.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from progsum.contract._steps import Step, steps
from progsum.contract._support import Said, refers, said_in
from progsum.judge import _seam as seam
from progsum.judge._lexicon import content_words
from progsum.summary._request import Segment
from progsum.summary._schema import Item
from progsum.summary._work import (
    TASK_PREFIX,
    PlanningTool,
    Task,
    TaskChange,
    TaskStatus,
    WorkLedger,
)

__all__ = [
    "KNOWN_TOOLS",
    "MAX_TASK_CHARS",
    "finished_requests",
    "merge_work",
    "planning_tools",
    "tool_names",
]

KNOWN_TOOLS: tuple[PlanningTool, ...] = (
    # Claude Code, TodoWrite: the whole list each call, as todos, each with content, status
    # (pending, in_progress or completed) and activeForm. Agent SDK reference, TypeScript,
    # TodoWriteInput: https://platform.claude.com/docs/en/agent-sdk/typescript. Logs of
    # versions 1.0.x also carry an id and a priority per todo.
    PlanningTool(name="TodoWrite", items="todos", text="content", status="status", id="id"),
    # Claude Code, TaskCreate (subject, description, activeForm; its result names the new
    # task's id) and TaskUpdate (taskId, status: pending, in_progress, completed or deleted;
    # subject, description, addBlocks, addBlockedBy, owner), listed in
    # https://code.claude.com/docs/en/tools-reference.
    PlanningTool(name="TaskCreate", creates=True, text="subject", family="claude-code-tasks"),
    PlanningTool(
        name="TaskUpdate",
        id="taskId",
        text="subject",
        status="status",
        blocked_by="addBlockedBy",
        family="claude-code-tasks",
    ),
    # Codex, update_plan: an optional explanation and the plan, a list of steps, each with its
    # step text and status (pending, in_progress or completed). openai/codex,
    # codex-rs/protocol/src/plan_tool.rs, UpdatePlanArgs.
    PlanningTool(name="update_plan", items="plan", text="step", status="status"),
    # OpenHands, task_tracker: a command (view or plan) and, for plan, the task_list, each task
    # with id, title, status (todo, in_progress or done) and notes; view changes nothing.
    # All-Hands-AI/OpenHands, openhands/agenthub/codeact_agent/tools/task_tracker.py.
    PlanningTool(
        name="task_tracker",
        items="task_list",
        text="title",
        status="status",
        id="id",
        when={"command": "plan"},
    ),
    # deepagents, write_todos (LangChain's TodoListMiddleware): the todos, each with content and
    # a status that is pending, in_progress or completed; see langchain-ai/langchain at
    # libs/langchain_v1/langchain/agents/middleware/todo.py.
    PlanningTool(name="write_todos", items="todos", text="content", status="status"),
)
"""The planning tools progsum reads without configuration."""

MAX_TASK_CHARS = 200
"""Longest task text kept whole; longer ones end in ``…``."""


def planning_tools(own: Sequence[PlanningTool] = ()) -> dict[str, PlanningTool]:
    """The tools read, by case-folded name: `KNOWN_TOOLS`, overridden by a schema's ``own``."""
    found = {tool.key: tool for tool in KNOWN_TOOLS}
    found.update((tool.key, tool) for tool in own)
    return found


def tool_names(own: Sequence[PlanningTool] = ()) -> frozenset[str]:
    """The case-folded names of the planning tools read (their calls are not artifacts)."""
    return frozenset(planning_tools(own))


def merge_work(
    ledger: WorkLedger, segment: Segment, own: Sequence[PlanningTool] = ()
) -> WorkLedger:
    """``ledger`` with the segment's planning tool calls applied in order (see the module)."""
    tools = planning_tools(own)
    calls = [(step, tools.get(step.tool.casefold())) for step in steps(segment)]
    found: list[tuple[int, Step | Said, PlanningTool | None]] = [
        (step.at, step, tool)
        for step, tool in calls
        if tool is not None
        and not step.error
        and all(str(step.args.get(k)) == v for k, v in tool.when.items())
    ]
    if not found and not any(t.status == "done" for t in ledger.tasks):
        return ledger
    book = _Book(list(ledger.tasks))
    found += [(s.at, s, None) for s in said_in(segment) if s.author == "user"]
    for _, event, tool in sorted(found, key=lambda entry: entry[0]):
        if isinstance(event, Said):
            book.heard(event)
        elif tool is not None and tool.items:
            book.plan(event, tool)
        elif tool is not None:
            book.task(event, tool)
    tasks = tuple(book.tasks)
    return ledger if tasks == ledger.tasks else WorkLedger(tasks=tasks)


def finished_requests(
    threads: Sequence[Item], before: WorkLedger, after: WorkLedger
) -> list[tuple[Item, str]]:
    """The user's open requests the plan finished in this segment, each with the reason.

    A request (an open thread the user wrote that is no question) is done when the tasks done in
    this segment (done in ``after``, not in ``before``) together hold at least half its content
    words, and no task still pending, in progress or blocked holds half of them.
    """
    was = {t.id for t in before.tasks if t.status == "done"}
    done = [t for t in after.tasks if t.status == "done" and t.id not in was]
    if not done:
        return []
    open_tasks = [t for t in after.tasks if t.status not in ("done", "dropped")]
    found: list[tuple[Item, str]] = []
    for item in threads:
        wanted = content_words(item.text)
        if item.author != "user" or item.text.rstrip().endswith("?") or not wanted:
            continue
        half = math.ceil(len(wanted) / 2)
        doing = [t for t in done if wanted & content_words(t.text)]
        covered = wanted & frozenset().union(*(content_words(t.text) for t in doing))
        if len(covered) < half or any(
            len(wanted & content_words(t.text)) >= half for t in open_tasks
        ):
            continue
        ids = ", ".join(t.id for t in doing)
        found.append((item, f"done: {ids} (message {max(t.at for t in doing) + 1})"))
    return found


@dataclass
class _Book:
    """The ledger's tasks while a segment's calls are applied to them."""

    tasks: list[Task]
    created: dict[str, int] = field(default_factory=dict)
    """Tasks each family created in this segment (a create tool's fallback id)."""

    def plan(self, step: Step, tool: PlanningTool) -> None:
        """Apply a whole list: listed tasks take their status, unlisted live ones are dropped."""
        entries = step.args.get(tool.items)
        if not isinstance(entries, list):
            return
        listed: set[str] = set()
        for entry in entries:
            read = _entry(entry, tool)
            if read is None:
                continue
            text, status, own_id, reason = read
            key = _key(tool, own_id, text)
            listed.add(key)
            self.put(key, text, status, step, tool, reason=reason)
        for task in list(self.tasks):
            if task.key in listed or task.status in ("done", "dropped"):
                continue
            if _family(task) == tool.group:
                note = "left out of the newest plan"
                self.change(task, "dropped", step.at, tool, note=note)

    def task(self, step: Step, tool: PlanningTool) -> None:
        """Apply a one-task call: create the task, or change the one its id names."""
        args = step.args
        text = _text(args.get(tool.text))
        status = tool.status_of(args.get(tool.status)) if tool.status else None
        if tool.creates:
            number = self.created.get(tool.group, _count(self.tasks, tool.group)) + 1
            self.created[tool.group] = number
            own_id = _result_id(step.output) or str(number)
        else:
            own_id = _text(args.get(tool.id))
        if not own_id:
            return
        key = _key(tool, own_id, text)
        if self.find(key) is None and not text:
            return  # an update of a task the ledger never saw, without its words
        reason = _text(args.get(tool.reason)) if tool.reason else ""
        self.put(key, text, status, step, tool, reason=reason)
        blockers = args.get(tool.blocked_by) if tool.blocked_by else None
        if isinstance(blockers, list) and blockers:
            self.block(key, [_key(tool, _text(b), "") for b in blockers], step, tool)

    def put(
        self,
        key: str,
        text: str,
        status: TaskStatus | None,
        step: Step,
        tool: PlanningTool,
        *,
        reason: str = "",
    ) -> None:
        """Create the task under ``key``, or change its status (`change`) and words."""
        task = self.find(key)
        if task is None:
            if not text:
                return
            self.tasks.append(
                Task(
                    id=f"{TASK_PREFIX}{_next_number(self.tasks)}",
                    key=key,
                    text=text,
                    status=status or "pending",
                    at=step.at,
                    since=step.at,
                    reason=reason if status in ("blocked", "dropped") else "",
                    tool=tool.name,
                    history=(TaskChange(status=status or "pending", at=step.at, note=reason),),
                )
            )
            return
        if text and text != task.text:
            task = self.replace(task, text=text)
        if status is not None and (status != task.status or reason != task.reason):
            self.change(task, status, step.at, tool, note=reason)

    def change(
        self, task: Task, status: TaskStatus, at: int, tool: PlanningTool, *, note: str = ""
    ) -> None:
        """Set ``task``'s status at log index ``at``, unless it is done and stays done."""
        if task.status == "done" and status != "done" and (task.reopened or -1) <= task.at:
            kept = TaskChange(status=status, at=at, note="not applied: done, and not reopened")
            self.replace(task, history=(*task.history, kept))
            return
        reason = note if status in ("blocked", "dropped") else ""
        changed = self.replace(
            task,
            status=status,
            at=at,
            reason=reason,
            tool=tool.name,
            reopened=None,
            waits_for=task.waits_for if status == "blocked" else (),
            history=(*task.history, TaskChange(status=status, at=at, note=note)),
        )
        if status == "done":
            self.unblock(changed, at, tool)

    def block(self, key: str, blockers: list[str], step: Step, tool: PlanningTool) -> None:
        """Block the task under ``key`` until the tasks under ``blockers`` are done."""
        task = self.find(key)
        waiting = [b for b in (self.find(k) for k in blockers) if b is not None]
        waiting = [b for b in waiting if b.status != "done"]
        if task is None or not waiting or task.status == "done":
            return
        ids = tuple(dict.fromkeys((*task.waits_for, *(b.id for b in waiting))))
        note = "waits for " + ", ".join(ids)
        self.change(task, "blocked", step.at, tool, note=note)
        task = self.find(key)
        if task is not None:
            self.replace(task, waits_for=ids)

    def unblock(self, done: Task, at: int, tool: PlanningTool) -> None:
        """Tasks blocked by ``done`` alone become pending again."""
        for task in list(self.tasks):
            if task.status != "blocked" or done.id not in task.waits_for:
                continue
            rest = tuple(i for i in task.waits_for if i != done.id)
            if any(t.id in rest and t.status != "done" for t in self.tasks):
                self.replace(task, waits_for=rest, reason="waits for " + ", ".join(rest))
                continue
            self.change(task, "pending", at, tool, note=f"{done.id} is done")

    def heard(self, said: Said) -> None:
        """Note the done tasks a user message refers to and asks for again: they may reopen."""
        asks: bool | None = None
        for task in list(self.tasks):
            if task.status != "done" or said.at <= task.at:
                continue
            if not refers(Item(id=task.id, text=task.text, source=(task.since, task.at)), said):
                continue
            asks = _asks_again(said.text) if asks is None else asks
            if asks:
                note = TaskChange(status="done", at=said.at, note="the user asks for it again")
                self.replace(task, reopened=said.at, history=(*task.history, note))

    def find(self, key: str) -> Task | None:
        """The task under ``key``, or None."""
        return next((t for t in self.tasks if t.key == key), None)

    def replace(self, task: Task, **changes: object) -> Task:
        """Put a copy of ``task`` with ``changes`` in its place; return the copy."""
        new = task.model_copy(update=changes)
        self.tasks[self.tasks.index(task)] = new
        return new


def _asks_again(text: str) -> bool:
    """Whether the user's ``text`` asks for work, requires something of it, or revises it.

    A sentence the judge reads as a ``todo`` (work asked for), a ``rule`` (a requirement on the
    work) or a ``revision`` does; a question, a fact ("the flag works") or a thank-you does not.
    """
    judge = seam.current()
    context = seam.context("user")
    return any(judge.judge(s, context).label in _REOPENING for s in judge.sentences(text))


_REOPENING = frozenset({"todo", "rule", "revision"})
_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"#(\w+)|\b(\d+)\b")


def _text(value: object) -> str:
    """A task's words or id on one line, whitespace collapsed, at most `MAX_TASK_CHARS`."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return ""
    flat = _SPACE.sub(" ", str(value)).strip()
    return flat if len(flat) <= MAX_TASK_CHARS else flat[: MAX_TASK_CHARS - 1].rstrip() + "…"


def _entry(entry: object, tool: PlanningTool) -> tuple[str, TaskStatus | None, str, str] | None:
    """One list entry as ``(text, status, the tool's id, reason)``, or None when it has no text."""
    if isinstance(entry, str):
        return (_text(entry), None, "", "") if _text(entry) else None
    if not isinstance(entry, Mapping):
        return None
    text = _text(entry.get(tool.text))
    if not text:
        return None
    status = tool.status_of(entry.get(tool.status))
    own_id = _text(entry.get(tool.id)) if tool.id else ""
    reason = _text(entry.get(tool.reason)) if tool.reason else ""
    return text, status, own_id, reason


def _key(tool: PlanningTool, own_id: str, text: str) -> str:
    """The key a task is found under: its family and id, else its words."""
    if own_id:
        return f"{tool.group}#{own_id}"
    return "text:" + " ".join(text.casefold().split())


def _family(task: Task) -> str:
    """The tool family a task belongs to: its key's, else (a task named by its words) its tool's."""
    family, sep, _ = task.key.partition("#")
    return family if sep and not task.key.startswith("text:") else task.tool.casefold()


def _count(tasks: Iterable[Task], family: str) -> int:
    """Tasks of ``family`` named by id: what a create tool numbered before."""
    return sum(t.key.startswith(f"{family}#") for t in tasks)


def _result_id(output: str) -> str:
    """The id a create tool's result names: a JSON ``id``, else the first ``#N`` or number."""
    try:
        value = json.loads(output)
    except ValueError:
        value = None
    if isinstance(value, Mapping):
        inner = value.get("task")
        found = (inner if isinstance(inner, Mapping) else value).get("id")
        if found is not None:
            return _text(found)
    match = _NUMBER.search(output)
    return (match.group(1) or match.group(2)) if match else ""


def _next_number(tasks: Sequence[Task]) -> int:
    """One past the highest task number in use."""
    numbers = [int(t.id[len(TASK_PREFIX) :]) for t in tasks if t.id[len(TASK_PREFIX) :].isdigit()]
    return max(numbers, default=0) + 1
