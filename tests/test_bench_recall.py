"""The retention bench's retrieval baseline: plain BM25 over the folded messages, filling a room.

`retention_recall.ranked` is checked against BM25 computed here from its formula, and the
baseline's context against what it must hold: the messages progsum keeps, then whole folded
messages best first while they fit, never the question itself.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

# the benchmarks are scripts in bench/, not a package: import them as the scripts see each other
sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import retention
import retention_cost
import retention_recall
import retention_session

from progsum import Compactor, ConversationState, Policy
from progsum.recall._terms import query_terms, terms
from progsum.replay._probes import normalize
from progsum.summarizers import ExtractiveSummarizer

pytestmark = pytest.mark.bench  # outside the default run: python -m pytest -m bench

Message = dict[str, Any]

FACTS = (
    "My dog Biscuit is a beagle who loves the beach.",
    "Our dog sitter Marta walks the dog on Mondays.",
    "I bought a blue kayak for the lake this spring.",
)


def formula(query: tuple[str, ...], documents: dict[int, str]) -> list[int]:
    """Documents with a query term, best first by Okapi BM25 (k1 1.2, b 0.75, Lucene's idf)."""
    counts = {i: Counter(terms(text)) for i, text in documents.items()}
    n = len(counts)
    average = sum(sum(c.values()) for c in counts.values()) / n
    scores = {}
    for i, c in counts.items():
        score = 0.0
        for term in query:
            df = sum(1 for other in counts.values() if other[term])
            if c[term]:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                norm = 1.2 * (1 - 0.75 + 0.75 * sum(c.values()) / average)
                score += idf * c[term] * 2.2 / (c[term] + norm)
        if score:
            scores[i] = score
    return sorted(scores, key=lambda i: (-scores[i], i))


def test_the_baseline_ranks_by_plain_bm25_with_no_term_too_common() -> None:
    """Every document holding a query term is ranked, in the formula's order."""
    documents = dict(enumerate([*FACTS, "dog dog dog", "nothing here"]))
    query = query_terms("Where does the dog go, and who walks the dog?")
    assert retention_recall.ranked(query, documents) == formula(query, documents)
    assert retention_recall.ranked(query, documents)[0] == 1  # both terms
    assert 4 not in retention_recall.ranked(query, documents)


def _chat(rounds: int) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": "Let us talk.", "name": "Ana"}]
    for n in range(rounds):
        said = FACTS[n] if n < len(FACTS) else f"Round {n}: the weather was mild and grey."
        messages.append({"role": "user", "content": said, "name": "Ana"})
        messages.append({"role": "assistant", "content": f"Noted, round {n}.", "name": "Ben"})
    return messages


def test_the_baseline_fills_its_room_with_whole_folded_messages_best_first() -> None:
    """Kept messages stay, the best folded ones follow while they fit, the question never shows."""
    compactor = Compactor(policy=Policy(context_window=1_000), summarizer=ExtractiveSummarizer())
    state: ConversationState[Any] = ConversationState()
    for message in _chat(40):
        state = compactor.maybe_compact(state.append(message))
    question = "Who walks my dog Biscuit?"
    state = compactor.maybe_compact(state.append({"role": "user", "content": question}))
    assert not state.is_kept(1)
    assert not state.is_kept(3)
    counter = compactor.counter
    kept = sum(counter.count_message(m) for i, m in enumerate(state.log) if state.is_kept(i))
    roomy = retention_recall.bm25(compactor, state, question, kept + 200)
    assert normalize(FACTS[0]) in roomy
    assert normalize(FACTS[1]) in roomy
    assert normalize(FACTS[2]) not in roomy  # no query term
    assert normalize(question) not in roomy
    shown = [m for i, m in enumerate(state.log[:-1]) if state.is_kept(i)]
    assert shown
    assert all(normalize(str(m["content"])) in roomy for m in shown)  # what progsum keeps
    tight = retention_recall.bm25(compactor, state, question, kept + 20)
    best = retention_recall.ranked(
        query_terms(question),
        {i: str(m["content"]) for i, m in enumerate(state.log) if not state.is_kept(i)},
    )[0]
    assert normalize(str(state.log[best]["content"])) in tight
    assert sum(normalize(fact) in tight for fact in FACTS[:2]) == 1  # one whole message fits
    assert retention.ratio(3, 2) == 1.5


def test_the_cost_bench_bills_each_fold_and_reads_a_grown_request_from_the_cache() -> None:
    """Each fold is one billed summarizer call; a request that only grew reads its prefix back."""
    fold, bill = retention_cost.Billed(), retention_cost.Bill()
    compactor = Compactor(policy=Policy(context_window=4_000), summarizer=fold)
    state: ConversationState[Any] = ConversationState()
    reads: list[int] = []
    for message in _chat(120):
        state = compactor.maybe_compact(state.append(message))
        before = bill.read
        bill(state)
        reads.append(bill.read - before)
    folds = sum(e.outcome == "compacted" for e in state.events)
    assert folds >= 2
    assert fold.calls == folds
    assert fold.read > 0
    assert fold.written > 0
    assert bill.requests == len(reads)
    assert 0 < bill.read < bill.tokens
    assert sum(r > 0 for r in reads) > len(reads) // 2  # most requests only grew
    fresh = retention_cost.Bill()
    fresh(state)
    assert fresh.read == 0  # a new cache reads nothing
    bill(ConversationState().append(_chat(1)[0]))  # a shorter log: a new stream, a new cache
    assert bill.read - sum(reads) == 0


def test_retention_session_prints_a_row_per_budget_and_a_block_costs_folds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """bench/retention_session.py counts each budget's folds: recall off folds least."""
    retention_session.main(
        ["--turns", "150", "--no-cpu", "--budget", "default", "--budget", "off", "--budget", "200"]
    )
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines()[2:]]
    folds = {row[1].strip(): int(row[2]) for row in rows}
    assert set(folds) == {"default", "off", "200"}
    assert folds["off"] <= folds["200"] <= folds["default"]
    assert folds["off"] < folds["default"]
    policy = retention_session.compactor("span=0.5").policy
    assert policy.recall_limit == (policy.trigger_limit - policy.target_limit) // 2
