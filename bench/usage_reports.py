"""The retention benchmarks' replay: a message at a time, usage reported as a provider would.

An agent appends each model reply with the provider's usage report (``append(message,
usage=response.usage)``, the README's agent loop; the LangChain and pydantic-ai adapters do it
for the caller), and from the first report on progsum counts the context from it instead of
multiplying its estimate by the policy's safety margin. A replayed log has no provider, so the
report is made here: each assistant message comes with the tokens of the context it ends (the
request that produced it, and the reply), counted by the benchmark's own ``measure`` of a state's
context, the one its truncation baselines and over-budget checks count with. So the report is
what a provider whose tokenizer is that measure would say about what it was sent.

Without a measure (the benchmarks' ``--no-usage``) no usage is reported and the safety margin
stays in force for the whole replay: progsum then fills at most 1 / 1.3 of a window that
truncation fills whole, as when an application never passes ``usage``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from progsum import Compactor, ConversationState
from progsum.judge._provenance import Author
from progsum.messages._formats import Message

__all__ = ["Measure", "appended", "estimated", "replayed", "reported"]

Measure = Callable[[ConversationState[Any]], int]
"""A benchmark's tokens of the context a state sends."""


def estimated(compactor: Compactor[Any]) -> Measure:
    """The state's own estimate of its context (header, recall block, kept messages)."""
    counter = compactor.counter
    return lambda state: state.estimate(counter)


def reported(
    state: ConversationState[Any],
    message: Message,
    *,
    author: Author | None = None,
    measure: Measure | None = None,
) -> ConversationState[Any]:
    """``state`` with ``message`` appended, before ``maybe_compact``.

    With a ``measure``, an assistant message is appended with the usage report of the call that
    wrote it: the measured tokens of the context with the reply (module docstring).
    """
    grown = state.append(message, author=author)
    if measure is not None and grown.infos[-1].role == "assistant":
        grown = grown.record_usage(measure(grown))
    return grown


def appended(
    compactor: Compactor[Any],
    state: ConversationState[Any],
    message: Message,
    *,
    author: Author | None = None,
    measure: Measure | None = None,
) -> ConversationState[Any]:
    """``state`` with ``message`` `reported`, then ``maybe_compact``, as an agent's loop does."""
    return compactor.maybe_compact(reported(state, message, author=author, measure=measure))


def replayed(
    messages: Iterable[Message],
    compactor: Compactor[Any],
    *,
    authors: Sequence[Author | None] | None = None,
    measure: Measure | None = None,
) -> ConversationState[Any]:
    """The state after every message of ``messages``, each `appended` in turn."""
    state: ConversationState[Any] = ConversationState()
    for index, message in enumerate(messages):
        author = authors[index] if authors else None
        state = appended(compactor, state, message, author=author, measure=measure)
    return state
