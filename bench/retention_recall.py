"""The retention gate's rows with recall: each probe's question asked as the newest user message.

For a probe with a question (`msc_probes.questions`: the fact's subject, and the other words
said as the answer; MemoryBank: the dataset's own probing question and the probe's strings),
the question is appended to the final state of the stream's replay as a user message and
``Compactor.maybe_compact`` runs once, as an agent would before its next call. The probe
survives when its answer strings are in what the model is then sent: the header, the recall
block quoted before the question, and every kept message *except the question itself*. A
request over the window's input part scores 0. Probes without a question score as in the
header-only row, so both rows share one denominator; the baselines are truncation of the stream
to the whole input window, scored on the same answer strings, and plain retrieval (`bm25`):
the messages progsum keeps in view, then the folded messages (progsum's, after the question)
ranked by plain Okapi BM25 for the question's terms, whole, best first, while they fit the whole
input window (and, beside it, only the tokens progsum's request uses). Without a question the
retrieval baseline has nothing to rank by and keeps what full-window truncation keeps.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from progsum import Compactor
from progsum.messages._formats import speaker
from progsum.recall._terms import document, query_terms, terms
from progsum.render._view import visible
from progsum.replay._probes import (
    Evaluation,
    Probe,
    context_text,
    normalize,
    recoverable,
    truncate,
)
from progsum.state._conversation import ConversationState

__all__ = ["Asked", "asked", "bm25"]

K1, B = 1.2, 0.75
"""Okapi BM25's usual parameters."""


class Asked:
    """Probes kept with recall in one stream: all, and those stated in its first half."""

    def __init__(self) -> None:
        self.kept = 0
        self.first = 0
        self.questions = 0
        self.excerpts = 0
        self.over = 0
        self.full = 0
        self.first_full = 0
        self.bm25 = 0
        """Kept by plain BM25 filling the whole input window."""
        self.bm25_same = 0
        """Kept by plain BM25 filling only the tokens progsum's request uses."""
        self.first_bm25 = 0
        self.tokens = 0
        """Estimated tokens of progsum's requests with a question, summed."""


def asked(
    compactor: Compactor[Any],
    result: Evaluation,
    questions: Mapping[str, tuple[str, tuple[str, ...]]],
    *,
    half: float,
    fits: bool,
) -> Asked:
    """Each probe of ``result`` with its question asked after the replay (module docstring)."""
    final = result.state
    name = _user_name(final)
    window = compactor.policy.input_window or 0
    start = truncate(final, window, compactor.counter)[0]
    whole = normalize(context_text(final.log[start:]))
    tally = Asked()
    for r in result.results:
        entry = questions.get(r.probe.id)
        if entry is None:
            kept, full = fits and r.progsum, r.full_budget
            plain = same = full
        else:
            question, answer = entry
            probe = Probe(r.probe.id, r.probe.at, answer)
            tally.questions += 1
            state, text, tokens, excerpts = _asked_context(compactor, final, question, name)
            tally.excerpts += excerpts
            tally.tokens += state.estimate(compactor.counter)
            over = tokens > window
            tally.over += over
            kept, full = not over and recoverable(probe, text), recoverable(probe, whole)
            plain = recoverable(probe, bm25(compactor, state, question, window))
            same = recoverable(
                probe, bm25(compactor, state, question, state.estimate(compactor.counter))
            )
        first = r.probe.at < half
        tally.kept += kept
        tally.first += kept and first
        tally.full += full
        tally.first_full += full and first
        tally.bm25 += plain
        tally.bm25_same += same
        tally.first_bm25 += plain and first
    return tally


def bm25(compactor: Compactor[Any], state: ConversationState[Any], question: str, room: int) -> str:
    """The normalized text of plain retrieval within ``room`` estimated tokens (module docstring).

    ``state`` is progsum's after the question (its newest message). The messages it keeps in
    view come first (the question left out of the text, counted in the room); then its folded
    messages by Okapi BM25 (k1 1.2, b 0.75, Lucene's idf; every folded message is a document,
    no term is too common), whole, best first, each that still fits.
    """
    counter = compactor.counter
    log = state.log
    kept = [at for at in range(len(log)) if state.is_kept(at)]
    used = sum(counter.count_message(log[at]) for at in kept)
    folded = [at for at in range(len(log)) if not state.is_kept(at)]
    chosen: list[int] = []
    for at in ranked(query_terms(question), {at: document(log[at]) for at in folded}):
        size = counter.count_message(log[at])
        if used + size <= room:
            chosen.append(at)
            used += size
    shown = [log[at] for at in sorted([*kept[:-1], *chosen])]
    return normalize(context_text(shown))


def ranked(query: Sequence[str], documents: Mapping[int, str]) -> list[int]:
    """The documents holding a query term, best first by Okapi BM25; ties: the earlier one."""
    counts = {at: Counter(terms(text)) for at, text in documents.items()}
    total = len(counts)
    average = sum(sum(c.values()) for c in counts.values()) / max(total, 1) or 1.0
    frequency = {t: sum(1 for c in counts.values() if c[t]) for t in query}
    scores: dict[int, float] = {}
    for at, found in counts.items():
        length = sum(found.values())
        score = 0.0
        for term in query:
            tf = found[term]
            if tf:
                df = frequency[term]
                idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        if score > 0:
            scores[at] = score
    return sorted(scores, key=lambda at: (-scores[at], at))


def _asked_context(
    compactor: Compactor[Any], final: ConversationState[Any], question: str, name: str | None
) -> tuple[ConversationState[Any], str, int, int]:
    """The state with ``question`` as the newest message, and what it sends.

    The normalized text sent (the question itself left out), its counted tokens and its
    excerpts.
    """
    message: dict[str, Any] = {"role": "user", "content": question}
    if name is not None:
        message["name"] = name
    state = compactor.maybe_compact(final.append(message))
    shown = visible(state)[:-1]
    text = context_text(shown, system=[state.header, state.recall_block])
    excerpts = len(state.recall.excerpts) if state.recall and state.recall_block else 0
    return state, normalize(text), compactor.count(state)[0], excerpts


def _user_name(state: ConversationState[Any]) -> str | None:
    """The name the conversation's user messages carry (the last one seen), if any."""
    for message in reversed(state.log):
        if isinstance(message, dict) and message.get("role") == "user":
            return speaker(message)
    return None
