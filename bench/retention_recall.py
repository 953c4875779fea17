"""The retention gate's rows with recall: each probe's question asked as the newest user message.

For a probe with a question (`msc_probes.questions`: the fact's subject, and the other words
said as the answer; MemoryBank: the dataset's own probing question and the probe's strings),
the question is appended to the final state of the stream's replay as a user message and
``Compactor.maybe_compact`` runs once, as an agent would before its next call. The probe
survives when its answer strings are in what the model is then sent: the header, the recall
block quoted before the question, and every kept message *except the question itself*. A
request over the window's input part scores 0. Probes without a question score as in the
header-only row, so both rows share one denominator; the baseline is truncation of the stream
to the whole input window, scored on the same answer strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from progsum import Compactor
from progsum.messages.formats import speaker
from progsum.render.view import visible
from progsum.replay.probes import (
    Evaluation,
    Probe,
    context_text,
    normalize,
    recoverable,
    truncate,
)
from progsum.state.conversation import ConversationState

__all__ = ["Asked", "asked"]


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
        else:
            question, answer = entry
            probe = Probe(r.probe.id, r.probe.at, answer)
            tally.questions += 1
            text, tokens, excerpts = _asked_context(compactor, final, question, name)
            tally.excerpts += excerpts
            over = tokens > window
            tally.over += over
            kept, full = not over and recoverable(probe, text), recoverable(probe, whole)
        first = r.probe.at < half
        tally.kept += kept
        tally.first += kept and first
        tally.full += full
        tally.first_full += full and first
    return tally


def _asked_context(
    compactor: Compactor[Any], final: ConversationState[Any], question: str, name: str | None
) -> tuple[str, int, int]:
    """The normalized text sent with ``question`` as the newest message (itself left out)."""
    message: dict[str, Any] = {"role": "user", "content": question}
    if name is not None:
        message["name"] = name
    state = compactor.maybe_compact(final.append(message))
    shown = visible(state)[:-1]
    text = context_text(shown, system=[state.header, state.recall_block])
    excerpts = len(state.recall.excerpts) if state.recall and state.recall_block else 0
    return normalize(text), compactor.count(state)[0], excerpts


def _user_name(state: ConversationState[Any]) -> str | None:
    """The name the conversation's user messages carry (the last one seen), if any."""
    for message in reversed(state.log):
        if isinstance(message, dict) and message.get("role") == "user":
            return speaker(message)
    return None
