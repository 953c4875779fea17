"""This checkout's per-turn and per-compaction costs beside another checkout's, in one run.

    git worktree add /tmp/baseline 3a49d63       # e.g. the code issue 15 measured
    python bench/against.py /tmp/baseline        # rows for both, and the ratio now / baseline
    python bench/against.py /tmp/baseline --rounds 5 --turns 3000

Each checkout runs in a subprocess of its own (its ``progsum`` first on ``sys.path``), the two in
turn, ``--rounds`` times, so both see the same machine load; each row keeps the lowest minimum and
the median of the per-round medians. The workload is `bench/costs.py`'s (about 263 estimated
tokens per chat message; a tool-heavy session with 2,400-character results), using only API that
both checkouts have: ``ConversationState``, ``append(usage=)``, ``extend``, ``Compactor`` with a
``FunctionSummarizer`` and ``Policy(context_window=, trigger=, keep=)``; the offline row also
``ExtractiveSummarizer`` and ``header_budget=``, over a made-up persona chat (`_persona`) whose
header is over budget after every fold. CPU time is reported for the compaction rows beside the
wall clock: on a shared machine it varies less.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROWS = (
    ("quiet", "quiet turn, append + maybe_compact, OpenAI dicts (2,000 live)", "µs"),
    ("usage", "same with usage= (Anthropic dict)", "µs"),
    ("fold", "a 50-message compaction, fresh text (wall)", "ms"),
    ("fold_cpu", "the same, CPU time", "ms"),
    ("chat_fold", "a 50-message compaction of chat messages only (CPU)", "ms"),
    ("stall", "a due-but-impossible compaction, per turn", "µs"),
    ("offline_fold", "a 50-message chat compaction by the extractive summarizer, over (CPU)", "ms"),
)


def _worker(checkout: Path, turns: int, folds_wanted: int) -> dict[str, list[float]]:
    """Time every row with the progsum of ``checkout`` (run in a subprocess of its own)."""
    sys.path.insert(0, str(checkout))
    sys.path.insert(1, str(HERE.parent))
    from workload import chat, fresh_message, one_fact, tool_message  # noqa: PLC0415 - after the path

    from progsum import Compactor, ConversationState, Policy  # noqa: PLC0415 - after the path
    from progsum.testing import FunctionSummarizer  # noqa: PLC0415 - after the path

    found = Path(sys.modules["progsum"].__file__ or "").resolve()
    if checkout.resolve() not in found.parents:
        msg = f"imported progsum from {found}, not from {checkout}"
        raise RuntimeError(msg)

    def fake() -> Any:  # noqa: ANN401 - either checkout's summarizer type
        return FunctionSummarizer(one_fact)

    def per_turn(
        compactor: Any,  # noqa: ANN401 - either checkout's compactor
        state: Any,  # noqa: ANN401 - either checkout's state
        make: Callable[[int], dict[str, Any]],
        usage: Callable[[int], dict[str, int]] | None = None,
    ) -> list[float]:
        samples = []
        start_at = len(state)
        gc.collect()
        gc.disable()
        for n in range(turns):
            message = make(start_at + n)
            report = usage(n) if usage is not None else None
            start = time.perf_counter_ns()
            grown = state.append(message, usage=report) if report else state.append(message)
            state = compactor.maybe_compact(grown)
            samples.append((time.perf_counter_ns() - start) / 1_000)
        gc.enable()
        return samples

    roomy = Compactor(policy=Policy(context_window=100_000_000), summarizer=fake())
    live = ConversationState([chat(n) for n in range(2_000)])
    rows: dict[str, list[float]] = {
        "quiet": per_turn(roomy, live, chat),
        "usage": per_turn(
            roomy, live, chat, lambda n: {"input_tokens": 1_000 + n, "output_tokens": 263}
        ),
    }

    folding = Compactor(
        policy=Policy(context_window=200_000, trigger=("messages", 10), keep=("messages", 2)),
        summarizer=fake(),
    )

    def folds(
        make: Callable[[int], dict[str, Any]], fresh: Callable[[int, int], dict[str, Any]]
    ) -> tuple[list[float], list[float]]:
        """Wall and CPU ms of compactions that each fold 50 never-seen messages."""
        state = folding.compact(ConversationState([make(n) for n in range(200)]), force=True)
        return _timed_folds(folding, state, fresh, folds_wanted)

    def chat_message(n: int, round_: int) -> dict[str, Any]:
        """Chat message ``n`` marked by ``round_`` in letters (no value), as `fresh_message`."""
        message = chat(n)
        mark = "[" + "".join(chr(ord("a") + int(digit)) for digit in str(round_)) + "] "
        return {**message, "content": mark + message["content"]}

    rows["fold"], rows["fold_cpu"] = folds(tool_message, fresh_message)
    rows["chat_fold"] = folds(chat, chat_message)[1]
    rows["offline_fold"] = _offline_folds(folds_wanted)

    stalling = Compactor(
        policy=Policy(context_window=200_000, trigger=("messages", 20), keep=("messages", 4)),
        summarizer=fake(),
    )
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": "search", "arguments": "{}"}}
        for i in range(turns + 100)
    ]

    def result(i: int) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": f"call_{i}", "content": chat(i)["content"]}

    opened = ConversationState(
        [chat(0), {"role": "assistant", "content": None, "tool_calls": calls}]
    ).extend([result(i) for i in range(30)])
    rows["stall"] = per_turn(stalling, stalling.maybe_compact(opened), lambda n: result(n - 2))
    return rows


OFFLINE_HEADER = 2_000
"""Header budget (tokens) of the offline row: its grown header (about 9,000 counted tokens, 88
notes) is over it after every fold, so each compaction ends in a consolidation that drops about
70 notes."""


def _word(n: int, *, title: bool = False) -> str:
    """A made-up word for ``n`` (letters only: no exact value, so the ledger keeps nothing)."""
    letters = "".join("bcdfghjklmnpqrstvwz"[int(d) + 2] + "aeiou"[int(d) % 5] for d in str(n))
    return letters.title() if title else letters


def _persona(n: int, round_: int) -> dict[str, Any]:
    """Chat message ``n`` of round ``round_``: a person's facts, or a reply naming a place."""
    k = n + 1_000 * round_
    if n % 2 == 0:
        text = (
            f"I have a dog called {_word(k, title=True)}. I work in {_word(k + 1)} at "
            f"{_word(k + 2, title=True)}. My sister lives in {_word(k + 3, title=True)} and "
            f"loves {_word(k + 4)}. I don't eat {_word(k + 5)} but I like {_word(k + 6)}."
        )
        return {"role": "user", "content": text}
    text = f"That sounds lovely! I recommend visiting {_word(k, title=True)} in the spring."
    return {"role": "assistant", "content": text}


def _offline_folds(folds_wanted: int) -> list[float]:
    """CPU ms of 50-message chat compactions by the extractive summarizer, each consolidating.

    The summary is grown first without a header budget (600 messages of `_persona`, every 10 a
    compaction), then each timed compaction folds 50 more under `OFFLINE_HEADER`, so the drop
    loop runs, once per note it drops, over the header's notes.
    """
    from progsum import Compactor, ConversationState, Policy  # noqa: PLC0415 - after the path
    from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer  # noqa: PLC0415

    keep: Any = ("messages", 2)  # either checkout's Threshold type
    grow = Compactor(
        policy=Policy(
            context_window=200_000, trigger=("messages", 10), keep=keep, header_budget=None
        ),
        summarizer=ExtractiveSummarizer(),
    )
    state: Any = ConversationState()
    for n in range(600):
        state = grow.maybe_compact(state.append(_persona(n, 0)))
    tight = Compactor(
        policy=Policy(
            context_window=200_000,
            trigger=("messages", 10),
            keep=keep,
            header_budget=("tokens", OFFLINE_HEADER),
        ),
        summarizer=ExtractiveSummarizer(),
    )
    return _timed_folds(tight, state, lambda n, round_: _persona(n, 1 + round_), folds_wanted)[1]


def _timed_folds(
    compactor: Any,  # noqa: ANN401 - either checkout's compactor
    state: Any,  # noqa: ANN401 - either checkout's state
    fresh: Callable[[int, int], dict[str, Any]],
    folds_wanted: int,
) -> tuple[list[float], list[float]]:
    """Wall and CPU ms of ``compactor`` folding 50 never-seen messages onto ``state``, each time.

    Round ``r`` appends ``fresh(n, r)`` for the next 50 log indices ``n``; one round more is
    folded first, untimed, to warm up.
    """
    base = len(state)
    states = [
        state.extend([fresh(n, round_) for n in range(base, base + 50)])
        for round_ in range(folds_wanted + 1)
    ]
    compactor.compact(states.pop(), force=True)
    wall, cpu = [], []
    gc.collect()
    gc.disable()
    for each in states:
        start, start_cpu = time.perf_counter_ns(), time.process_time_ns()
        compactor.compact(each, force=True)
        wall.append((time.perf_counter_ns() - start) / 1e6)
        cpu.append((time.process_time_ns() - start_cpu) / 1e6)
    gc.enable()
    return wall, cpu


def _run(checkout: Path, turns: int, folds: int) -> dict[str, list[float]]:
    """One worker subprocess for ``checkout``; its rows as JSON."""
    command = [sys.executable, str(HERE), "--worker", str(checkout)]
    command += ["--turns", str(turns), "--folds", str(folds)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)  # noqa: S603 - this script
    rows: dict[str, list[float]] = json.loads(done.stdout)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    """Print each row for this checkout and the baseline, and their ratio."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("baseline", type=Path, nargs="?", help="the other checkout's folder")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each checkout, in turn")
    parser.add_argument("--turns", type=int, default=2_000, help="timed turns per per-turn row")
    parser.add_argument("--folds", type=int, default=20, help="timed compactions per round")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(_worker(args.worker, args.turns, args.folds)))
        return
    if args.baseline is None:
        parser.error("give the baseline checkout's folder")
    here = HERE.parents[1]
    runs: dict[str, list[dict[str, list[float]]]] = {"now": [], "baseline": []}
    for _ in range(args.rounds):
        runs["baseline"].append(_run(args.baseline, args.turns, args.folds))
        runs["now"].append(_run(here, args.turns, args.folds))

    def figure(side: str, key: str) -> tuple[float, float]:
        rounds = [run[key] for run in runs[side]]
        return min(min(r) for r in rounds), statistics.median(statistics.median(r) for r in rounds)

    print(f"{'what':62} | {'baseline (min / median)':>24} | {'now (min / median)':>20} | now/base")
    for key, label, unit in ROWS:
        base, now = figure("baseline", key), figure("now", key)
        print(
            f"{label:62} | {base[0]:9.2f} / {base[1]:9.2f} {unit} | {now[0]:7.2f} / {now[1]:7.2f}"
            f" {unit} | {now[1] / base[1]:.2f}x"
        )


if __name__ == "__main__":
    main()
