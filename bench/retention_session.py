"""What the recall block's size costs a whole session: folds, tokens per request and CPU.

    python bench/retention_session.py                          # 2,000 turns, default and off
    python bench/retention_session.py --turns 20000 --budget default --budget off --budget 200

The trip-planning session of `bench_engine` (every person's message a question about an
earlier quote; a 6,000-token trigger in a 200,000-token window, 8 messages kept), through
``append`` and ``maybe_compact`` for each recall budget named (``default``, ``off``, a number
of tokens, or ``span=F``: F of a fold's span, trigger less target), beside LangChain's
``SummarizationMiddleware`` at the same trigger (`costs_history.lc_session_cpu`). Each side
runs in a fresh process, the sides interleaved; CPU seconds are its median over ``--sessions``
runs. The counted run (folds, blocks, tokens per request: the context's counted tokens after
each person's message, what an agent sends; the context a fold leaves, its block included) is a
second, untimed pass over the same session.
The cost model these rows check is bench/recall_room.md's.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import session_message
from bench_langchain import load_langchain
from costs_history import _warm, cold_session
from costs_turns import session_compactor

from progsum import Compactor, ConversationState


def compactor(budget: str) -> Compactor[Any]:
    """The session's compactor with recall budget ``budget`` (see the module docstring)."""
    made = session_compactor(recall=budget != "off")
    if budget in {"default", "off"}:
        return made
    policy = made.policy
    if budget.startswith("span="):
        span = policy.trigger_limit - policy.target_limit
        tokens = max(1, int(span * float(budget.removeprefix("span="))))
    else:
        tokens = int(budget)
    policy = dataclasses.replace(policy, recall_budget=("tokens", tokens))
    return Compactor(policy=policy, summarizer=made.summarizer)


def counted(budget: str, messages: int) -> dict[str, float]:
    """Folds, blocks, mean block and mean tokens per request of the session under ``budget``."""
    engine = compactor(budget)
    state: ConversationState[Any] = ConversationState(thread_id="session")
    folds = 0
    after: list[int] = []
    blocks: list[int] = []
    requests: list[int] = []
    last = None
    for n in range(messages):
        grown = engine.maybe_compact(state.append(session_message(n)))
        if grown.cutoff != state.cutoff:
            folds += 1
            after.append(engine.count(grown)[0])
        recall = grown.recall
        if recall is not None and recall is not last and recall.excerpts:
            blocks.append(engine.counter.count_text(grown.recall_block))
        last = recall
        if n % 2 == 0:
            requests.append(engine.count(grown)[0])
        state = grown
    return {
        "folds": folds,
        "blocks": len(blocks),
        "block": statistics.mean(blocks) if blocks else 0.0,
        "request": statistics.mean(requests),
        "after": statistics.mean(after) if after else 0.0,
    }


def _cpu(side: str, turns: int) -> float:
    """CPU seconds of the whole session under recall budget ``side``, warmed first."""
    _warm()
    engine = compactor(side)
    state: ConversationState[Any] = ConversationState(thread_id="session")
    start = time.process_time()
    for n in range(2 * turns):
        state = engine.maybe_compact(state.append(session_message(n)))
    return time.process_time() - start


def cold(side: str, turns: int) -> float:
    """`_cpu` (or LangChain's, `costs_history.cold_session`) in a fresh process."""
    if side == "LangChain":
        return cold_session(side, turns)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return float(pool.apply(_cpu, (side, turns)))


def main(argv: Sequence[str] | None = None) -> None:
    """Print one row per budget: folds, blocks, tokens per request, CPU beside LangChain's."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--turns", type=int, default=2_000)
    parser.add_argument("--sessions", type=int, default=1, help="timed runs per side")
    parser.add_argument("--budget", action="append", default=None)
    parser.add_argument("--no-cpu", action="store_true", help="the counted rows only")
    args = parser.parse_args(argv)
    budgets = args.budget or ["default", "off"]
    lc = None if args.no_cpu else load_langchain()
    runs: dict[str, list[float]] = {side: [] for side in ["LangChain", *budgets]}
    if lc is not None:
        for _ in range(args.sessions):
            for side, times in runs.items():
                times.append(cold(side, args.turns))
    theirs = statistics.median(runs["LangChain"]) if lc is not None else None
    messages = 2 * args.turns
    print(
        f"| recall budget | folds | compactions per 1,000 messages | context after a fold "
        f"| blocks | mean block | tokens per request | CPU s | ÷ LangChain ({theirs or 0:.2f} s) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for budget in budgets:
        row = counted(budget, messages)
        cpu = statistics.median(runs[budget]) if theirs is not None else None
        ratio = f"{cpu / theirs:.2f}x" if cpu is not None and theirs else "-"
        print(
            f"| {budget} | {row['folds']:.0f} | {1_000 * row['folds'] / messages:.1f} "
            f"| {row['after']:,.0f} | {row['blocks']:.0f} | {row['block']:.0f} "
            f"| {row['request']:,.0f} "
            f"| {cpu or 0:.2f} | {ratio} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
