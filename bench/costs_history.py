"""Costs that must not grow with a session's history: issue 29's rows, each a ratio in one run.

    python bench/costs_history.py            # full sizes
    python bench/costs_history.py --quick    # fewer repeats, smaller sessions

Each row times the same operation on two states that differ only in what a long session
accumulates (a summary of 400 prior items against an empty one; 1,000 kept messages rendered
again against rendered for the first time), interleaved call by call so that the machine's drift
falls on both, and prints the minimum and the median of each side and the ratio of the medians.
Methodology: docs/performance.md.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import SESSION_KEEP, SESSION_TRIGGER, session_message
from bench_langchain import fake_model, lc_message, load_langchain
from costs import one_row_commit, store_save
from costs_turns import replayed, session_compactor
from costs_turns import rows as turn_rows
from workload import (
    GROWN_WINDOW,
    TEXTS,
    Timing,
    fake,
    fresh_message,
    timed,
    timing,
    tool_message,
)

from progsum import Compactor, ConversationState, Policy, SummaryRequest, SummaryUpdate
from progsum.judge._extract import extract, preceding_prose
from progsum.judge._linear import load_model
from progsum.policy._tokens import HeuristicCounter
from progsum.render._requests import render_anthropic
from progsum.store._rows import dump_state
from progsum.store._sqlite import SQLiteStore
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.testing import FunctionSummarizer

PRIOR_ITEMS = 400
"""Items of the grown summary (the issue's 402)."""
SEGMENT = 50
TURN_MEMORY = 20_000
"""The larger session of the memory rows of `costs_turns` (the issue's 2k -> 20k)."""
"""Messages each timed fold folds."""
_WORDS = (
    "amber", "basil", "cedar", "delta", "ember", "fennel", "garnet", "harbor", "indigo",
    "juniper", "kestrel", "lantern", "meadow", "nutmeg", "orchid", "pebble", "quartz",
    "russet", "saffron", "thistle", "umber", "violet", "willow", "yarrow", "zephyr",
)  # fmt: skip


def _fact(n: int) -> str:
    """The ``n``-th fact of the grown summary: words only (no exact value), unlike any other."""
    a, b, c = n % 25, n // 25 % 25, n // 625
    return f"The {_WORDS[a]} crate sits beside the {_WORDS[b]} shelf near door {_WORDS[c]}."


def _user_facts(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A summarizer that files every user sentence of the segment as a fact."""
    texts = [
        m["content"]
        for _, m in request.segment
        if m["role"] == "user" and isinstance(m["content"], str)
    ]
    return SummaryUpdate(add={"established_facts": tuple(texts)})


def _nothing(_: SummaryRequest[Any]) -> SummaryUpdate:
    return SummaryUpdate()


def _policy() -> Policy:
    """Forced folds keeping 2 messages; no header budget (the summary may grow)."""
    return Policy(
        context_window=GROWN_WINDOW,
        trigger=("messages", 10),
        keep=("messages", 2),
        header_budget=None,
        binding_budget=None,
    )


def prior_states(items: int) -> tuple[ConversationState[Any], ConversationState[Any]]:
    """Two states of the same log and one fold each: one with ``items`` prior facts, one empty."""
    log = [tool_message(0)]
    for n in range(items):
        log += [
            {"role": "user", "content": _fact(n)},
            {"role": "assistant", "content": TEXTS[n % len(TEXTS)]},
        ]
    log += [tool_message(n) for n in range(1, 4)]
    states = []
    for summarize in (_user_facts, _nothing):
        compactor = Compactor(policy=_policy(), summarizer=FunctionSummarizer(summarize))
        state = compactor.compact(ConversationState(log), force=True)
        state.estimate(HeuristicCounter())  # the log's counts, as a live session has them
        states.append(state)
    grown, empty = states
    held = len(getattr(grown.summary, "established_facts", ()))
    if held < items:
        msg = f"the grown summary holds {held} facts, not {items}"
        raise RuntimeError(msg)
    return grown, empty


_rounds = itertools.count(1)


def paired_folds(
    states: Sequence[ConversationState[Any]], make: Callable[[], Any], repeats: int
) -> list[Timing]:
    """A forced fold of `SEGMENT` never-seen messages after each state, interleaved.

    ``make`` builds the summarizer; every fold reads texts no other fold read (numbered
    rounds), so no cache keyed by a message's text helps one fold with what another read.
    Timed in the calling thread's CPU time: a fold does no I/O, and on a shared machine the
    wall clock also counts the slices other jobs take (in wall time, two runs of the same code
    measured the extractive row at 1.08x and 1.51x).
    """
    compactors = [Compactor(policy=_policy(), summarizer=make()) for _ in states]
    samples: list[list[float]] = [[] for _ in states]
    for repeat in range(repeats + 1):
        for side, (state, compactor) in enumerate(zip(states, compactors, strict=True)):
            base, round_ = len(state), next(_rounds)
            folding = state.extend(fresh_message(n, round_) for n in range(base, base + SEGMENT))
            gc.collect()
            gc.disable()
            try:
                start = time.thread_time_ns()
                compactor.compact(folding, force=True)
                elapsed = (time.thread_time_ns() - start) / 1_000
            finally:
                gc.enable()
            if repeat:  # the first round warms the code paths
                samples[side].append(elapsed)
    return [timing(s) for s in samples]


def paired_renders(state: ConversationState[Any], repeats: int) -> tuple[Timing, Timing]:
    """A state's first render, and its render again with nothing changed since, per repeat.

    Each repeat renders a copy of ``state`` loaded from its JSON (a state no render has seen),
    then renders that copy a second time.
    """
    again: list[float] = []
    first: list[float] = []
    data = state.to_dict()
    for _ in range(repeats):
        fresh = ConversationState.from_dict(data)
        fresh.estimate(HeuristicCounter())
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter_ns()
            render_anthropic(fresh)
            middle = time.perf_counter_ns()
            render_anthropic(fresh)
            end = time.perf_counter_ns()
        finally:
            gc.enable()
        first.append((middle - start) / 1_000)
        again.append((end - middle) / 1_000)
    return timing(again), timing(first)


def session(messages: int, *, recall: bool = True) -> tuple[ConversationState[Any], float]:
    """The trip-planning session up to ``messages`` messages, and its CPU seconds.

    The `bench_engine` session (a user message and a reply per turn, folded at `SESSION_TRIGGER`
    tokens keeping `SESSION_KEEP` messages) through ``append`` and ``maybe_compact``, with the
    default recall budget or none. Its fake summarizer retires superseded quotes every
    compaction, so the summary's history (its tombstones) grows with the session while its live
    items stay few.
    """
    compactor = session_compactor(recall=recall)
    state: ConversationState[Any] = ConversationState(thread_id="session")
    start = time.process_time()
    for n in range(messages):
        state = compactor.maybe_compact(state.append(session_message(n)))
    return state, time.process_time() - start


def cold_session(side: str, turns: int) -> float:
    """CPU seconds of one whole session in a fresh process: nothing remembered from another run.

    ``side`` is ``progsum``, ``progsum, recall off``, ``progsum, the judge alone``
    (`judge_cpu`) or ``LangChain``. What a process does once
    (loading the judge's weights, compiling templates, LangChain's first calls) is done before
    the clock starts, on other messages (`_warm`).
    """
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return float(pool.apply(_session_cpu, (side, turns)))


def _session_cpu(side: str, turns: int) -> float:
    if side == "LangChain":
        lc = load_langchain()
        assert lc is not None  # noqa: S101 - the parent checked
        lc_session_cpu(lc, 20, offset=10**6)
        return lc_session_cpu(lc, turns)
    _warm()
    if side == "progsum, the judge alone":
        return judge_cpu(2 * turns)
    return session(2 * turns, recall=side == "progsum")[1]


def judge_cpu(messages: int) -> float:
    """CPU seconds of the judge reading each of the session's ``messages`` once, and nothing else.

    The extractive pass every compaction runs over what it folds (`progsum.judge._extract`, with
    the prose said before each segment), over the `session` messages in `SEGMENT`-message
    segments: a floor under any session with the default judge, whatever the rest of the engine
    costs.
    """
    log = [session_message(n) for n in range(messages)]
    state: ConversationState[Any] = ConversationState(log)
    infos, authors = state.infos, state.authors
    start = time.process_time()
    for at in range(0, messages, SEGMENT):
        end = at + SEGMENT
        previous = preceding_prose(log, infos, authors, at)
        extract(log[at:end], infos[at:end], start=at, authors=authors[at:end], previous=previous)
    return time.process_time() - start


def _warm() -> None:
    """Load and compile what progsum loads once per process, on messages no session holds."""
    load_model()
    warm = ConversationState([tool_message(n) for n in range(400)], thread_id="warm")
    Compactor(policy=Policy(context_window=20_000), summarizer=fake()).maybe_compact(warm)


def lc_session_cpu(lc: Any, turns: int, *, offset: int = 0) -> float:  # noqa: ANN401 - LangChain is optional
    """CPU seconds of the same session through LangChain's SummarizationMiddleware.

    Each turn appends with the agent state's reducer (``add_messages``) and calls
    ``before_model``, applying the update when it summarizes, as the agent loop does. The
    session's messages start at ``offset`` (another session's, to warm up).
    """
    middleware = lc.middleware(
        model=fake_model(lc),
        trigger=("tokens", SESSION_TRIGGER),
        keep=("messages", SESSION_KEEP),
    )
    messages: list[Any] = []
    start = time.process_time()
    for n in range(offset, offset + 2 * turns):
        messages = lc.add_messages(messages, [lc_message(lc, session_message(n))])
        update = middleware.before_model({"messages": messages}, None)
        if update is not None:
            messages = lc.add_messages(messages, update["messages"])
    return time.process_time() - start


def memory(messages: int) -> tuple[int, int]:
    """Bytes progsum holds for the tool-heavy session of ``messages`` messages, and its raw JSON.

    The caller's messages are made before the count starts, and a first compaction loads what is
    loaded once per process (the judge's weights, the templates), so what is counted is what
    the session's state and its caches add: the log's readings, the recall index, the view.
    """
    made = [tool_message(n) for n in range(messages)]
    raw = sum(len(json.dumps(m)) for m in made)
    warm = ConversationState([tool_message(n) for n in range(400)], thread_id="warm")
    Compactor(policy=Policy(context_window=20_000), summarizer=fake()).maybe_compact(warm)
    compactor = Compactor(policy=Policy(context_window=GROWN_WINDOW), summarizer=fake())
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        state = replayed(compactor, made)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start
        del state  # alive until counted
    finally:
        tracemalloc.stop()
    return held, raw


def pg_save(state: ConversationState[Any], repeats: int, url: str) -> Timing:
    """``PostgresStore.save`` of one appended message at ``state``, in a database of its own."""
    from progsum.store._postgres import PostgresStore  # noqa: PLC0415 - the postgres extra

    with PostgresStore(url, max_size=1) as store:
        version = store.save(state, expected_version=None)
        samples: list[float] = []
        for _ in range(repeats):
            state = state.append(tool_message(len(state)))
            start = time.perf_counter_ns()
            version = store.save(state, expected_version=version)
            samples.append((time.perf_counter_ns() - start) / 1_000)
    return timing(samples)


def pg_one_row_commit(repeats: int, url: str) -> Timing:
    """The floor of a PostgreSQL save: one row inserted and committed over one connection."""
    import psycopg  # noqa: PLC0415 - the postgres extra

    row = json.dumps(tool_message(2))
    counter = itertools.count()
    with psycopg.connect(url) as db:
        db.execute("CREATE TABLE floor_rows (k bigint PRIMARY KEY, v text)")
        db.commit()

        def commit() -> None:
            db.execute("INSERT INTO floor_rows VALUES (%s, %s)", (next(counter), row))
            db.commit()

        return timed(commit, repeats)


def turn_saves(store: Any, state: ConversationState[Any], turns: int) -> tuple[Timing, Timing]:  # noqa: ANN401 - either store
    """``store.save`` after each of ``turns`` more turns of the `session`: every save, and folds'.

    Each turn appends the session's next message and runs ``maybe_compact`` (untimed), as an
    agent loop does; about one turn in 60 folds, and its summarizer retires superseded quotes,
    so those saves also write the fold's event, its tombstones and the new summary.
    """
    compactor = session_compactor()
    version = store.save(state, expected_version=None)
    every: list[float] = []
    folds: list[float] = []
    for n in range(len(state), len(state) + turns):
        events = len(state.events)
        state = compactor.maybe_compact(state.append(session_message(n)))
        gc.disable()
        try:
            start = time.perf_counter_ns()
            version = store.save(state, expected_version=version)
            elapsed = (time.perf_counter_ns() - start) / 1_000
        finally:
            gc.enable()
        every.append(elapsed)
        if len(state.events) > events and state.events[-1].outcome == "compacted":
            folds.append(elapsed)
    if not folds:
        msg = f"no fold in {turns} turns after {len(state) - turns:,} messages; give more turns"
        raise RuntimeError(msg)
    return timing(every), timing(folds)


def _turn_rows(
    store: str, messages: int, saves: tuple[Timing, Timing], floor: Timing
) -> Iterator[tuple[str, str, str, str]]:
    every, folds = saves
    for what, measured in (("every turn", every), ("folding turns", folds)):
        yield (
            f"{store}.save, {what} from {messages:,}",
            measured.show(),
            f"one-row commit: {floor.show()}",
            _ratio(measured, floor),
        )


def postgres_saves(args: argparse.Namespace) -> Iterator[tuple[str, str, str, str]]:
    """The save rows on PostgreSQL: the given database, or a throwaway durable server."""
    try:
        from fleet import fresh, postgres_target  # noqa: PLC0415 - needs the postgres extra

        from progsum.store._postgres import PostgresStore  # noqa: PLC0415 - the postgres extra

        target = postgres_target(None if args.postgres == "auto" else args.postgres, needed=True)
        with target as url:
            for messages in args.saves:
                state, _ = session(messages)
                database = fresh(url, messages)
                floor = pg_one_row_commit(args.repeats * 4, database)
                saves = pg_save(state, args.repeats * 2, database)
                yield (
                    f"PostgresStore.save per turn at {messages:,} messages",
                    saves.show(),
                    f"one-row commit: {floor.show()}",
                    _ratio(saves, floor),
                )
                with PostgresStore(fresh(url, messages), max_size=1) as store:
                    turns = turn_saves(store, state, args.turn_saves)
                yield from _turn_rows("PostgresStore", messages, turns, floor)
    except (ImportError, OSError, RuntimeError) as error:
        if args.postgres != "auto":
            raise
        yield ("PostgresStore.save per turn", f"not measured: {error}", "", "")


def _ratio(grown: Timing, base: Timing) -> str:
    return f"{grown.median / base.median:.2f}x"


def rows(args: argparse.Namespace) -> Iterator[tuple[str, str, str, str]]:
    """Yield ``(what, grown, baseline, ratio)`` rows as they are measured."""
    grown, empty = prior_states(args.items)
    folds = paired_folds((grown, empty), lambda: FunctionSummarizer(_nothing), args.repeats * 3)
    yield (
        f"a {SEGMENT}-message fold, engine only, CPU",
        f"{args.items} prior items: {folds[0].show()}",
        f"empty summary: {folds[1].show()}",
        _ratio(folds[0], folds[1]),
    )
    folds = paired_folds((grown, empty), ExtractiveSummarizer, args.repeats * 3)
    yield (
        f"a {SEGMENT}-message fold, extractive, CPU",
        f"{args.items} prior items: {folds[0].show()}",
        f"empty summary: {folds[1].show()}",
        _ratio(folds[0], folds[1]),
    )
    lc = load_langchain()
    if lc is not None:
        sides = ("LangChain", "progsum", "progsum, recall off", "progsum, the judge alone")
        runs: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(args.sessions):  # interleaved, each in a fresh process
            for side in sides:
                runs[side].append(cold_session(side, args.turns))
        theirs = statistics.median(runs["LangChain"])
        for side in sides[1:]:
            ours = statistics.median(runs[side])
            yield (
                f"a whole {args.turns:,}-turn session, CPU" + side.removeprefix("progsum"),
                f"progsum: {ours:.2f} s",
                f"LangChain {lc.version} middleware: {theirs:.2f} s",
                f"{ours / theirs:.2f}x",
            )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        floor = one_row_commit(args.repeats * 4, folder)
        for messages in args.saves:
            state, _ = session(messages)
            saves, _ = store_save(state, args.repeats * 2, folder)
            tombstones = len(state.summary.retired) if state.summary is not None else 0
            size = len(dump_state(state))
            yield (
                f"SQLiteStore.save per turn at {messages:,} messages",
                f"{saves.show()} ({tombstones} tombstones, state row {size / 1_000:,.1f} KB)",
                f"one-row commit: {floor.show()}",
                _ratio(saves, floor),
            )
            with SQLiteStore(folder / f"turns-{messages}.db") as store:
                turns = turn_saves(store, state, args.turn_saves)
            yield from _turn_rows("SQLiteStore", messages, turns, floor)
    if args.postgres != "off":
        yield from postgres_saves(args)
    held, raw = memory(args.memory)
    yield (
        f"memory beside {args.memory:,} tool-heavy messages",
        f"progsum holds {held / 1e6:,.1f} MB",
        f"their JSON: {raw / 1e6:,.1f} MB",
        f"{held / raw:.2f}x",
    )
    kept = ConversationState([tool_message(n) for n in range(args.kept)])
    again, first = paired_renders(kept, args.repeats * 4)
    yield (
        f"render_anthropic of {args.kept:,} kept messages",
        f"unchanged since the last render: {again.show()}",
        f"first render: {first.show()}",
        _ratio(again, first),
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table, one row as soon as it is measured."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller sessions")
    parser.add_argument("--items", type=int, default=PRIOR_ITEMS, help="prior summary items")
    parser.add_argument("--kept", type=int, default=1_000, help="kept messages of the render row")
    parser.add_argument("--repeats", type=int, help="timed repeats per row")
    parser.add_argument("--turns", type=int, help="turns of the whole-session row")
    parser.add_argument("--saves", type=int, nargs="+", help="log lengths of the save rows")
    parser.add_argument("--memory", type=int, help="messages of the memory row")
    parser.add_argument(
        "--turn-saves", type=int, help="turns of the save rows that fold (default 240 / 600)"
    )
    parser.add_argument(
        "--part",
        choices=("all", "turns", "history"),
        default="all",
        help="turns: the per-turn and memory rows of bench/costs_turns.py; history: the others",
    )
    parser.add_argument("--state", type=int, help="messages of the per-turn rows' grown states")
    parser.add_argument(
        "--postgres",
        default="auto",
        metavar="URL",
        help="an empty database for the PostgreSQL save rows; 'auto' (default): a throwaway "
        "server when the postgres extra and PostgreSQL's binaries are installed; 'off'",
    )
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (7 if args.quick else 31)
    args.turns = args.turns or (2_000 if args.quick else 20_000)
    args.sessions = 1 if args.quick else 3
    args.memory = args.memory or (4_000 if args.quick else 30_000)
    args.saves = args.saves or ([1_000, 4_000] if args.quick else [1_000, 10_000])
    args.turn_saves = args.turn_saves or (240 if args.quick else 600)
    print(f"{'what':<48} | {'grown (min / median)':<36} | {'baseline (min / median)':<34} | ratio")
    if args.part != "history":
        turns = argparse.Namespace(
            state=args.state or (4_000 if args.quick else 20_000),
            repeats=args.repeats,
            memory=min(args.memory, TURN_MEMORY),
        )
        for what, grown, base, ratio in turn_rows(turns):
            print(f"{what:<48} | {grown:<36} | {base:<34} | {ratio}", flush=True)
    if args.part == "turns":
        return
    for what, grown, base, ratio in rows(args):
        print(f"{what:<48} | {grown:<36} | {base:<34} | {ratio}", flush=True)


if __name__ == "__main__":
    main()
