"""Where a request's tokens go: `costs_tokens`' requests broken down by part, per policy.

    python bench/costs_tokens_parts.py DATA --windows 8000 --sets swe_agent --streams 4
    python bench/costs_tokens_parts.py DATA --sets swe_agent --knob target=0.2,trigger=0.8,first=0

The same streams and policies as `costs_tokens` (progsum run, deepagents and LangChain
simulated); each request's tokens (``HeuristicCounter``, each part counted on its own JSON) split
into: the caller's system prompt; progsum's summary header, the kept first message (the head,
`ConversationState.head_end`) and the pinned opening round; the frameworks' summary message; the
recall blocks in view; the tail's tool results (a ``tool`` message or ``tool_result`` block), its
other user messages (in a text-action agent such as SWE-agent's, the observations) and the
assistant's messages; and the rest (the JSON around them: roles, cache marks, separators). Each
column is the mean over the requests, so the parts add up to `costs_tokens`' tokens per request.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import costs_tokens as ct

from progsum import ConversationState
from progsum.messages._formats import to_record

PARTS = (
    "system",
    "header / summary",
    "head",
    "pinned",
    "recall",
    "tool results",
    "user",
    "assistant",
    "framing",
)
"""The columns, in order: what each request's tokens are spent on."""


def _tokens(value: Any) -> int:  # noqa: ANN401 - a message or block as JSON
    return ct._COUNTER.count_text(json.dumps(to_record(value), ensure_ascii=False))  # noqa: SLF001


def _role(message: dict[str, Any]) -> str:
    """The part a tail message belongs to."""
    if ct._is_tool_result(message):  # noqa: SLF001 - the bench's own reading
        return "tool results"
    return "assistant" if message.get("role") == "assistant" else "user"


class Parts(ct.Bill):
    """A `costs_tokens.Bill` that also sums each request's tokens by part."""

    def __init__(self, fmt: str = "anthropic") -> None:
        super().__init__(fmt=fmt)
        self.parts: Counter[str] = Counter()
        self._state: tuple[ConversationState[Any], str | None] | None = None

    def progsum_request(self, state: ConversationState[Any], system: str | None = None) -> None:
        """Price progsum's request for ``state``, its parts read off the state."""
        self._state = (state, system)
        try:
            super().progsum_request(state, system)
        finally:
            self._state = None

    def body(self, body: dict[str, Any]) -> None:
        """Price one request body and add its parts."""
        before = self.tokens
        super().body(body)
        self._add(self.tokens - before, body)

    def messages(self, messages: Sequence[Any]) -> None:
        """Price one OpenAI-shaped request and add its parts."""
        before = self.tokens
        super().messages(messages)
        self._add(self.tokens - before, {"messages": to_record(list(messages))})

    def _add(self, total: int, body: dict[str, Any]) -> None:
        state = self._state
        found = _progsum_parts(*state) if state else _framework_parts(body, self.fmt)
        found["framing"] = total - sum(found.values())
        self.parts.update(found)


def _progsum_parts(state: ConversationState[Any], system: str | None) -> Counter[str]:
    """The request progsum sends, by part, read off the state it renders."""
    found: Counter[str] = Counter()
    found["system"] = ct._COUNTER.count_text(system or "")  # noqa: SLF001
    found["header / summary"] = ct._COUNTER.count_text(state.header)  # noqa: SLF001
    recall = state.recall_tokens(ct._COUNTER) if state.recalls else 0  # noqa: SLF001
    found["recall"] = recall
    pinned = range(*state.pinned) if state.pinned else range(0)
    view = state.view
    for message, at in zip(view.messages, view.at, strict=True):
        tokens = _tokens(message)
        if state.cutoff and at < state.head_end:
            found["head"] += tokens
        elif at in pinned:
            found["pinned"] += tokens
        else:
            found[_role(to_record(message))] += tokens
    found["user"] -= recall  # the blocks open the user messages they answer
    return found


def _framework_parts(body: dict[str, Any], fmt: str) -> Counter[str]:
    """A framework's request by part (its summary is the first message, a user message)."""
    found: Counter[str] = Counter()
    messages = body["messages"]
    if fmt == "anthropic":
        found["system"] = sum(_text_tokens(b.get("text", "")) for b in body.get("system") or ())
    elif messages and messages[0].get("role") == "system":
        found["system"] = _text_tokens(messages[0]["content"])
        messages = messages[1:]
    for message in messages:
        tokens = _tokens({k: v for k, v in message.items() if k != "cache_control"})
        if _text(message).startswith(ct.PREFIX_TEXT):
            found["header / summary"] += tokens
        else:
            found[_role(message)] += tokens
    return found


def _text_tokens(text: str) -> int:
    return ct._COUNTER.count_text(text)  # noqa: SLF001


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    first = content[0] if isinstance(content, list) and content else {}
    return str(first.get("text", "")) if isinstance(first, dict) else ""


def measure(
    data: Path, windows: Sequence[int], limit: int, sets: Sequence[str], knobs: Sequence[Any]
) -> Iterator[str]:
    """One row per set, window and policy: the mean tokens per request of each part."""
    yield "| set | window | policy | requests | tokens per request | " + " | ".join(PARTS) + " |"
    yield "|---|---:|---|" + "---:|" * (len(PARTS) + 2)
    for window in windows:
        for label, streams in ct.agent_streams(data, window, limit).items():
            if label not in sets:
                continue
            bills: list[tuple[str, Parts]] = []
            for framework in (ct.DEEPAGENTS, ct.LANGCHAIN):
                bill = Parts(fmt=streams[0].fmt)
                for stream in streams:
                    ct.simulate(stream, window, framework, bill)
                bills.append((f"{framework.name} (simulated)", bill))
            for knob in [{}, *knobs]:
                name = "progsum" + "".join(
                    f", {ct._knob_text(k, v)}"  # noqa: SLF001 - the bench's own names
                    for k, v in knob.items()
                )
                bill = Parts(fmt=streams[0].fmt)
                ct.progsum_agent(streams, window, knob, bill)
                bills.append((name, bill))
            for name, bill in bills:
                n = max(bill.requests, 1)
                cells = " | ".join(f"{bill.parts[p] / n:,.0f}" for p in PARTS)
                yield (
                    f"| {label} | {window:,} | {name} | {bill.requests:,} | "
                    f"{bill.tokens / n:,.0f} | {cells} |"
                )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--windows", type=int, nargs="+", default=[8_000])
    parser.add_argument("--streams", type=int, default=4, help="streams per set and window")
    parser.add_argument("--sets", nargs="+", default=["swe_agent"], choices=ct.SETS[2:])
    parser.add_argument(
        "--knob", type=ct.parse_knob, action="append", default=[], help="e.g. target=0.25"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    for line in measure(args.data, args.windows, args.streams, args.sets, args.knob):
        print(line, flush=True)
    print(f"ran in {time.perf_counter() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
