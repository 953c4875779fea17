"""Where the CPU time of the whole session with recall off goes, stage by stage.

The session of `costs_history.session` (the trip-planning session of `bench_engine`, folded at
6,000 tokens keeping 8, recall off), with each stage's function wrapped in a clock of the
process's CPU time. Nested stages are counted in their parents too (the judge's extractive pass
inside the plan, the contract inside the fold); ``the rest`` is the session's time outside the
top-level stages (appends and quiet turns, the drivers, events).

Run: ``python bench/costs_turns_stages.py --turns 2000`` (the figures in `bench/costs_turns.md`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import costs_history

from progsum.engine import _drivers, _fold, _plan
from progsum.state import _log
from progsum.summary import _request

STAGES: tuple[tuple[Any, str, str], ...] = (
    (_drivers, "plan", "plan (with the judge's extractive pass)"),
    (_request, "extract", "  the judge's extractive pass (`progsum.judge._extract`)"),
    (_plan, "reduce", "  the reduction's plan"),
    (_drivers, "fold", "fold"),
    (_fold, "enforce", "  the binding contract (`contract._enforce`)"),
    (_fold, "merge_trail", "  the artifact trail and work ledger"),
    (_fold, "entries", "  the value ledger's entries"),
    (_fold, "merge", "  the typed merge"),
    (_fold, "keep_values", "  the values kept"),
    (_fold, "count", "  the folded state counted (its header rendered)"),
    (_log, "render_header", "header renders (plan's probe and fold)"),
    (_drivers, "_in_conversation", "the conversation's kind and policy"),
)
TOP = ("plan", "fold", "_in_conversation")


def clocked(spent: Counter[str], key: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, adding the CPU time of each call to ``spent[key]``."""

    def timed(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - any stage
        start = time.process_time_ns()
        try:
            return function(*args, **kwargs)
        finally:
            spent[key] += time.process_time_ns() - start

    return timed


def main(argv: Sequence[str] | None = None) -> None:
    """Print each stage's CPU milliseconds and share of the session."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--turns", type=int, default=2_000, help="turns (two messages each)")
    args = parser.parse_args(argv)
    costs_history._warm()  # noqa: SLF001 - what the session rows load before their clock
    spent: Counter[str] = Counter()
    originals = [(module, name, getattr(module, name)) for module, name, _ in STAGES]
    for module, name, function in originals:
        setattr(module, name, clocked(spent, name, function))
    try:
        _, total = costs_history.session(2 * args.turns, recall=False)
    finally:  # the stages as they were, for whatever runs next in this process
        for module, name, function in originals:
            setattr(module, name, function)
    print(f"a {args.turns:,}-turn session, recall off: {total * 1e3:,.0f} ms CPU")
    for _, name, label in STAGES:
        print(f"{label:<58} {spent[name] / 1e6:8.1f} ms {spent[name] / 1e9 / total:6.1%}")
    rest = total - sum(spent[name] for name in TOP) / 1e9
    print(
        f"{'the rest (appends, quiet turns, drivers, events)':<58} {rest * 1e3:8.1f} ms "
        f"{rest / total:6.1%}"
    )


if __name__ == "__main__":
    main()
