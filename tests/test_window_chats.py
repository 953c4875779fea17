"""The window guarantee in chats: small windows, folds that do not shrink, headers of stated values.

Found replaying chats at 2,000 and 4,000 tokens (issue 47): a fold refused as "not smaller"
waited for its segment to double while the context stayed over the window, and the value
ledger kept the sentences of every value a user stated in the header until the header alone
outgrew the window. Sizes are counted from the rendered request as JSON (`request_tokens`), not
with the engine's own measure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy, render_anthropic
from progsum.messages._formats import Message
from progsum.policy._tokens import HeuristicCounter
from progsum.store import MemoryArchive
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._request import SummaryRequest
from progsum.summary._update import SummaryUpdate
from progsum.testing import FunctionSummarizer
from tests.conversations import outings, spending_rules, training_log


def request_tokens(state: ConversationState[Any]) -> int:
    """Tokens of the rendered request serialised as JSON (an upper bound for these tests).

    Each message as the API takes it (role and content): the chat's ``name`` and ``timestamp``
    are the caller's bookkeeping, not sent text.
    """
    system, messages = render_anthropic(state)
    sent = [{"role": m["role"], "content": m["content"]} for m in messages]
    body = json.dumps({"system": system, "messages": sent}, ensure_ascii=False)
    return HeuristicCounter().count_text(body)


def over_the_window(
    compactor: Compactor[Any], messages: Sequence[Message]
) -> list[tuple[int, int]]:
    """``(log length, request tokens)`` of every request sent over the input window."""
    window = compactor.policy.input_window
    assert window is not None
    state: ConversationState[Any] = ConversationState()
    over = []
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
        if state.infos[-1].role != "assistant" and (size := request_tokens(state)) > window:
            over.append((len(state), size))
    return over


def test_a_two_person_chat_at_a_2k_window_stays_within_it() -> None:
    """Two people, their outings dated and named: every request fits a 2,000-token window."""
    compactor = Compactor(policy=Policy(context_window=2_000), summarizer=ExtractiveSummarizer())
    for seed in range(2):
        assert over_the_window(compactor, outings(200, seed)) == []


def broken(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A summarizer that always fails (the provider is down)."""
    raise RuntimeError(f"provider down for messages {request.segment.start}+")


@pytest.mark.parametrize("summarizer", ["extractive", "failing"])
def test_stated_values_that_do_not_fit_leave_for_the_archive_named(summarizer: str) -> None:
    """The value ledger never holds the context over the window; values that leave are named.

    Every value the user stated is still in the request sent, or named by an event as gone to
    the archive, where a search for it finds the user's message.
    """
    archive = MemoryArchive()
    compactor = Compactor(
        policy=Policy(context_window=2_000),
        summarizer=ExtractiveSummarizer()
        if summarizer == "extractive"
        else FunctionSummarizer(broken),
        archive=archive,
    )
    window = compactor.policy.input_window
    assert window is not None
    messages, stated = training_log(300, 7)
    state: ConversationState[Any] = ConversationState(thread_id="log")
    over = []
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
        if (size := request_tokens(state)) > window:
            over.append((len(state), size))
    assert over == []
    left = {v for e in state.events if e.merge is not None for v in e.merge.archived_values}
    assert left, "the scenario never needed the room"
    system, sent = render_anthropic(state)
    shown = json.dumps({"system": system, "messages": sent}, ensure_ascii=False)
    kept = {v for v in stated if re.search(rf"(?<![\d.]){re.escape(v)}(?!\.?\d)", shown)}
    assert stated - kept <= left  # nothing lost silently
    for value in sorted(left)[:20]:
        assert archive.search("log", value), value


def test_rules_past_the_binding_budget_are_kept_as_facts_and_the_window_holds() -> None:
    """Binding items stay within their budget; a rule past it is a fact, named as demoted.

    Binding items are never dropped, so the budget is what keeps them from holding the context
    over the window; a demoted rule's values may then leave for the archive like any fact's,
    named by the event.
    """
    compactor = Compactor(policy=Policy(context_window=2_000), summarizer=ExtractiveSummarizer())
    assert over_the_window(compactor, spending_rules(200, 3)) == []
    state: ConversationState[Any] = ConversationState()
    for message in spending_rules(200, 3):
        state = compactor.maybe_compact(state.append(message))
    summary = state.summary
    assert summary is not None
    limit = compactor.policy.binding_limit
    assert limit is not None
    counter = compactor.counter
    bound = sum(counter.count_text(item.text) for item in summary.constraints)
    assert 0 < bound <= limit
    demoted = [r for e in state.events if e.merge is not None for r in e.merge.demoted]
    assert demoted
    assert all("binding budget is full" in r.why for r in demoted)
