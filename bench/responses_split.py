"""Safe cuts in the OpenAI Responses item format, over real agent transcripts.

    python bench/responses_split.py ../shared/data

Every Claude Code, τ-bench and SWE-agent conversation in the data folder is rewritten as
Responses API input items (thinking blocks become ``reasoning`` items carrying their signature as
``encrypted_content``, each tool call a ``function_call``, each result a ``function_call_output``,
text a ``message``), then fed turn by turn through ``maybe_compact`` (2,000-token trigger, 4 kept
items). After every compaction the rendered input is checked against the Responses API's rules:
each output answers a call sent before it, each call sent is answered (one still awaiting its
result excepted), a call or message made with a reasoning item is sent with it, a reasoning item
is sent with the item after it, and reasoning items are the logged objects themselves.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from shared_data import agent_conversations, present

from progsum import Compactor, ConversationState, Policy
from progsum.render._responses import render_responses
from progsum.summarizers import ExtractiveSummarizer

CORPORA = {"Claude Code": "claude_code", "τ-bench": "tau_bench", "SWE-agent": "swe_agent"}


def as_items(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic or Chat Completions messages rewritten as Responses input items."""
    items: list[dict[str, Any]] = []
    for message in messages:
        items.extend(_items(message, len(items)))
    return items


def _items(message: Mapping[str, Any], n: int) -> Iterator[dict[str, Any]]:
    role, content = message.get("role"), message.get("content")
    if role == "tool":
        yield {
            "type": "function_call_output",
            "call_id": message["tool_call_id"],
            "output": _text(content),
        }
        return
    if role in ("system", "developer"):
        yield {"type": "message", "role": "developer", "content": _text(content)}
        return
    blocks = (
        [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    )
    texts: list[str] = []
    for k, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
            continue
        if texts:
            yield _message(role, texts, n, k)
            texts = []
        if kind in ("thinking", "redacted_thinking"):
            secret = block.get("signature") or block.get("data") or "x"
            yield {
                "type": "reasoning",
                "id": f"rs_{n}_{k}",
                "summary": [],
                "encrypted_content": secret,
            }
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input", {}))
            yield {
                "type": "function_call",
                "call_id": block["id"],
                "name": block["name"],
                "arguments": arguments,
            }
        elif kind == "tool_result":
            yield {
                "type": "function_call_output",
                "call_id": block["tool_use_id"],
                "output": _text(block.get("content")),
            }
    if texts:
        yield _message(role, texts, n, len(blocks))
    for call in message.get("tool_calls") or ():
        function = call["function"]
        yield {
            "type": "function_call",
            "call_id": call["id"],
            "name": function["name"],
            "arguments": function["arguments"],
        }


def _message(role: object, texts: list[str], n: int, k: int) -> dict[str, Any]:
    if role == "assistant":
        part = {"type": "output_text", "text": "\n".join(texts)}
        return {"type": "message", "role": "assistant", "id": f"msg_{n}_{k}", "content": [part]}
    return {"role": "user", "content": "\n".join(texts)}


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return json.dumps(content)


def violations(sent: Sequence[Mapping[str, Any]], log: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Responses API rules ``sent`` breaks, given the whole ``log``."""
    found: list[str] = []
    ids = {id(item) for item in sent}
    open_calls: set[str] = set()
    answered: set[str] = set()
    for item in sent:
        if item.get("type") == "function_call":
            open_calls.add(item["call_id"])
        elif item.get("type") == "function_call_output":
            if item["call_id"] not in open_calls:
                found.append(f"output {item['call_id']} without its call")
            answered.add(item["call_id"])
    found += [f"call {c} unanswered" for c in open_calls - answered - _waiting(sent, log)]
    for index, item in enumerate(log):
        if id(item) not in ids:
            continue
        if (
            item.get("type") == "reasoning"
            and index + 1 < len(log)
            and id(log[index + 1]) not in ids
        ):
            found.append(f"reasoning {item['id']} without the item after it")
        if item.get("type") == "function_call" or item.get("role") == "assistant":
            back = index - 1
            while back >= 0 and log[back].get("type") == "function_call":
                back -= 1
            if back >= 0 and log[back].get("type") == "reasoning" and id(log[back]) not in ids:
                found.append(f"item {index} without its reasoning")
    return found


def _waiting(sent: Sequence[Mapping[str, Any]], log: Sequence[Mapping[str, Any]]) -> set[str]:
    """Ids of the sent calls still awaiting their result: no output follows them in ``log``.

    By position, not by id alone: real logs reuse call ids.
    """
    last_output: dict[str, int] = {}
    at: dict[int, int] = {}
    for k, item in enumerate(log):
        at[id(item)] = k
        if item.get("type") == "function_call_output":
            last_output[item["call_id"]] = k
    return {
        item["call_id"]
        for item in sent
        if item.get("type") == "function_call"
        and last_output.get(item["call_id"], -1) < at.get(id(item), -1)
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Replay every conversation as Responses items; one row per corpus."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    args = parser.parse_args(argv)
    compactor = Compactor(
        policy=Policy(trigger=("tokens", 2_000), keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
    )
    print("| corpus | conversations | items | reasoning items | compactions | rule violations |")
    print("|---|---:|---:|---:|---:|---:|")
    sets = present(args.data, CORPORA.values())
    for name, folder in ((n, f) for n, f in CORPORA.items() if f in sets):
        conversations = items_total = reasoning = compactions = broken = 0
        for _, conversation in agent_conversations(args.data, [folder]):
            log = as_items(conversation.messages)
            conversations += 1
            items_total += len(log)
            reasoning += sum(i.get("type") == "reasoning" for i in log)
            state: ConversationState[Any] = ConversationState(log[:1])
            for item in log[1:]:
                before = len(state.events)
                state = compactor.maybe_compact(state.append(item))
                if any(e.outcome == "compacted" for e in state.events[before:]):
                    compactions += 1
                    bad = violations(render_responses(state)[1:], list(state.log))
                    broken += len(bad)
        row = f"{conversations} | {items_total:,} | {reasoning:,} | {compactions} | {broken}"
        print(f"| {name} | {row} |")


if __name__ == "__main__":
    main()
