"""Conversations in which an agent keeps its plan with a planning tool, from documented schemas.

No real transcript in the team's data carries a planning tool, so these are built from the tools'
documented input schemas.

Each builder returns provider-shaped messages: Claude Code's tools as Anthropic ``tool_use`` blocks,
Codex's, OpenHands' and deepagents' as OpenAI chat ``tool_calls``. The arguments follow each
tool's documented input (cited in progsum/contract/planning.py).
"""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]


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


TODOS_OK = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to "
    "track your progress. Please proceed with the current tasks if applicable"
)
"""The result Claude Code's TodoWrite returns."""


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


def bash(call_id: str, command: str, output: str) -> list[Message]:
    """A Claude Code ``Bash`` round."""
    return anthropic_call(call_id, "Bash", {"command": command}, output)


def edit(call_id: str, path: str) -> list[Message]:
    """A Claude Code ``Edit`` round on ``path``."""
    args = {"file_path": path, "old_string": "a", "new_string": "b"}
    return anthropic_call(call_id, "Edit", args, f"The file {path} has been updated.")
