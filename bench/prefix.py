"""Requests today's models accept, over the shared data: append-only, thinking, and what it costs.

    python bench/prefix.py /work/shared/data
    python bench/prefix.py DATA --chat-sizes 2000 4000 8000 --agent-sizes 8000 32000 --streams 12

Data (read in place): the chat sets as `bench/retention.py` streams them (MSC, MemoryBank: each
stream several windows long, speakers named) and the agent sets as `bench/shared_data.py` reads them
(Claude Code, tau-bench, SWE-agent). Each conversation is replayed a message at a time through
``maybe_compact`` with the defaults (``Policy(context_window=W)``: recall on, the offline
`ExtractiveSummarizer`), each assistant message reported with the usage a provider would give
(`usage_reports`). At each request point (after a message that is not the assistant's) the
request is rendered as an agent sends it, ``render_anthropic(state, cache=True,
model="claude-sonnet-5-5")`` (``render_openai`` for OpenAI-shaped logs), and checked with the
test suite's independent fake of the provider's rules (``tests/prefix_rule.py``), not with
progsum's own helpers:

* **append-only**: unless a compaction happened since the previous request (an event that folds,
  reduces, consolidates or repairs), the previous request's ``system`` is this one's and its
  messages are a prefix of this one's, cache breakpoints aside (a string content is its one text
  block). ``not append-only`` counts the requests where that fails (goal 0);
* **the prefix check**: each assistant message is taken as the model's answer to the request
  before it, its thinking re-signed by the fake for that request (`prefix_rule.resign`); every
  request's thinking blocks are checked as a model with preserved thinking checks them. ``sent``
  counts blocks sent back, ``refused`` those that would fail (goal 0), ``left out / fold`` the
  blocks progsum left out per compaction;
* **cost**: tokens per request (the fake's estimate of the rendered request), compactions per
  1,000 messages, the input cost per request in uncached-token equivalents (cache reads at 0.1
  and writes at 1.25 of the input price), and the share of each request's input read from the
  prompt cache, simulated
  by Anthropic's rules (prefixes written at each ``cache_control`` breakpoint of longer than
  `CACHE_MINIMUM` tokens; a request reads the longest written prefix ending at one of its
  breakpoints or up to 20 blocks before one) and, for OpenAI-shaped logs, by OpenAI's (the
  longest common prefix with an earlier request, from 1,024 tokens, in steps of 128).

The same script runs against an older checkout (its ``render_anthropic`` without ``model``
renders thinking whole), which is how the before-and-after figures in docs/thinking-rules.md were
measured side by side. Deterministic; the run time goes to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' provider fakes

import retention
from shared_data import agent_conversations
from usage_reports import estimated, reported

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.messages._formats import to_record
from progsum.policy._tokens import HeuristicCounter
from progsum.summarizers import ExtractiveSummarizer
from tests import prefix_rule

MODEL = "claude-sonnet-5-5"
CACHE_MINIMUM = 1_024
"""Fewest tokens of a prefix Anthropic caches on the Sonnet family (prompt caching page)."""
LOOKBACK = 20
"""Block boundaries before a breakpoint at which Anthropic looks for an earlier cache entry."""
OPENAI_MINIMUM, OPENAI_STEP = 1_024, 128
READ_PRICE, WRITE_PRICE = 0.1, 1.25
"""Cache reads and 5-minute cache writes, as multiples of the input price (Anthropic's pricing
page for every current model; OpenAI's cached input is billed at its own discount, no write)."""
VIEW_CHANGES = ("compacted", "reduced", "consolidated", "repaired")
_COUNTER = HeuristicCounter()
_WITH_MODEL = "model" in inspect.signature(render_anthropic).parameters


@dataclass
class Tally:
    """One set at one window."""

    conversations: int = 0
    messages: int = 0
    requests: int = 0
    not_append_only: int = 0
    sent: int = 0
    refused: int = 0
    left_out: int = 0
    compactions: int = 0
    tokens: int = 0
    cache_read: int = 0
    cost: float = 0.0
    """Input cost in uncached-token equivalents (`cost`)."""
    example: str = ""

    def row(self, name: str, size: int) -> str:
        """The table row."""
        per_request = self.tokens / max(1, self.requests)
        per_thousand = 1_000 * self.compactions / max(1, self.messages)
        share = self.cache_read / max(1, self.tokens)
        folds = self.left_out / max(1, self.compactions)
        cost = self.cost / max(1, self.requests)
        return (
            f"| {name} | {size:,} | {self.conversations} | {self.requests:,} | "
            f"{self.not_append_only} | {self.sent:,} | {self.refused:,} | {folds:.1f} | "
            f"{per_request:,.0f} | {per_thousand:.1f} | {share:.1%} | {cost:,.0f} |"
        )


@dataclass
class Cache:
    """The prefixes a conversation's requests wrote to the simulated prompt cache."""

    written: set[str] = field(default_factory=set)


_plain, _blocks = prefix_rule.plain, prefix_rule.blocks


def _units(body: dict[str, Any]) -> list[tuple[object, bool]]:
    """The request's blocks in cache order, each with whether it carries a breakpoint."""
    units: list[tuple[object, bool]] = [
        (b, isinstance(b, dict) and "cache_control" in b) for b in _blocks(body.get("system"))
    ]
    units.extend(  # a string content is its one text block
        ((m, message.get("role"), _plain(b)), "cache_control" in b)
        for m, message in enumerate(body["messages"])
        for b in _blocks(message.get("content"))
    )
    return units


def cost(total: int, read: int, written: int) -> float:
    """A request's input cost in uncached-token equivalents."""
    return total - read - written + READ_PRICE * read + WRITE_PRICE * written


def anthropic_cache_read(body: dict[str, Any], cache: Cache) -> tuple[int, int]:
    """Tokens this request reads from and writes to the cache (``cache`` learns its writes).

    A write bills the prefix between the longest read and the last breakpoint.
    """
    units = _units(body)
    digests: list[str] = []
    tokens = [0]
    running = hashlib.sha256()
    for unit, _ in units:
        text = json.dumps(_plain(unit), sort_keys=True, ensure_ascii=False)
        running.update(text.encode())
        digests.append(running.copy().hexdigest())
        tokens.append(tokens[-1] + _COUNTER.count_text(text))
    marks = [i for i, (_, marked) in enumerate(units) if marked]
    read = 0
    for mark in marks:
        for end in range(mark, max(-1, mark - LOOKBACK), -1):
            if digests[end] in cache.written:
                read = max(read, tokens[end + 1])
                break
    written = 0
    for mark in marks:
        if tokens[mark + 1] >= CACHE_MINIMUM:
            cache.written.add(digests[mark])
            written = max(written, tokens[mark + 1] - read)
    return read, written


def openai_cache_read(messages: list[Any], cache: Cache) -> int:
    """OpenAI's automatic caching: the longest prefix an earlier request sent, in 128s."""
    running = hashlib.sha256()
    read = total = 0
    for message in messages:
        text = json.dumps(message, sort_keys=True, ensure_ascii=False)
        running.update(text.encode())
        total += _COUNTER.count_text(text)
        digest = running.hexdigest()
        if digest in cache.written and total >= OPENAI_MINIMUM:
            read = total - total % OPENAI_STEP
        cache.written.add(digest)
    return read


def _render(state: ConversationState[Any], system: str | None, fmt: str | None) -> dict[str, Any]:
    """The request an agent sends for ``state`` to a provider of ``fmt``, as JSON."""
    if fmt == "openai":
        return {"messages": to_record(render_openai(state, system=system))}
    extra: dict[str, Any] = {"model": MODEL} if _WITH_MODEL else {}
    blocks, messages = render_anthropic(state, system=system, cache=True, **extra)
    return {"system": to_record(blocks), "messages": to_record(messages)}


def _thinking(messages: Sequence[Any]) -> int:
    return sum(
        1
        for m in messages
        for b in _blocks(to_record(m).get("content"))
        if isinstance(b, dict) and b.get("type") in prefix_rule.THINKING
    )


def replay(  # noqa: PLR0917 - one conversation's parts, then where to count
    name: str,
    messages: Sequence[Any],
    authors: Sequence[Any] | None,
    system: str | None,
    size: int,
    tally: Tally,
) -> None:
    """One conversation at one window, every request checked."""
    compactor = Compactor(policy=Policy(context_window=size), summarizer=ExtractiveSummarizer())
    measure = estimated(compactor)
    state: ConversationState[Any] = ConversationState(thread_id="bench")
    cache = Cache()
    fmt = ConversationState(list(messages)).format  # the agent knows its provider from the start
    previous: tuple[dict[str, Any], ConversationState[Any]] | None = None
    tally.conversations += 1
    tally.messages += len(messages)
    for at, logged in enumerate(messages):
        message, author = logged, authors[at] if authors else None
        if previous is not None and fmt != "openai" and _is_assistant(message):
            message, _ = prefix_rule.resign(previous[0], to_record(message))
        before = reported(state, message, author=author, measure=measure)
        state = compactor.maybe_compact(before)
        new = state.events[len(before.events) :]
        tally.compactions += sum(e.outcome == "compacted" for e in new)
        if state.infos[-1].role == "assistant":
            continue
        body = _render(state, system, fmt)
        total = _COUNTER.count_text(json.dumps(body, ensure_ascii=False))
        tally.requests += 1
        tally.tokens += total
        if fmt == "openai":
            read, written = openai_cache_read(body["messages"], cache), 0
        else:
            read, written = anthropic_cache_read(body, cache)
        tally.cache_read += read
        tally.cost += cost(total, read, min(written, total - read))
        if fmt != "openai":
            check = prefix_rule.check(body)
            tally.sent += check.sent
            tally.refused += len(check.invalid)
            tally.left_out += _thinking(state.view.messages) - check.sent
            if check.invalid and not tally.example:
                tally.example = f"{name} message {len(state)}: {len(check.invalid)} refused"
        if previous is not None and not _grew(previous, body, state):
            tally.not_append_only += 1
            if not tally.example:
                tally.example = f"{name} message {len(state)}: not append-only"
        previous = (body, state)


def _is_assistant(message: Any) -> bool:  # noqa: ANN401 - a logged message
    return bool(to_record(message).get("role") == "assistant")


def _grew(
    previous: tuple[dict[str, Any], ConversationState[Any]],
    body: dict[str, Any],
    state: ConversationState[Any],
) -> bool:
    """Whether ``body`` only appends to the previous request (or a compaction came between)."""
    old_body, old_state = previous
    if any(e.outcome in VIEW_CHANGES for e in state.events[len(old_state.events) :]):
        return True
    old, new = prefix_rule.compared(old_body), prefix_rule.compared(body)
    grown: bool = new["messages"][: len(old["messages"])] == old["messages"]
    return grown and new["system"] == old["system"] and new["tools"] == old["tools"]


def chat_sets(data: Path, sizes: Sequence[int], count: int) -> Iterator[tuple[str, int, Any]]:
    """``(set, window, stream)`` for the chat sets, as bench/retention.py streams them."""
    for name, loader in (("MSC", retention.msc), ("MemoryBank", retention.memorybank)):
        conversations = loader(data)
        for size in sizes:
            for stream in retention.streams(conversations, size * retention.STREAM_FACTOR, count):
                yield name, size, stream


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--chat-sizes", type=int, nargs="+", default=[2_000, 4_000, 8_000])
    parser.add_argument("--agent-sizes", type=int, nargs="+", default=[8_000, 32_000])
    parser.add_argument("--streams", type=int, default=12, help="streams per chat set and size")
    parser.add_argument(
        "--agent-data", type=Path, help="where the agent sets are (default: the data folder)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    tallies: dict[tuple[str, int], Tally] = {}
    for name, size, stream in chat_sets(args.data, args.chat_sizes, args.streams):
        tally = tallies.setdefault((name, size), Tally())
        replay(stream.name, stream.messages, None, None, size, tally)
    agents = list(agent_conversations(args.agent_data or args.data))
    for size in args.agent_sizes:
        for corpus, conversation in agents:
            tally = tallies.setdefault((corpus, size), Tally())
            replay(
                conversation.name,
                conversation.messages,
                conversation.authors,
                conversation.system,
                size,
                tally,
            )
    print(
        "| set | window | conversations | requests | not append-only | thinking sent | refused "
        "| left out / fold | tokens / request | compactions / 1k messages | cache read "
        "| input cost / request |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, size), tally in tallies.items():
        print(tally.row(name, size))
    for (name, size), tally in tallies.items():
        if tally.example:
            print(f"first failure, {name} at {size:,}: {tally.example}")
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
