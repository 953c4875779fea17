"""Flat costs in grown sessions: every row of issue 15's table, fresh and grown, in one run.

    python bench/costs.py                  # full sizes (a few minutes)
    python bench/costs.py --quick          # smaller sizes and repeat counts
    python bench/costs.py --data ../shared/data   # the CLI row on the largest dev transcript

A synthetic agent workload, no data needed: every chat message carries about 263 estimated tokens
(as in the anchors' workload); the tool-heavy session repeats a user request, an assistant tool
call, a 2,400-character tool result (old ones are cleared by the cheap reduction) and an
assistant answer. A *grown* state is that session run turn by turn through ``maybe_compact``
(an instant fake summarizer, a 200k window) until it has at least 50 compactions and 1,000
cleared tool results behind it.

Each row prints the minimum and the median of repeated runs, with progsum's fresh and grown
figures (and LangChain 1.5's ``SummarizationMiddleware.before_model`` where the row has one, run
in the same process, so ratios are side by side). Per-turn and render figures are wall clock
(``perf_counter``); compactions and store calls are timed the same way, garbage collection paused.
Methodology: docs/performance.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_langchain import (  # sibling scripts, found through the path above
    lc_per_compaction,
    load_langchain,
)
from shared_data import agent_files
from workload import (
    GROWN_WINDOW,
    TEXTS,
    Timing,
    chat,
    fake,
    fresh_message,
    timed,
    timing,
    tool_message,
)

from progsum import Compactor, ConversationState, Policy
from progsum.render._requests import render_anthropic, render_openai
from progsum.store._sqlite import SQLiteStore

MIN_COMPACTIONS = 50
MIN_CLEARED = 1_000


# -- workloads ---------------------------------------------------------------------------------


def quiet_turns(
    state: ConversationState[Any],
    compactor: Compactor[Any],
    make: Callable[[int], Any],
    turns: int,
    usage: Callable[[int], object] | None = None,
) -> Timing:
    """One ``append`` (with ``usage=`` when given) plus one ``maybe_compact`` that does not fire."""
    compactor.maybe_compact(state)
    samples: list[float] = []
    start_at = len(state)
    gc.collect()
    gc.disable()
    try:
        for n in range(turns):
            message = make(start_at + n)
            report = usage(n) if usage is not None else None
            start = time.perf_counter_ns()
            grown = (
                state.append(message, usage=report) if report is not None else state.append(message)
            )
            after = compactor.maybe_compact(grown)
            samples.append((time.perf_counter_ns() - start) / 1_000)
            if after is not grown and after.events[len(grown.events) :]:
                msg = "a compaction fired during a quiet-turn benchmark; enlarge the window"
                raise RuntimeError(msg)
            state = after
    finally:
        gc.enable()
    return timing(samples)


def live_state(make: Callable[[int], Any], history: int) -> ConversationState[Any]:
    """A state of ``history`` live messages, nothing compacted."""
    return ConversationState([make(n) for n in range(history)])


def quiet(
    make: Callable[[int], Any],
    history: int,
    turns: int,
    usage: Callable[[int], object] | None = None,
) -> Timing:
    """Quiet turns on ``history`` live messages in a window large enough for all of them."""
    compactor = Compactor(policy=Policy(context_window=100_000_000), summarizer=fake())
    return quiet_turns(live_state(make, history), compactor, make, turns, usage)


@dataclass
class Grown:
    """The tool-heavy session, with snapshots of its state along the way."""

    compactor: Compactor[Any]
    state: ConversationState[Any]
    snapshots: dict[int, ConversationState[Any]]
    seconds: float


def grow(length: int, snapshots: Sequence[int]) -> Grown:
    """Run the tool-heavy session turn by turn through ``maybe_compact`` up to ``length``."""
    compactor = Compactor(policy=Policy(context_window=GROWN_WINDOW), summarizer=fake())
    state: ConversationState[Any] = ConversationState(thread_id="grown")
    kept: dict[int, ConversationState[Any]] = {}
    start = time.perf_counter()
    for n in range(length):
        state = compactor.maybe_compact(state.append(tool_message(n)))
        if n + 1 in snapshots:
            kept[n + 1] = state
    return Grown(compactor, state, kept, time.perf_counter() - start)


def compaction_ms(state: ConversationState[Any], repeats: int, segment: int = 50) -> Timing:
    """One forced compaction folding ``segment`` never-seen messages after ``state``'s chain.

    The state is first compacted keeping 2 messages; each timed call then folds ``segment`` new
    messages (keeping 2) with the instant fake summarizer. Every repeat folds messages of its own
    (their texts numbered apart from every other message's), so no cache keyed by text helps
    one repeat with what an earlier one read.
    """
    compactor = Compactor(
        policy=Policy(context_window=GROWN_WINDOW, trigger=("messages", 10), keep=("messages", 2)),
        summarizer=fake(),
    )
    state = compactor.compact(state, force=True)
    base = len(state)
    states = [
        state.extend(fresh_message(n, round_) for n in range(base, base + segment))
        for round_ in range(repeats + 1)
    ]
    compactor.compact(states.pop(), force=True)  # warm the code paths
    samples: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for folding in states:
            start = time.perf_counter_ns()
            after = compactor.compact(folding, force=True)
            samples.append((time.perf_counter_ns() - start) / 1_000)
            folded = after.events[-1].folded
            if folded is None or folded[1] - folded[0] < segment:
                msg = f"unexpected fold {folded}"
                raise RuntimeError(msg)
    finally:
        gc.enable()
    return timing(samples)


def impossible_turns(turns: int) -> Timing:
    """Quiet turns on a due compaction that cannot fold: one open round of parallel tool calls.

    The assistant made thousands of calls; one result arrives per turn. A cut would separate
    calls from their results, so every turn stalls (``nothing_to_fold``) until the round ends.
    """
    compactor = Compactor(
        policy=Policy(context_window=GROWN_WINDOW, trigger=("messages", 20), keep=("messages", 4)),
        summarizer=fake(),
    )
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": "search", "arguments": "{}"}}
        for i in range(turns + 100)
    ]

    def result(i: int) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": f"call_{i}", "content": TEXTS[i % len(TEXTS)]}

    state: ConversationState[Any] = ConversationState(
        [chat(0), {"role": "assistant", "content": None, "tool_calls": calls}]
    )
    state = compactor.maybe_compact(state.extend(result(i) for i in range(30)))
    if not state.events or state.events[-1].stall != "nothing_to_fold":
        msg = f"expected a stall, got {state.events[-1:]}"
        raise RuntimeError(msg)
    samples: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for n in range(30, 30 + turns):
            message = result(n)
            start = time.perf_counter_ns()
            state = compactor.maybe_compact(state.append(message))
            samples.append((time.perf_counter_ns() - start) / 1_000)
    finally:
        gc.enable()
    if len(state.events) != 1:
        msg = "the impossible compaction recorded new events"
        raise RuntimeError(msg)
    return timing(samples)


def store_save(state: ConversationState[Any], repeats: int, folder: Path) -> tuple[Timing, Timing]:
    """``SQLiteStore.save`` of one appended message, and ``update`` appending one, at ``state``."""
    path = folder / f"save-{len(state)}.db"
    with SQLiteStore(path) as store:
        version = store.save(state, expected_version=None)
        saves: list[float] = []
        gc.collect()
        gc.disable()
        try:
            for _ in range(repeats):
                state = state.append(tool_message(len(state)))
                start = time.perf_counter_ns()
                version = store.save(state, expected_version=version)
                saves.append((time.perf_counter_ns() - start) / 1_000)
        finally:
            gc.enable()
        thread = state.thread_id or ""

        def change(current: ConversationState[Any]) -> ConversationState[Any]:
            return current.append(tool_message(len(current)))

        updates = timed(lambda: store.update(thread, change), max(3, repeats // 10))
    return timing(saves), updates


def one_row_commit(repeats: int, folder: Path) -> Timing:
    """The floor of a save: one row inserted and committed in a WAL-mode SQLite file."""
    db = sqlite3.connect(folder / "floor.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    row = json.dumps(tool_message(2))
    counter = iter(range(10**9))

    def commit() -> None:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t VALUES (?, ?)", (next(counter), row))
        db.execute("COMMIT")

    result = timed(commit, repeats)
    db.close()
    return result


def render_call(state: ConversationState[Any], repeats: int) -> Timing:
    """One render of the model view (Anthropic or OpenAI, as the state is)."""
    fmt = render_anthropic if state.format != "openai" else render_openai
    return timed(lambda: fmt(state), repeats)


def cli_seconds(path: Path, repeats: int) -> tuple[Timing, Timing]:
    """``progsum compact FILE`` offline (no API key), and importing the Anthropic SDK+Instructor.

    Run as an installed package runs: with its bytecode cached (a machine that sets
    ``PYTHONDONTWRITEBYTECODE`` recompiles every module on every start; pip writes the cache at
    install), after one untimed run that writes it.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ANTHROPIC_API_KEY", "PYTHONDONTWRITEBYTECODE")
    }
    command = [sys.executable, "-m", "progsum", "compact", str(path), "--budget", "20000", "--json"]
    imports = [sys.executable, "-c", "import anthropic, instructor"]

    def run(args: list[str]) -> None:
        subprocess.run(args, env=env, check=True, capture_output=True)  # noqa: S603 - our own command

    run(command)
    run(imports)
    return timed(lambda: run(command), repeats), timed(lambda: run(imports), repeats)


def synthetic_transcript(folder: Path, messages: int) -> Path:
    """A tool-heavy Anthropic conversation file of ``messages`` messages."""
    path = folder / "transcript.json"
    path.write_text(json.dumps([tool_message(n) for n in range(messages)]), encoding="utf-8")
    return path


def largest_transcript(data: Path) -> Path:
    """The largest Claude Code transcript of the shared data folder."""
    sessions = agent_files(data, "claude_code", sessions=True)
    return max(sessions, key=lambda p: p.stat().st_size)


# -- the table ---------------------------------------------------------------------------------


def rows(args: argparse.Namespace) -> Iterator[tuple[str, str, str, str]]:
    """Yield ``(what, fresh, grown, langchain)`` rows as they are measured."""
    quick = args.quick
    turns = args.turns or (300 if quick else 3_000)
    repeats = args.repeats or (5 if quick else 25)
    big = args.history
    lc = load_langchain()

    fresh_small = quiet(chat, 100, turns)
    fresh_big = quiet(chat, big, turns)
    yield (
        "quiet turn, append + maybe_compact, OpenAI dicts",
        f"100: {fresh_small.show()}",
        f"{big:,}: {fresh_big.show()}",
        "",
    )
    anthropic_usage = lambda n: {"input_tokens": 1_000 + n, "output_tokens": 263}  # noqa: E731
    with_usage = quiet(chat, big, turns, anthropic_usage)
    sdk = _sdk_usage()
    sdk_row = quiet(chat, big, turns, (lambda n: sdk(1_000 + n)) if sdk else anthropic_usage)
    yield (
        "same, Anthropic dicts / SDK Usage with usage=",
        f"{with_usage.show()} / {sdk_row.show()}",
        "",
        "",
    )
    grown = grow(args.grown, sorted({*args.saves, args.grown}))
    compactions = sum(1 for e in grown.state.events if e.outcome == "compacted")
    cleared = len(grown.state.cleared)
    if compactions < MIN_COMPACTIONS or cleared < MIN_CLEARED:
        print(
            f"warning: grown state has only {compactions} compactions and {cleared} cleared blocks"
        )
    print(
        f"(grown state: {len(grown.state):,} messages, {compactions} compactions, "
        f"{len(grown.state.events)} events, {cleared:,} cleared blocks, built in "
        f"{grown.seconds:.1f} s)"
    )
    early = grown.snapshots[min(grown.snapshots)]
    # the same path as the session's compactor, in a window the timed turns cannot fill
    roomy = Compactor(policy=Policy(context_window=100_000_000), summarizer=fake())
    early_turn = quiet_turns(early, roomy, tool_message, turns)
    late_turn = quiet_turns(grown.state, roomy, tool_message, turns)
    yield (
        "quiet turn, grown tool-heavy session",
        f"{len(early):,}: {early_turn.show()}",
        f"{len(grown.state):,}: {late_turn.show()} ({late_turn.median / early_turn.median:.2f}x)",
        "",
    )
    if lc is not None:
        from bench_langchain import lc_per_turn  # noqa: PLC0415 - needs LangChain

        lc_append, lc_check = lc_per_turn(lc, big, max(50, turns // 20))
        yield (
            f"ratio LangChain before_model / progsum turn at {big:,}",
            f"{lc_check / fresh_big.median:,.0f}x",
            "",
            f"before_model {lc_check:,.0f} µs, add_messages {lc_append:,.1f} µs",
        )
    fresh_fold = compaction_ms(ConversationState([tool_message(n) for n in range(200)]), repeats)
    grown_fold = compaction_ms(grown.state, repeats)
    lc_fold = f"{lc_per_compaction(lc, 50, repeats):.3f} ms" if lc is not None else ""
    yield (
        "a 50-message compaction (fake summarizer)",
        fresh_fold.show(),
        f"{grown_fold.show()} ({grown_fold.median / fresh_fold.median:.2f}x)",
        lc_fold,
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        floor = one_row_commit(repeats * 4, folder)
        saves = {n: store_save(grown.snapshots[n], repeats * 2, folder) for n in args.saves}
        yield (
            "SQLiteStore.save per turn",
            f"one-row commit: {floor.show()}",
            "; ".join(f"{n:,}: {s.show()}" for n, (s, _) in saves.items()),
            "",
        )
        longest = max(args.saves)
        yield (
            "SQLiteStore.update (append one)",
            "",
            f"{longest:,}: {saves[longest][1].show()}",
            "",
        )
        fresh_render = render_call(
            ConversationState([tool_message(n) for n in range(40)]), repeats * 20
        )
        grown_render = render_call(grown.state, repeats * 20)
        same_kept = render_call(ConversationState(list(grown.state.effective)), repeats * 20)
        yield (
            "render per call with cleared tool data",
            f"{fresh_render.show()} (40 messages)",
            (
                f"{grown_render.show()} ({grown.state.effective_length} kept; the same messages "
                f"alone: {same_kept.show()})"
            ),
            "",
        )
        source = largest_transcript(args.data) if args.data else synthetic_transcript(folder, 2_000)
        cli, imports = cli_seconds(source, min(repeats, 3 if quick else 5))
        yield (
            f"progsum compact offline ({source.name})",
            cli.show(),
            f"importing anthropic + instructor alone: {imports.show()}",
            "",
        )
    stall = impossible_turns(turns)
    yield ("a due-but-impossible compaction, per turn", stall.show(), "", "")


def _sdk_usage() -> Callable[[int], object] | None:
    """Anthropic SDK ``Usage`` objects, or None without the SDK."""
    try:
        usage = importlib.import_module("anthropic.types").Usage
    except ImportError:
        return None
    return lambda tokens: usage(input_tokens=tokens, output_tokens=263)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table, one row as soon as it is measured."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--data", type=Path, help="the shared data folder (CLI row on real data)")
    parser.add_argument("--history", type=int, help="live messages of the quiet-turn rows")
    parser.add_argument("--grown", type=int, help="messages of the grown tool-heavy session")
    parser.add_argument("--saves", type=int, nargs="+", help="log lengths of the save rows")
    parser.add_argument("--turns", type=int, help="timed turns per row (overrides --quick)")
    parser.add_argument("--repeats", type=int, help="timed repeats per row (overrides --quick)")
    args = parser.parse_args(argv)
    args.history = args.history or (2_000 if args.quick else 20_000)
    args.grown = args.grown or (25_000 if args.quick else 100_000)
    args.saves = [n for n in (args.saves or [1_000, 10_000, 50_000]) if n <= args.grown]
    print(f"{'what':<50} | {'fresh (min / median)':<28} | {'grown (min / median)':<40} | LangChain")
    for what, fresh, grown, lc in rows(args):
        print(f"{what:<50} | {fresh:<28} | {grown:<40} | {lc}", flush=True)


if __name__ == "__main__":
    main()
