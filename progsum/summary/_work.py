"""The work ledger: the agent's tasks with their status, as its own planning tools left them.

Typed state, not prose: every summary carries a `WorkLedger` (``summary.work``) beside its schema's
fields, filled by our code from the agent's own plan and task tool calls
(`progsum.contract._planning`), never by a summarizer. The header renders it as its own section
(`task_lines`), one line per live task, deterministic::

    - [W1] done: Add the --csv flag to report.py (message 41)
    - [W2] in progress: Write tests for the CSV export (since message 44)
    - [W3] pending: Update docs/cli.md
    - [W4] blocked: Deploy to staging (message 50: waits for W2)

A `PlanningTool` says how to read one planning tool's input; progsum knows the common ones
(`progsum.contract._planning.KNOWN_TOOLS`) and a schema may declare its own
(``planning_tools`` in a schema file, `BaseSummary.planning_tools` in Python).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict

from progsum.errors import ConfigError

__all__ = [
    "MAX_DONE_LINES",
    "MAX_EARLIER_CHARS",
    "STATUSES",
    "TASK_PREFIX",
    "PlanningTool",
    "Task",
    "TaskChange",
    "TaskStatus",
    "WorkLedger",
    "task_lines",
]

TaskStatus: TypeAlias = Literal["pending", "in_progress", "done", "blocked", "dropped"]
STATUSES: tuple[TaskStatus, ...] = ("pending", "in_progress", "done", "blocked", "dropped")
"""Every status a task can have; ``dropped`` tasks (removed from the plan or deleted before they
were done) stay in the ledger's history but are not rendered."""
TASK_PREFIX = "W"
"""Letter before a task's number: ``W3`` is the third task the ledger ever recorded."""


class TaskChange(BaseModel):
    """One change of a task's status, kept as its history."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: TaskStatus
    at: int
    """Log index of the message that made the change (the tool result that recorded it)."""
    note: str = ""
    """Why: a blocked task's reason, or why a requested change was not applied."""


class Task(BaseModel):
    """One task of the agent's plan, in its last known state."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """Stable ledger id, `TASK_PREFIX` and a number."""
    key: str
    """How a later plan names the same task: the tool's own id (``todo:3``) or the task's words,
    case-folded with whitespace collapsed."""
    text: str
    """The task in the agent's words (a todo's ``content``, a step, a subject, a title)."""
    status: TaskStatus
    at: int
    """Log index of the message where its status last changed: the evidence."""
    since: int
    """Log index of the message where it first appeared."""
    reason: str = ""
    """Why it is blocked or was dropped."""
    waits_for: tuple[str, ...] = ()
    """Ledger ids of the tasks it waits for: it is blocked until they are done."""
    reopened: int | None = None
    """Log index of the user's message that asked for this done task again: the next change of
    its status applies (without it, a done task stays done)."""
    tool: str = ""
    """The planning tool that last wrote it."""
    history: tuple[TaskChange, ...] = ()
    """Every change, oldest first, including requests that were refused (a done task listed as
    pending again without the user reopening it)."""


class WorkLedger(BaseModel):
    """The agent's tasks, in the order they first appeared."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: tuple[Task, ...] = ()

    @property
    def live(self) -> tuple[Task, ...]:
        """The tasks a header shows: every one not dropped."""
        return tuple(t for t in self.tasks if t.status != "dropped")


_WORDS: Mapping[TaskStatus, str] = {
    "pending": "pending",
    "in_progress": "in progress",
    "done": "done",
    "blocked": "blocked",
    "dropped": "dropped",
}


MAX_DONE_LINES = 12
"""Done tasks a header lists one per line, the most recently done; older ones share a line."""
MAX_EARLIER_CHARS = 400
"""Longest line of the older done tasks (their words joined, oldest first, cut with ``…``)."""


def task_lines(ledger: WorkLedger) -> list[tuple[str, str]]:
    """Each live task as ``(id, text)`` for the header: its status, its words and the evidence.

    Messages are numbered from 1, as the header numbers them. A pending task shows no message
    (it has not changed since it was planned); an in-progress one the message it started at.
    Past `MAX_DONE_LINES` done tasks, the older ones come first on one line, ``done earlier (N
    tasks): …``, so a long session's plan stays a few lines and the agent still sees what it
    must not redo.
    """
    live = ledger.live
    order = {t.id: n for n, t in enumerate(live)}
    done = sorted((t for t in live if t.status == "done"), key=lambda t: (t.at, order[t.id]))
    earlier = {t.id for t in done[: max(0, len(done) - MAX_DONE_LINES)]}
    lines = []
    if earlier:
        older = [t for t in live if t.id in earlier]
        words = "; ".join(t.text for t in older)
        head = f"done earlier ({len(older)} tasks): "
        room = MAX_EARLIER_CHARS - len(head)
        text = head + (words if len(words) <= room else words[: room - 1].rstrip("; ") + "…")
        lines.append((f"{older[0].id}-{older[-1].id}", text))
    for task in live:
        if task.id in earlier:
            continue
        shown = task.at + 1
        if task.status == "in_progress":
            evidence = f" (since message {shown})"
        elif task.status == "pending":
            evidence = ""
        elif task.reason:
            evidence = f" (message {shown}: {task.reason})"
        else:
            evidence = f" (message {shown})"
        lines.append((task.id, f"{_WORDS[task.status]}: {task.text}{evidence}"))
    return lines


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanningTool:
    """How to read one planning tool's input into tasks.

    A *list* tool (``items`` set) sends the whole plan each time, as Claude Code's ``TodoWrite``
    does: each entry of the list argument ``items`` is a task, its words under ``text``, its status
    under ``status`` and, if the tool has one, its id under ``id``. The newest list supersedes the
    older one item by item. A *task* tool (``items`` empty) creates or updates one task per call,
    named by its ``id`` argument.

    Example (a tool ``set_checklist(entries=[{"title": ..., "state": "open"|"doing"|"closed"}])``):
        ``PlanningTool(name="set_checklist", items="entries", text="title", status="state",
        statuses={"open": "pending", "doing": "in_progress", "closed": "done"})``

    Attributes:
        name: The tool's name as the agent calls it (compared case-folded).
        items: The argument holding the list of tasks; empty for a one-task tool.
        text: The key of a task's words.
        status: The key of a task's status.
        statuses: The tool's status words, each mapped to a ledger status (`STATUSES`); a word
            not listed leaves the status as it was (a new task: pending).
        id: The key of a task's id, if the tool gives tasks ids.
        reason: The key of a blocked or dropped task's reason, if any.
        blocked_by: The key of the ids of the tasks a task waits for (it is blocked until they
            are done), if any.
        creates: A one-task tool whose calls create a task; its id is read from the tool's
            result (a JSON ``id``, else the first ``#N`` or number).
        when: Argument values the call must carry to be read (``{"command": "plan"}``).
        family: Tools that share task ids (a create tool and its update tool) share a family;
            default: the tool's own name. A list tool's newest list supersedes the tasks of
            its family only.
    """

    name: str
    items: str = ""
    text: str = "content"
    status: str = "status"
    statuses: Mapping[str, TaskStatus] = field(default_factory=dict, hash=False)
    id: str = ""
    reason: str = ""
    blocked_by: str = ""
    creates: bool = False
    when: Mapping[str, str] = field(default_factory=dict, hash=False)
    family: str = ""

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ConfigError(
                "a planning tool needs its name; give name='...' as the agent calls it"
            )
        for word, status in self.statuses.items():
            if status not in STATUSES:
                raise ConfigError(
                    f"planning tool {self.name!r} maps {word!r} to {status!r}, which is no task "
                    f"status; use one of: {', '.join(STATUSES)}"
                )
        if not (self.items or self.id or self.creates):
            raise ConfigError(
                f"planning tool {self.name!r} has neither items (the argument holding the list "
                "of tasks), nor id (the argument naming the one task a call changes), nor "
                "creates=True (each call creates a task); give one"
            )

    @property
    def key(self) -> str:
        """The tool's name, case-folded: how a call is matched to it."""
        return self.name.casefold()

    @property
    def group(self) -> str:
        """The tool's family, case-folded (its name when it has none)."""
        return (self.family or self.name).casefold()

    def status_of(self, word: object) -> TaskStatus | None:
        """The ledger status a status word of this tool stands for, or None (not one it knows).

        The tool's own `statuses` first, else `DEFAULT_STATUSES` (the words of the tools progsum
        knows), compared case-folded with spaces and hyphens read as underscores.
        """
        if not isinstance(word, str):
            return None
        folded = word.strip().casefold().replace(" ", "_").replace("-", "_")
        for known, status in self.statuses.items():
            if known.strip().casefold().replace(" ", "_").replace("-", "_") == folded:
                return status
        return DEFAULT_STATUSES.get(folded)


DEFAULT_STATUSES: Mapping[str, TaskStatus] = {
    "pending": "pending",
    "todo": "pending",
    "not_started": "pending",
    "in_progress": "in_progress",
    "completed": "done",
    "done": "done",
    "blocked": "blocked",
    "cancelled": "dropped",
    "canceled": "dropped",
    "deleted": "dropped",
}
"""The status values of the planning tools' documented enums (``pending | in_progress |
completed``, OpenHands' ``todo | in_progress | done``, opencode's ``cancelled``, Claude Code's
``deleted``), for a tool that declares no `PlanningTool.statuses` of its own."""
