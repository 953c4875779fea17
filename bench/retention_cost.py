"""What a chat keeps and what it costs, per recall budget: retention beside a user's bill.

    python bench/retention_cost.py /work/shared/data
    python bench/retention_cost.py DATA --budgets 0.1 0.2 0.3 --sizes 4000 8000 --streams 12

The recall block of a person's message stays in every request until the next fold (append-only
rendering, docs/architecture.md), so a bigger block answers more now and brings the next
compaction closer: each one a summarizer call and a break of the prompt cache. For each recall
budget (`Policy.recall_budget`, a fraction of the input window) this runs the chat rows of
`bench/retention.py` (the same streams, the same replay, the same questions) and prices every
request of the replay as a user would pay for it:

* **the agent's input**: each request (after a message that is not the assistant's) rendered
  as an agent sends it (``render_anthropic(state, cache=True)``), its prompt-cache reads and
  writes simulated by Anthropic's rules (`prefix.anthropic_cache_read`) and billed at
  `AGENT`'s list prices (reads 0.1, writes 1.25 of the input price); the reply is not
  billed (it does not depend on the policy);
* **the summarizer**: each fold's request as the model summarizer would send it (its system
  prompt, the user prompt with the prior summary and the segment:
  `progsum.summarizers.prompt._text`), billed at `SUMMARIZER`'s input price, and its output
  as the update the offline summarizer proposed (the notes a model would write), at its output
  price. Consolidation calls are not billed (the offline summarizer proposes none; with a
  model each is about one header of input).

Prices are the list prices of `progsum.policy._windows.MODELS` (US dollars per million tokens);
tokens are the bench's estimates. The columns: retention with recall and its ratio to plain BM25
filling the whole window, header only and its ratio to full-window truncation, tokens per request,
compactions per 1,000 messages, the share of input read from the cache, and dollars per 1,000
requests (agent input, summarizer, total). Deterministic; the run time goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import prefix
import retention

from progsum import ConversationState
from progsum.policy._tokens import HeuristicCounter
from progsum.policy._windows import MODELS, Price
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summarizers.prompt._text import system_prompt, user_prompt
from progsum.summary._request import SummaryRequest
from progsum.summary._update import SummaryUpdate

AGENT = "claude-sonnet-5-5"
"""The model the agent calls (its requests are the ones rendered)."""
SUMMARIZER = "claude-haiku-5-5"
"""The model that folds (the default summary model)."""
BUDGETS = (0.1, 0.2, 0.3)
"""Recall budgets measured by default, as fractions of the input window."""
_COUNTER = HeuristicCounter()


def price(model: str) -> Price:
    """The list price of ``model`` (dollars per million tokens)."""
    found = MODELS[model].price
    if found is None:
        raise SystemExit(f"{model} has no list price in progsum.policy._windows")
    return found


class Billed:
    """`ExtractiveSummarizer`, counting the tokens a model summarizer would read and write."""

    def __init__(self) -> None:
        self._inner = ExtractiveSummarizer()
        self.calls = 0
        self.read = 0
        self.written = 0

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """The offline update; its request and output counted as a model call's."""
        update = self._inner.summarize(request)
        self.calls += 1
        prompt = system_prompt() + user_prompt(request, clip_chars=None)
        self.read += _COUNTER.count_text(prompt)
        proposed = {
            "add": {k: [getattr(e, "text", e) for e in v] for k, v in update.add.items()},
            "retire": [r.id for r in update.retire],
        }
        self.written += _COUNTER.count_text(json.dumps(proposed, ensure_ascii=False))
        return update


@dataclass
class Bill:
    """The agent's requests of one set at one window, as the cache simulation prices them."""

    requests: int = 0
    tokens: int = 0
    read: int = 0
    cost: float = 0.0
    """Dollars of the agent's input."""
    _cache: prefix.Cache = field(default_factory=prefix.Cache)
    _length: int = 0

    def __call__(self, state: ConversationState[Any]) -> None:
        """Price the request ``state`` sends (a shorter log than the last: a new stream)."""
        if len(state) < self._length:
            self._cache = prefix.Cache()
        self._length = len(state)
        body = prefix._render(state, None, None)  # noqa: SLF001 - the bench's own request
        total = _COUNTER.count_text(json.dumps(body, ensure_ascii=False))
        read, written = prefix.anthropic_cache_read(body, self._cache)
        written = min(written, total - read)
        agent = price(AGENT)
        self.requests += 1
        self.tokens += total
        self.read += read
        self.cost += (
            (total - read - written) * agent.input
            + read * agent.cache_read
            + written * agent.cache_write
        ) / 1e6


def row(  # noqa: PLR0917 - one row's figures, in its columns' order
    name: str, size: int, budget: float, s: retention.Score, bill: Bill, fold: Billed
) -> str:
    """One Markdown row."""
    summarizer = price(SUMMARIZER)
    folds = (fold.read * summarizer.input + fold.written * summarizer.output) / 1e6
    per = 1_000 / max(bill.requests, 1)
    probes = max(s.probes, 1)
    return (
        f"| {name} | {size:,} | {budget:.2f} | {s.recall / probes:.1%} | "
        f"{retention.ratio(s.recall, s.bm25):.2f}x | {s.progsum / probes:.1%} | "
        f"{retention.ratio(s.progsum, s.full):.2f}x | {bill.tokens / max(bill.requests, 1):,.0f} | "
        f"{s.per_1000:.1f} | {bill.read / max(bill.tokens, 1):.1%} | {bill.cost * per:.3f} | "
        f"{folds * per:.3f} | {(bill.cost + folds) * per:.3f} |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--budgets", type=float, nargs="+", default=list(BUDGETS))
    parser.add_argument("--sizes", type=int, nargs="+", default=list(retention.SIZES))
    parser.add_argument("--streams", type=int, default=retention.DEFAULT_STREAMS)
    parser.add_argument("--sets", nargs="+", default=["msc", "memorybank"])
    parser.add_argument(
        "--plain-roles", action="store_true", help="no speaker names (`retention.plain`)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print(
        "| set | window | recall budget | with recall | ratio to BM25, whole window "
        "| header only | ratio to full-window truncation | tokens per request "
        "| compactions per 1,000 messages | cache read | agent input, $ per 1,000 requests "
        "| summarizer | total |"
    )
    print("|---|" + "---:|" * 12)
    for name in args.sets:
        conversations = getattr(retention, name)(args.data)
        label = {"msc": "MSC", "memorybank": "MemoryBank"}.get(name, name)
        if args.plain_roles:
            conversations = retention.plain(conversations)
            label += ", plain roles"
        for size in args.sizes:
            for budget in args.budgets:
                bill, fold = Bill(), Billed()
                s = retention.score(
                    conversations,
                    size,
                    args.streams,
                    recall=budget,
                    summarizer=fold,
                    each_request=bill,
                )
                print(row(label, size, budget, s, bill, fold), flush=True)
    print(f"ran in {time.perf_counter() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
