"""What a user pays in tokens: progsum's defaults beside deepagents' and LangChain's, same streams.

    python bench/costs_tokens.py /work/shared/data
    python bench/costs_tokens.py DATA --windows 8000 32000 200000 --streams 4 --knob target=0.25

Data (read in place): the chat sets as `bench/retention.py` streams them (MSC, MemoryBank:
consecutive conversations joined until a stream holds `retention.STREAM_FACTOR` windows) and the
agent sets as `bench/shared_data.py` reads them (Claude Code, tau-bench, SWE-agent), joined the same
way per corpus and message format (an agent that runs task after task); a set's remainder is a
stream when it holds at least one window. A set too small for a window has no row.

**progsum** (run, not simulated): each stream replayed a message at a time through
``maybe_compact`` with ``Policy(context_window=W)`` (or a ``--knob`` on top), the offline
`ExtractiveSummarizer` counted as a model summarizer would be billed (`retention_cost.Billed`),
each assistant message with its usage report (`usage_reports`). The chat streams run through
`retention.score`, which also gives their retention.

**deepagents and LangChain** (simulated on the same token counts: neither runs here, and their
summaries are a model's free text): the same messages, the same requests (after each message that
is not the assistant's), the same counter (`HeuristicCounter`) for their triggers, and the same
renderer for what is billed (the sent messages through ``render_anthropic``, or
``render_openai`` for OpenAI-shaped logs). Their policies, read from source:

* deepagents (langchain-ai/deepagents @ 23b83ad50f63d241d0069a3dc426d43b211adf2e,
  ``libs/deepagents/deepagents/middleware/summarization.py``): ``create_deep_agent`` builds
  ``create_summarization_middleware(model, backend)`` (``graph.py``), whose
  ``compute_summarization_defaults`` gives, for a model whose profile has ``max_input_tokens``,
  ``trigger=("fraction", 0.85)``, ``keep=("fraction", 0.10)`` and argument truncation at the same
  thresholds (tool-call string arguments over 2,000 characters, in messages older than the kept
  10%, cut to 20 characters plus "...(argument truncated)", tried before summarizing), no trim of
  what the summarizer reads, the agent's own model as summarizer; ``FilesystemMiddleware`` evicts
  a tool result of 20,000 tokens (4 characters each) or more to a file, leaving a head-and-tail
  preview (``filesystem.py``, ``_message_eviction.py``); ``AnthropicPromptCachingMiddleware``
  marks the system prompt and the end of the messages for the cache (``_prompt_caching.py``).
* LangChain (langchain-ai/langchain @ d13823043d84754f9136137ab71ef5569d792102,
  ``libs/langchain_v1/langchain/agents/middleware/summarization.py``; the same in langchain 1.5.2):
  ``SummarizationMiddleware`` defaults to ``trigger=None`` (it never summarizes: the requests grow
  until the provider refuses them), ``keep=("messages", 20)``, ``trim_tokens_to_summarize=4000``.
  The row gives it deepagents' trigger (0.85 of the window) and keeps its own defaults otherwise.

Both: when the context reaches the trigger, the oldest messages outside ``keep`` (the cut moved
back so that no tool result loses its call) are replaced by one user message, "Here is a summary
of the conversation to date:" and the summary. The summary is not written here: it takes
`SUMMARY_RATIO` of the tokens the summarizer read (Claude Code's own compaction in the shared
data: 14,518 characters for the 368,660 before its boundary, 3.9%), and it holds nothing a probe
can find, so the frameworks' retention column is their verbatim tail only: a lower bound.

**Billing**: each request's body counted whole (`HeuristicCounter` over its JSON); the prompt
cache simulated by `prefix.anthropic_cache_read` (Anthropic's rules at the request's
breakpoints; progsum's own, the frameworks' on the system prompt and the last block) or
`prefix.openai_cache_read` (OpenAI-shaped logs: the longest earlier prefix, no write premium),
one cache per stream; dollars at `AGENT_PRICE` (the agent's input; the reply does not depend on
the policy and is not billed) plus each summarizer call (progsum: `SUMMARIZER_PRICE`, Claude
Haiku 5.5, the default summary model; the frameworks: the agent's model). Both are read from
progsum's own price table (`progsum.policy._windows.MODELS`, whose sources docs/models.md
names), so the bench and the library cannot disagree. US dollars per million tokens: Claude
Sonnet 5.5 input 2.00, 5-minute cache write 2.50, cache read 0.20, output 10.00
(https://platform.claude.com/docs/en/models/sonnet-5-5/overview and
https://platform.claude.com/docs/en/about-claude/pricing, as stored when last read; third-party
price trackers and genai-prices 0.2.3 report a cut of cache reads to 0.10 from 2026-10-07 that
no stored official page shows: ``--cache-read 0.1`` prices that); Claude Haiku 5.5 0.10 in /
0.50 out up to a 100,000-token prompt and 0.50 / 2.50 above.

Columns: streams, requests, tokens per request and its ratio to deepagents', compactions per
1,000 requests, the share of input tokens read from the cache, dollars per 1,000 requests (agent
input, summarizer, total) and, on the chat sets, retention: progsum's header and tail at the end
of each stream (`retention.Score.progsum`), with recall (the question asked), and the
frameworks' verbatim tail. On the agent sets, *values reused, sent*: before each of the agent's
messages, the paths and identifiers (`values`) it uses that occurred earlier in the stream, and
how many of them the request that produced it holds (`reuses`; a value in the newest messages
counts for every policy alike). Deterministic; the run time goes to stderr.

``--knob`` sets `Policy` fractions (``target=0.2,trigger=0.8``), ``first=0``
(``keep_first=False``) and ``conversation=agent``, the `Compactor`'s reading of the conversation
(an agent that calls its tools through text, such as SWE-agent's text actions, calls no tool
progsum can see and is otherwise given a chat's header budget). `bench/costs_tokens_parts.py`
breaks the same requests down by part; bench/costs_tokens.md has the method and the log.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import prefix
import retention
import retention_agents
from costs_tokens_sent import Sent, SentAnthropic
from msc_probes import Conversation
from retention_cost import Billed
from shared_data import agent_conversations
from usage_reports import estimated, reported

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.messages._formats import to_record
from progsum.messages._transcript import source_text
from progsum.policy._tokens import HeuristicCounter
from progsum.policy._windows import MODELS, Price
from progsum.replay._probes import context_text, normalize, recoverable

WINDOWS = (8_000, 32_000, 200_000)
CHATS = (("msc", "MSC"), ("memorybank", "MemoryBank"))
SETS = ("MSC", "MemoryBank", "claude_code", "tau_bench", "swe_agent")
SUMMARY_RATIO = 0.039
"""A framework's summary, as a share of the tokens its summarizer read (module docstring)."""
PREFIX_TEXT = "Here is a summary of the conversation to date:\n\n"
TRUNCATED = "...(argument truncated)"
MAX_ARG = 2_000
"""Characters of a tool-call string argument deepagents leaves whole."""
EVICT_CHARS = 80_000
"""deepagents evicts a tool result of 20,000 tokens at 4 characters per token."""
PREVIEW_LINES = 5
NOTICE_TOKENS = 150
"""About what deepagents' eviction notice around the preview adds."""
_COUNTER = HeuristicCounter()


def _price(model: str) -> Price:
    """``model``'s list price in progsum's table (a prompt below any long-prompt tier)."""
    price = MODELS[model].price
    if price is None:
        raise ValueError(f"{model} has no price in progsum.policy._windows.MODELS")
    return price


def _tiers(model: str) -> tuple[tuple[int | None, float, float], ...]:
    """``model``'s ``(prompt up to, input, output)`` tiers in progsum's table."""
    profile, base = MODELS[model], _price(model)
    if profile.long_prompt is None or profile.long_price is None:
        return ((None, base.input, base.output),)
    long = profile.long_price
    return ((profile.long_prompt, base.input, base.output), (None, long.input, long.output))


AGENT_MODEL, SUMMARIZER_MODEL = "claude-sonnet-5-5", "claude-haiku-5-5"
AGENT_PRICE = _price(AGENT_MODEL)
"""Claude Sonnet 5.5's list price (the cache read's can be set with ``--cache-read``)."""
SUMMARIZER_PRICE = _tiers(SUMMARIZER_MODEL)
"""Claude Haiku 5.5: (prompt up to, input, output)."""


@dataclass(frozen=True)
class Framework:
    """A summarization middleware's policy, as its source sets it by default."""

    name: str
    trigger: float
    """Fraction of the model's input tokens (``max_input_tokens``) that triggers a summary."""
    keep: tuple[str, float]
    """``("fraction", f)`` of the input tokens, or ``("messages", n)``."""
    trim: int | None
    """Most tokens of history the summarizer reads (None: all)."""
    prompt: int
    """Tokens of the summary prompt (``HeuristicCounter`` on the source's text)."""
    deep: bool
    """deepagents' argument truncation and tool-result eviction."""


DEEPAGENTS = Framework("deepagents", 0.85, ("fraction", 0.10), None, 768 + 130, deep=True)
LANGCHAIN = Framework("LangChain", 0.85, ("messages", 20), 4_000, 768, deep=False)


@dataclass(frozen=True)
class Stream:
    """Messages replayed as one conversation, with what each side needs."""

    name: str
    messages: tuple[dict[str, Any], ...]
    authors: tuple[Any, ...] | None
    system: str | None
    fmt: str
    chat: Conversation | None = None


@dataclass
class Bill:
    """The requests of one policy on one set at one window."""

    fmt: str = "anthropic"
    streams: int = 0
    requests: int = 0
    tokens: int = 0
    read: int = 0
    written: int = 0
    compactions: int = 0
    fold_dollars: float = 0.0
    kept: int = 0
    """Probes found in the final context (chat sets)."""
    probes: int = 0
    recall: int | None = None
    reused: int = 0
    """Values the agent's next message reuses from earlier in the stream (agent sets, `reuses`)."""
    reused_sent: int = 0
    """Of those, the ones the request holds (its JSON text)."""
    expect: frozenset[str] = frozenset()
    """The values the next request should hold (set before each request)."""
    _cache: prefix.Cache = field(default_factory=prefix.Cache)
    _sent: Sent = field(default_factory=Sent)
    _sent_anthropic: SentAnthropic = field(default_factory=SentAnthropic)
    _length: int = 0

    def start(self) -> None:
        """A new stream: an empty cache."""
        self.streams += 1
        self._cache = prefix.Cache()
        self._sent = Sent()
        self._sent_anthropic = SentAnthropic()
        self._length = 0

    def body(self, body: dict[str, Any]) -> None:
        """Price one request body."""
        text = json.dumps(body, ensure_ascii=False)
        if self.fmt == "openai":
            self._account(text, prefix.openai_cache_read(body["messages"], self._cache), 0)
        else:
            self._account(text, *prefix.anthropic_cache_read(body, self._cache))

    def messages(self, messages: Sequence[Any]) -> None:
        """Price an OpenAI-shaped request of ``messages`` (as `body` would, incrementally)."""
        self._account(*self._sent.price(messages), 0)

    def anthropic(self, system: Sequence[Any], messages: Sequence[Any]) -> None:
        """Price an Anthropic request (as `body` would, incrementally)."""
        self._account(*self._sent_anthropic.price(system, messages))

    def _account(self, text: str, read: int, written: int) -> None:
        total = _COUNTER.count_text(text)
        self.reused += len(self.expect)
        self.reused_sent += sum(value in text for value in self.expect)
        self.requests += 1
        self.tokens += total
        self.read += read
        self.written += min(written, total - read)

    def progsum_request(self, state: ConversationState[Any], system: str | None = None) -> None:
        """Price progsum's request for ``state`` (a shorter log than the last: a new stream)."""
        if len(state) < self._length:
            self.start()
        self._length = len(state)
        if self.fmt == "openai":
            self.messages(render_openai(state, system=system))
        else:  # as prefix._render: the header and the tail marked for the cache
            self.anthropic(*render_anthropic(state, system=system, cache=True, model=prefix.MODEL))

    def dollars(self, cache_read: float) -> float:
        """Dollars of the agent's input."""
        plain = self.tokens - self.read - self.written
        return (
            plain * AGENT_PRICE.input
            + self.read * cache_read
            + self.written * AGENT_PRICE.cache_write
        ) / 1e6


def summarizer_dollars(
    read: int, written: int, price: Sequence[tuple[int | None, float, float]]
) -> float:
    """One summarizer call at ``price`` (tiers by prompt size)."""
    for limit, given, out in price:
        if limit is None or read <= limit:
            return (read * given + written * out) / 1e6
    raise ValueError(price)


# -- the streams -----------------------------------------------------------------------------------


def chat_streams(data: Path, name: str, window: int, limit: int) -> Iterator[Stream]:
    """The chat set's streams, as `retention.score` builds them."""
    conversations = getattr(retention, name)(data)
    tokens = retention.STREAM_FACTOR * window
    for joined in retention.streams(conversations, tokens, limit):
        yield Stream(joined.name, joined.messages, None, None, "anthropic", joined)


def agent_streams(data: Path, window: int, limit: int) -> dict[str, list[Stream]]:
    """Each agent corpus's conversations joined per format into streams of a few windows."""
    found: dict[str, list[Stream]] = {}
    groups: dict[tuple[str, str], list[Any]] = {}
    for corpus, conversation in agent_conversations(data, some=False):
        fmt = "openai" if conversation.format == "openai" else "anthropic"
        groups.setdefault((corpus, fmt), []).append(conversation)
    for (corpus, fmt), conversations in groups.items():
        made = found.setdefault(corpus, [])
        part: list[Any] = []
        size = 0
        for conversation in conversations:
            part.append(conversation)
            size += sum(_COUNTER.count_message(m) for m in conversation.messages)
            if size >= retention.STREAM_FACTOR * window and len(made) < limit:
                made.append(_joined(part, fmt))
                part, size = [], 0
        if part and size >= window and len(made) < limit:
            made.append(_joined(part, fmt))
    return {k: v for k, v in found.items() if v}


def _joined(conversations: Sequence[Any], fmt: str) -> Stream:
    messages: list[dict[str, Any]] = []
    authors: list[Any] = []
    for c in conversations:
        messages.extend(c.messages)
        authors.extend(c.authors or (None,) * len(c.messages))
    name = f"{conversations[0].name}..{conversations[-1].name}"
    return Stream(name, tuple(messages), tuple(authors), conversations[0].system, fmt)


_ID = re.compile(r"(?<![\w/.-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{5,}(?![\w/])")
"""An identifier with a letter and a digit (a user or reservation id, a version)."""


def values(message: dict[str, Any]) -> set[str]:
    """The paths (`retention_agents`' pattern) and identifiers in ``message``'s text and tool data.

    Read from what a model sees (`source_text`), so tool-call ids are not values.
    """
    text = source_text([message])
    paths = retention_agents._PATH.findall(text)  # noqa: SLF001 - its path pattern
    return {*paths, *_ID.findall(text)}


def reuses(messages: Sequence[dict[str, Any]]) -> list[frozenset[str]]:
    """For the request after each message: the values the next message, the agent's, reuses.

    Those of the assistant's message after it that occur in the messages up to it (a value in
    the newest messages counts for every policy alike). Empty before a message of another role.
    """
    seen: set[str] = set()
    found: list[frozenset[str]] = []
    for at, message in enumerate(messages):
        seen |= values(message)
        after = messages[at + 1] if at + 1 < len(messages) else None
        reply = after is not None and after.get("role") == "assistant"
        found.append(frozenset(values(after) & seen) if reply and after else frozenset())
    return found


# -- progsum ---------------------------------------------------------------------------------------


def knob_policy(window: int, knob: dict[str, Any]) -> Policy:
    """The defaults at ``window``, with ``knob``'s `Policy` settings."""
    return Policy(context_window=window, **_settings(knob))


def _settings(knob: dict[str, Any]) -> dict[str, Any]:
    """``knob``'s `Policy` settings (``conversation`` is the `Compactor`'s)."""
    return {k: v for k, v in knob.items() if k != "conversation"}


@contextlib.contextmanager
def chat_knob(knob: dict[str, Any]) -> Iterator[None]:
    """`retention.score` with ``knob`` on its chat policy (its own budgets kept)."""
    original = retention.chat_policy

    def chat_policy(size: int, header: float | None = None, recall: float | None = None) -> Policy:
        return dataclasses.replace(original(size, header, recall), **_settings(knob))

    retention.chat_policy = chat_policy
    try:
        yield
    finally:
        retention.chat_policy = original


class Folds(Billed):
    """`Billed`, pricing each call on its own (the summary model's price depends on the prompt)."""

    def __init__(self) -> None:
        super().__init__()
        self.dollars = 0.0

    def summarize(self, request: Any) -> Any:  # noqa: ANN401 - a SummaryRequest / SummaryUpdate
        """The update, its call priced."""
        read, written = self.read, self.written
        update = super().summarize(request)
        self.dollars += summarizer_dollars(
            self.read - read, self.written - written, SUMMARIZER_PRICE
        )
        return update


def progsum_chat(
    conversations: Sequence[Conversation], window: int, limit: int, knob: dict[str, Any]
) -> Bill:
    """The requests progsum sends on a chat set's streams, and what they retain."""
    bill, fold = Bill(), Folds()
    bill.start()
    with chat_knob(knob):
        s = retention.score(
            conversations, window, limit, summarizer=fold, each_request=bill.progsum_request
        )
    bill.streams = s.streams
    bill.compactions = round(s.per_1000 * _messages(conversations, window, limit) / 1000)
    bill.fold_dollars = fold.dollars
    bill.kept, bill.probes, bill.recall = s.progsum, s.probes, s.recall
    return bill


def _messages(conversations: Sequence[Conversation], window: int, limit: int) -> int:
    tokens = retention.STREAM_FACTOR * window
    return sum(len(s.messages) for s in retention.streams(conversations, tokens, limit))


def progsum_agent(
    streams: Sequence[Stream], window: int, knob: dict[str, Any], bill: Bill | None = None
) -> Bill:
    """The requests progsum sends on an agent set's streams (priced into ``bill``, or a new one)."""
    bill = bill if bill is not None else Bill(fmt=streams[0].fmt)
    fold = Folds()
    for stream in streams:
        compactor = Compactor(
            policy=knob_policy(window, knob),
            summarizer=fold,
            conversation=knob.get("conversation"),
        )
        measure = estimated(compactor)
        state: ConversationState[Any] = ConversationState(thread_id="bench")
        bill.start()
        expected = reuses(stream.messages)
        for at, message in enumerate(stream.messages):
            author = stream.authors[at] if stream.authors else None
            before = reported(state, message, author=author, measure=measure)
            state = compactor.maybe_compact(before)
            new = state.events[len(before.events) :]
            bill.compactions += sum(e.outcome == "compacted" for e in new)
            if state.infos[-1].role != "assistant":
                bill.expect = expected[at]
                bill.progsum_request(state, stream.system)
    bill.fold_dollars = fold.dollars
    return bill


@contextlib.contextmanager
def agent_knob(knob: dict[str, Any]) -> Iterator[None]:
    """`retention_agents` replaying with ``knob`` on its policy."""
    names = vars(retention_agents)
    original = names["Policy"]

    def policy(**settings: Any) -> Policy:  # noqa: ANN401 - Policy's keyword arguments
        made: Policy = original(**{**settings, **_settings(knob)})
        return made

    names["Policy"] = policy
    try:
        yield
    finally:
        names["Policy"] = original


def agent_retention(
    data: Path, windows: Sequence[int], limit: int | None, knobs: Sequence[dict[str, Any]]
) -> Iterator[str]:
    """`retention_agents`' values and files kept, per window, with the defaults and each knob."""
    yield "| window | policy | requests' tokens | values kept | files kept |"
    yield "|---:|---|---:|---:|---:|"
    for window in windows:
        for knob in [{}, *knobs]:
            with agent_knob(knob):
                found = retention_agents.rows(data, (window,), limit)
            name = "progsum" + "".join(f", {_knob_text(k, v)}" for k, v in knob.items())
            values = sum(int(str(r["values_progsum"])) for r in found)
            files = sum(int(str(r["files_progsum"])) for r in found)
            tokens = sum(int(str(r["tokens"])) for r in found) / max(len(found), 1)
            yield (
                f"| {window:,} | {name} | {tokens:,.0f} | "
                f"{values}/{sum(int(str(r['values'])) for r in found)} | "
                f"{files}/{sum(int(str(r['files'])) for r in found)} |"
            )


# -- the frameworks, simulated ---------------------------------------------------------------------


def _is_tool_result(message: dict[str, Any]) -> bool:
    if message.get("role") == "tool":
        return True
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _clip_args(message: dict[str, Any]) -> dict[str, Any] | None:
    """``message`` with its long tool-call string arguments cut (deepagents), or None."""

    def clip(args: dict[str, Any]) -> dict[str, Any] | None:
        long = {k for k, v in args.items() if isinstance(v, str) and len(v) > MAX_ARG}
        return (
            {k: v[:20] + TRUNCATED if k in long else v for k, v in args.items()} if long else None
        )

    if message.get("role") != "assistant":
        return None
    changed = False
    record: dict[str, Any] = json.loads(json.dumps(message))
    for call in record.get("tool_calls") or ():
        try:
            args = json.loads(call["function"]["arguments"])
        except (KeyError, TypeError, ValueError):
            continue
        cut = clip(args) if isinstance(args, dict) else None
        if cut is not None:
            call["function"]["arguments"] = json.dumps(cut)
            changed = True
    content = record.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "tool_use":
            cut = clip(block.get("input") or {})
            if cut is not None:
                block["input"] = cut
                changed = True
    return record if changed else None


def _evicted(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with a tool result too large for deepagents replaced by its preview."""

    def preview(text: str) -> str:
        lines = text.splitlines()
        kept = [*lines[:PREVIEW_LINES], "...", *lines[-PREVIEW_LINES:]]
        notice = "Tool result too large, saved to a file; read it with read_file. " * 8
        return notice[: NOTICE_TOKENS * 4] + "\n".join(line[:1_000] for line in kept)

    if not _is_tool_result(message):
        return message
    record: dict[str, Any] = json.loads(json.dumps(message))
    if isinstance(record.get("content"), str):
        if len(record["content"]) >= EVICT_CHARS:
            record["content"] = preview(record["content"])
        return record
    for block in record.get("content") or ():
        inner = block.get("content") if isinstance(block, dict) else None
        if isinstance(inner, str) and len(inner) >= EVICT_CHARS:
            block["content"] = preview(inner)
    return record


def _summary(tokens: int, number: int) -> dict[str, Any]:
    """A summary message of about ``tokens`` tokens (its text stands in for a model's)."""
    unit = "summary "
    per = _COUNTER.count_text(unit * 100) / 100
    text = f"{PREFIX_TEXT}[{number}] " + unit * max(1, round(tokens / max(per, 0.01)))
    return {"role": "user", "content": text}


def _cutoff(framework: Framework, window: int, tokens: Sequence[int]) -> int:
    """Index in ``tokens`` (the sent messages) where the kept part starts (0: keep all)."""
    kind, value = framework.keep
    if kind == "messages":
        return max(0, len(tokens) - int(value))
    target, kept, at = int(window * value), 0, len(tokens)
    while at > 0 and kept + tokens[at - 1] <= target:
        at -= 1
        kept += tokens[at]
    return at


def simulate(stream: Stream, window: int, framework: Framework, bill: Bill) -> None:
    """Replay ``stream`` through ``framework``'s policy, pricing each request into ``bill``."""
    bill.start()
    messages = [(_evicted(m) if framework.deep else m) for m in stream.messages]
    count = [_COUNTER.count_message(m) for m in messages]
    system = _COUNTER.count_text(stream.system or "")
    trigger = int(window * framework.trigger)
    start, summary, summary_tokens, number = 0, None, 0, 0
    expected = reuses(stream.messages) if stream.chat is None else None
    shown: ConversationState[Any] | None = None
    """The OpenAI-shaped request's messages as a state, grown between summaries."""
    for end in range(1, len(messages) + 1):
        if messages[end - 1].get("role") == "assistant":
            continue
        if system + summary_tokens + sum(count[start:end]) >= trigger:
            shown = None  # arguments cut or a summary: the sent messages change
            sent = [summary_tokens, *count[start:end]] if summary else count[start:end]
            kept = _cutoff(framework, window, sent)
            cut = min(end - 1, start + max(0, kept - (1 if summary else 0)))
            if framework.deep:
                for at in range(start, cut):
                    clipped = _clip_args(messages[at])
                    if clipped is not None:
                        messages[at], count[at] = clipped, _COUNTER.count_message(clipped)
            while cut > start and _is_tool_result(messages[cut]):
                cut -= 1
            over = system + summary_tokens + sum(count[start:end]) >= trigger
            if over and cut > start:
                read = summary_tokens + sum(count[start:cut])
                if framework.trim is not None:
                    read = min(read, framework.trim)
                number += 1
                summary_tokens = max(1, round(SUMMARY_RATIO * read))
                summary = _summary(summary_tokens, number)
                summary_tokens = _COUNTER.count_message(summary)
                bill.compactions += 1
                bill.fold_dollars += (
                    (framework.prompt + read) * AGENT_PRICE.input
                    + summary_tokens * AGENT_PRICE.output
                ) / 1e6
                start = cut
        sent_messages = [summary, *messages[start:end]] if summary else messages[start:end]
        bill.expect = expected[end - 1] if expected else frozenset()
        if shown is None:
            shown = ConversationState(sent_messages)
        for message in messages[start + len(shown) - (1 if summary else 0) : end]:
            shown = shown.append(message)
        if stream.fmt == "openai":
            bill.messages(render_openai(shown, system=stream.system))
        else:
            blocks, rendered = render_anthropic(shown, system=stream.system, model=prefix.MODEL)
            bill.anthropic(*_framework_marks(blocks, rendered))
    if stream.chat is not None:
        text = normalize(context_text(messages[start:]))
        bill.probes += len(stream.chat.probes)
        bill.kept += sum(recoverable(p, text) for p in stream.chat.probes if p.at >= start)


def _framework_body(messages: list[dict[str, Any]], system: str | None, fmt: str) -> dict[str, Any]:
    """The request a framework sends: the same renderer, its cache marks (system, last block)."""
    state: ConversationState[Any] = ConversationState(messages)
    if fmt == "openai":
        return {"messages": to_record(render_openai(state, system=system))}
    blocks, rendered = _framework_marks(*render_anthropic(state, system=system, model=prefix.MODEL))
    return {"system": to_record(blocks), "messages": to_record(rendered)}


def _framework_marks(blocks: Sequence[Any], messages: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """A framework's cache marks on copies: the last system block and the last message's block."""
    mark = {"type": "ephemeral"}
    marked_blocks = list(blocks)
    if marked_blocks:
        marked_blocks[-1] = {**to_record(marked_blocks[-1]), "cache_control": mark}
    last = to_record(messages[-1])
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = mark
    return marked_blocks, [*messages[:-1], last]


# -- the table -------------------------------------------------------------------------------------


def row(  # noqa: PLR0917 - one row's parts, in the columns' order
    name: str, window: int, policy: str, bill: Bill, baseline: float, cache_read: float
) -> str:
    """One Markdown row."""
    per = 1_000 / max(bill.requests, 1)
    tokens = bill.tokens / max(bill.requests, 1)
    agent = bill.dollars(cache_read) * per
    folds = bill.fold_dollars * per
    kept = f"{bill.kept / bill.probes:.1%}" if bill.probes else "-"
    recall = f"{bill.recall / bill.probes:.1%}" if bill.probes and bill.recall is not None else "-"
    reused = (
        f"{bill.reused_sent / bill.reused:.1%} ({bill.reused_sent}/{bill.reused})"
        if bill.reused
        else "-"
    )
    return (
        f"| {name} | {window:,} | {policy} | {bill.streams} | {bill.requests:,} | {tokens:,.0f} | "
        f"{tokens / baseline if baseline else 0:.2f}x | {bill.compactions * per:.1f} | "
        f"{bill.read / max(bill.tokens, 1):.1%} | {agent:.2f} | {folds:.2f} | "
        f"{agent + folds:.2f} | {kept} | {recall} | {reused} |"
    )


KNOBS = {
    "target": "target",
    "trigger": "trigger",
    "keep": "keep",
    "header": "header_budget",
    "recall": "recall_budget",
}
"""``--knob`` names and the `Policy` setting each sets, as a fraction of the input window."""


def parse_knob(text: str) -> dict[str, Any]:
    """``target=0.25,trigger=0.8``: `Policy` settings, fractions of the input window.

    ``first=0`` is ``keep_first=False``; ``conversation=agent`` (or ``chat``) is the
    `Compactor`'s ``conversation``, on the agent sets only (the chat sets are chats).
    """
    found: dict[str, Any] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        if name == "first":
            found["keep_first"] = value not in {"0", "false", "no"}
        elif name == "conversation" and value in {"agent", "chat"}:
            found["conversation"] = value
        elif name in KNOBS:
            found[KNOBS[name]] = ("fraction", float(value))
        else:
            choices = ", ".join(KNOBS)
            raise argparse.ArgumentTypeError(
                f"knob {part!r}: use NAME=F ({choices}), first=0 or conversation=agent"
            )
    return found


def _knob_text(setting: str, value: Any) -> str:  # noqa: ANN401 - a Policy setting's value
    if setting == "keep_first":
        return f"first={int(value)}"
    if setting == "conversation":
        return f"conversation={value}"
    names = {v: k for k, v in KNOBS.items()}
    return f"{names[setting]}={value[1]:g}"


HEADER = (
    "| set | window | policy | streams | requests | tokens per request | / deepagents "
    "| compactions per 1,000 requests | cache read | agent input, $ per 1,000 requests "
    "| summarizer | total | retention: final context | with recall | values reused, sent |"
)


def measure(  # noqa: PLR0917 - the run's settings
    data: Path,
    agent_data: Path,
    window: int,
    limit: int,
    knobs: Sequence[dict[str, Any]],
    cache_read: float,
    chosen: Sequence[str] = SETS,
) -> Iterator[str]:
    """The rows of one window."""
    sets: list[tuple[str, list[Stream], Sequence[Conversation] | None]] = []
    for name, label in CHATS:
        if label in chosen:
            conversations = getattr(retention, name)(data)
            sets.append((label, list(chat_streams(data, name, window, limit)), conversations))
    sets += [(k, v, None) for k, v in agent_streams(agent_data, window, limit).items()]
    for label, streams, conversations in sets:
        if not streams or label not in chosen:
            continue
        bills: list[tuple[str, Bill]] = []
        for framework in (DEEPAGENTS, LANGCHAIN):
            bill = Bill(fmt=streams[0].fmt)
            for stream in streams:
                simulate(stream, window, framework, bill)
            bills.append((f"{framework.name} (simulated)", bill))
        for knob in [{}, *knobs]:
            name = "progsum" + "".join(f", {_knob_text(k, v)}" for k, v in knob.items())
            if conversations is not None:
                bills.append((name, progsum_chat(conversations, window, limit, knob)))
            else:
                bills.append((name, progsum_agent(streams, window, knob)))
        baseline = bills[0][1].tokens / max(bills[0][1].requests, 1)
        for name, bill in bills:
            yield row(label, window, name, bill, baseline, cache_read)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--windows", type=int, nargs="+", default=list(WINDOWS))
    parser.add_argument("--streams", type=int, default=4, help="streams per set and window")
    parser.add_argument(
        "--knob", type=parse_knob, action="append", default=[], help="e.g. target=0.25"
    )
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument(
        "--cache-read",
        type=float,
        default=AGENT_PRICE.cache_read,
        help="$ per million tokens read from the cache (default: the table's, %(default)s)",
    )
    parser.add_argument(
        "--agent-data", type=Path, help="where the agent sets are (default: the data folder)"
    )
    parser.add_argument(
        "--agent-retention",
        type=int,
        metavar="LIMIT",
        help="instead: retention_agents.py's values and files kept with each knob (LIMIT "
        "tau-bench records per file)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.agent_retention is not None:
        agents = args.agent_data or args.data
        for line in agent_retention(agents, args.windows, args.agent_retention, args.knob):
            print(line, flush=True)
        return
    print(HEADER)
    print("|---|" + "---:|" * 14)
    for window in args.windows:
        agents = args.agent_data or args.data
        rows = measure(
            args.data, agents, window, args.streams, args.knob, args.cache_read, args.sets
        )
        for line in rows:
            print(line, flush=True)
    print(f"ran in {time.perf_counter() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
