"""The conversations of bench/windows.py's guarantee rows: real ones of every format, and made ones.

Real (read in place from the shared data folder, never copied; docs/windows.md names each set):

* `agent_corpora`: Claude Code sessions, τ-bench airline runs and SWE-agent trajectories, through
  `progsum.replay._importers.read_conversations`, with the authors the importers tell;
* `as_openai`: an Anthropic-shaped conversation (a Claude Code session) in OpenAI Chat
  Completions shape, its parallel tool rounds as one ``tool`` message per result;
* `chats`: two-person chats (MSC with its speakers named, MemoryBank with its days, DailyDialog)
  and task chats between a user and a clerk (SGD, MultiWOZ, CrossWOZ in Chinese), joined into
  streams of consecutive conversations (`streams`) so that small windows compact many times.

Made (deterministic; the shapes the issue describes, which the data holds too rarely):

* `parallel_rounds`: an OpenAI agent making N parallel calls per round whose results are ~330
  words each (just under the cheap reduction's 2,000-character floor, each under the clip limit);
* `value_chat`: a chat whose user states a number in most messages (a training log);
* `rules_chat`: a chat whose user sets a spending limit in most messages (a rule and a value
  each: binding items and their budget).

The made ones are tests/conversations.py's, so the tests and this bench replay the same shapes.

"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import shared_data
from shared_data import AGENT_SETS, CHAT_SETS, agent_conversations, present

from progsum.judge._provenance import Author
from progsum.policy._tokens import HeuristicCounter
from progsum.replay._importers import Imported
from tests.conversations import openai_rounds, spending_rules, training_log

Message = dict[str, Any]

STREAM_FACTOR = 3
"""A chat stream holds at least this many windows of estimated tokens (as bench/retention.py)."""


@dataclass(frozen=True)
class Case:
    """One conversation to replay: its name, messages, authors (or None) and system text."""

    name: str
    messages: tuple[Message, ...]
    authors: tuple[Author | None, ...] | None = None
    system: str | None = None


def agent_corpora(data: Path, corpus: str | None = None) -> list[Case]:
    """Every agent conversation of the sets the data folder holds (``corpus``: that set only)."""
    names = list(AGENT_SETS) if corpus is None else [corpus]
    return [_case(c) for _, c in agent_conversations(data, names, some=False)]


def _case(imported: Imported) -> Case:
    return Case(imported.name, tuple(imported.messages), imported.authors, imported.system)


# -- OpenAI shape --------------------------------------------------------------------------------


def as_openai(case: Case) -> Case:
    """An Anthropic-shaped conversation in OpenAI Chat Completions shape.

    An assistant turn's text blocks become its ``content`` and its ``tool_use`` blocks its
    ``tool_calls`` (thinking has no place there and is left out); a user turn's ``tool_result``
    blocks become one ``tool`` message each, in order, and its other blocks one user message
    after them, with the turn's author.
    """
    messages: list[Message] = []
    authors: list[Author | None] = []
    given = case.authors or (None,) * len(case.messages)
    for message, author in zip(case.messages, given, strict=True):
        content = message.get("content")
        if message.get("role") == "assistant":
            messages.append(_assistant(content))
            authors.append("assistant")
            continue
        if isinstance(content, str):
            messages.append({"role": "user", "content": content})
            authors.append(author)
            continue
        blocks = [b for b in content or [] if isinstance(b, dict)]
        for block in blocks:
            if block.get("type") == "tool_result":
                text = _text(block.get("content"))
                messages.append(
                    {"role": "tool", "tool_call_id": block["tool_use_id"], "content": text}
                )
                authors.append("tool")
        rest = "\n\n".join(_text([b]) for b in blocks if b.get("type") != "tool_result")
        if rest.strip():
            messages.append({"role": "user", "content": rest})
            authors.append(author)
    return Case(f"{case.name} (as OpenAI)", tuple(messages), tuple(authors), case.system)


def _assistant(content: object) -> Message:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    blocks = [b for b in content or [] if isinstance(b, dict)]  # type: ignore[attr-defined]
    text = "\n\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    calls = [
        {
            "id": str(b.get("id", "")),
            "type": "function",
            "function": {
                "name": str(b.get("name", "")),
                "arguments": json.dumps(b.get("input", {}), ensure_ascii=False, sort_keys=True),
            },
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    message: Message = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    elif not text:
        message["content"] = ""
    return message


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:  # type: ignore[attr-defined]
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind in ("image", "document"):
            parts.append(f"[{kind}]")
    return "\n".join(parts)


# -- made conversations --------------------------------------------------------------------------


def parallel_rounds(calls: int, rounds: int) -> Case:
    """An OpenAI agent's task: ``rounds`` rounds of ``calls`` parallel calls, then its answer.

    Each result is ~330 words (~1,800 characters), under `Reduction.min_chars` (2,000) and each
    under the clip limit: the shape issue 47 found over the window (tests/conversations.py).
    """
    answer = {"role": "assistant", "content": "Every module is surveyed; the report follows."}
    messages = (*openai_rounds(calls, rounds), answer)
    return Case(f"{calls} parallel calls x {rounds} rounds", messages)


def value_chat(days: int, seed: int) -> Case:
    """A user logging runs with an assistant: a number or two in most messages."""
    return Case(f"training log {seed}", tuple(training_log(days, seed)[0]))


def rules_chat(days: int, seed: int) -> Case:
    """A user setting a spending limit in most messages: a rule with a value in each."""
    return Case(f"spending rules {seed}", tuple(spending_rules(days, seed)))


# -- chats ---------------------------------------------------------------------------------------


def chats(data: Path, window: int, *, streams_per_set: int) -> list[tuple[str, Case]]:
    """Streams of every chat set present, ``(set, stream)``, each of ~`STREAM_FACTOR` windows."""
    found: list[tuple[str, Case]] = []
    for name in present(data, CHAT_SETS, some=False):
        conversations = [Case(c.name, c.messages) for c in shared_data.chats(data, name)]
        joined = streams(conversations, STREAM_FACTOR * window, streams_per_set)
        found += [(name, stream) for stream in joined]
    return found


def streams(conversations: Sequence[Case], tokens: int, limit: int) -> Iterator[Case]:
    """Consecutive conversations joined until each stream holds ``tokens`` (estimated)."""
    counter = HeuristicCounter()
    messages: list[Message] = []
    names: list[str] = []
    size = made = 0
    for conversation in conversations:
        messages.extend(conversation.messages)
        names.append(conversation.name)
        size += sum(counter.count_message(m) for m in conversation.messages)
        if size >= tokens:
            yield Case(f"{names[0]}..{names[-1]}", tuple(messages))
            made += 1
            if made == limit:
                return
            messages, names, size = [], [], 0


TWO_PERSON = ("msc", "memorybank", "dailydialog")
"""Chats between two people; the others are a user and a clerk (task chats)."""
