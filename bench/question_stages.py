"""Where a question's time goes: CPU time per stage of a person's question in a grown session.

The question row of `bench/costs_turns.py` (the trip-planning session of `bench_engine` grown
turn by turn to N messages, recall on, then a question naming an earlier quote), with each stage
function wrapped by a timer of the calling thread's CPU (``time.thread_time_ns``). Stages nest:
each line includes the stages indented below it; shares are of the whole ``maybe_compact`` of
the question (the untimed reply after it is not counted). The wrappers themselves cost about a
microsecond a call, so small stages read high.

    python bench/question_stages.py --messages 20000 --questions 200
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import costs_turns

from progsum.engine import _compactor, _drivers, _recall
from progsum.recall import _index
from progsum.state import _conversation

STAGES: tuple[tuple[object, str, str], ...] = (
    (_compactor.Compactor, "maybe_compact", "the whole question (maybe_compact)"),
    (_compactor.Compactor, "_idle", "  the quiet checks (_idle)"),
    (_drivers, "_in_conversation", "  the turn's setup: kind, work lines, config"),
    (_recall, "_chosen", "  the recall chosen (_chosen, twice a turn)"),
    (_recall, "query_terms", "    the query's terms (NFKC, case folding, stop-list)"),
    (_recall, "_ranked", "    the search (_ranked)"),
    (_index.Index, "_search", "      Index._search"),
    (_recall, "_reply", "    the judge: does a recalled message ask (_reply)"),
    (_recall, "_fitted", "    the block fitted (_fitted)"),
    (_conversation.ConversationState, "recalled", "      the state copied with its block"),
    (_conversation, "block_text", "        the block rendered (block_text, Jinja)"),
)
"""``(owner, attribute, label)`` of each stage timed, in the order printed."""


@contextmanager
def timed(spent: dict[str, list[int]]) -> Iterator[None]:
    """Each of `STAGES` wrapped to add its CPU time and calls to ``spent[label]``."""
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in STAGES]
    for (owner, name, real), (_, _, label) in zip(originals, STAGES, strict=True):
        setattr(owner, name, _timer(real, spent.setdefault(label, [0, 0])))
    try:
        yield
    finally:
        for owner, name, real in originals:
            setattr(owner, name, real)


def _timer(real: Callable[..., Any], into: list[int]) -> Callable[..., Any]:
    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - any stage's signature
        start = time.thread_time_ns()
        try:
            return real(*args, **kwargs)
        finally:
            into[0] += time.thread_time_ns() - start
            into[1] += 1

    return wrapper


def stages(messages: int, questions: int) -> list[tuple[str, float, float, float]]:
    """``(stage, µs a question, share of the question, calls a question)``, in `STAGES` order."""
    state = costs_turns.grown_session(messages)
    compactor = costs_turns._roomy()  # noqa: SLF001 - the question row's own compactor
    for turn in range(10):  # warm: the index, the judge, the templates
        asked = compactor.maybe_compact(state.append(costs_turns._question(state, turn)))  # noqa: SLF001
        state = compactor.maybe_compact(asked.append({"role": "assistant", "content": "Noted."}))
    spent: dict[str, list[int]] = {}
    gc.collect()
    gc.disable()
    try:
        for turn in range(questions):
            question = state.append(costs_turns._question(state, turn + 10))  # noqa: SLF001
            with timed(spent):
                asked = compactor.maybe_compact(question)
            state = compactor.maybe_compact(asked.append({"role": "assistant", "content": "OK."}))
    finally:
        gc.enable()
    whole = spent[STAGES[0][2]][0] or 1
    return [
        (label, ns / questions / 1_000, ns / whole, calls / questions)
        for label, (ns, calls) in spent.items()
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """Print each stage's CPU time per question and its share of the question."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--messages", type=int, default=20_000, help="the grown session's size")
    parser.add_argument("--questions", type=int, default=200, help="questions timed")
    args = parser.parse_args(argv)
    print(f"{'stage':<56} | {'µs a question':>13} | {'share':>6} | calls")
    for label, micros, share, calls in stages(args.messages, args.questions):
        print(f"{label:<56} | {micros:>13.1f} | {share:>6.1%} | {calls:.0f}")


if __name__ == "__main__":
    main()
