"""The fakes and builders `progsum.testing` offers (see its docstring)."""

from __future__ import annotations

import inspect
import json
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from progsum.engine._compactor import Compactor
from progsum.errors import ConfigError
from progsum.messages._formats import Message
from progsum.policy._policy import Policy
from progsum.policy._tokens import HeuristicCounter
from progsum.state._conversation import ConversationState
from progsum.summarizers.prompt._text import user_prompt
from progsum.summarizers.prompt._update import TOOL_NAME, response_model
from progsum.summary._request import Segment, SummaryRequest
from progsum.summary._schema import BaseSummary, Summary, SummaryT
from progsum.summary._update import SummaryUpdate

FIXED_TIME = datetime(2026, 1, 1, tzinfo=UTC)
"""The time `scripted_state` stamps on compaction events, so snapshots stay byte-identical."""

SummarizeFunction = Callable[[SummaryRequest[Any]], SummaryUpdate | Awaitable[SummaryUpdate]]


class FunctionSummarizer:
    """A summarizer backed by a function of the request (sync or async).

    Example:
        ``FunctionSummarizer(lambda request: SummaryUpdate(add={"decisions": ["Use Postgres."]}))``
    """

    def __init__(self, function: SummarizeFunction) -> None:
        self.function = function
        self.requests: list[SummaryRequest[Any]] = []

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Record the request and return the function's update."""
        self.requests.append(request)
        result = self.function(request)
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if callable(close):
                close()
            raise TypeError(
                "FunctionSummarizer wraps an async function; call it through the async engine "
                "(await compactor.amaybe_compact(state))"
            )
        return result

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Record the request and return (awaiting if needed) the function's update."""
        self.requests.append(request)
        result = self.function(request)
        if inspect.isawaitable(result):
            return await result
        return result


class QueuedSummarizer:
    """A summarizer that returns queued updates in order, or raises queued exceptions.

    Example:
        ``QueuedSummarizer(SummaryUpdate(...)).enqueue(TimeoutError())``
    """

    def __init__(self, *responses: SummaryUpdate | BaseException) -> None:
        self.queue: deque[SummaryUpdate | BaseException] = deque(responses)
        self.requests: list[SummaryRequest[Any]] = []

    def enqueue(self, *responses: SummaryUpdate | BaseException) -> QueuedSummarizer:
        """Add responses to the end of the queue; returns self for chaining."""
        self.queue.extend(responses)
        return self

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Record the request and return (or raise) the next queued response."""
        self.requests.append(request)
        if not self.queue:
            raise LookupError(
                f"QueuedSummarizer got request {len(self.requests)} but its queue is empty; "
                "enqueue() one SummaryUpdate per expected compaction"
            )
        response = self.queue.popleft()
        if isinstance(response, BaseException):
            raise response
        return response

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Async `summarize`."""
        return self.summarize(request)


def segment_of(state: ConversationState[Any]) -> Segment:
    """The whole log of ``state`` as one segment, with its format and author classes.

    For testing what reads a segment (the artifact trail, the contract, a summarizer) on a
    conversation built or imported as a state.
    """
    return Segment(
        start=0,
        messages=tuple(state.log),
        infos=tuple(state.infos),
        format=state.format,
        authors=tuple(state.authors),
    )


def summary_request(
    messages: Sequence[Message],
    *,
    prior: SummaryT | None = None,
    schema: type[SummaryT] = Summary,  # type: ignore[assignment]  # mypy cannot default a TypeVar-typed parameter
    start: int = 0,
    task: Sequence[Message] = (),
) -> SummaryRequest[SummaryT]:
    """The request the engine would send a summarizer for ``messages`` as one segment.

    For testing a summarizer directly: ``my_summarizer.summarize(summary_request(messages))``.

    Args:
        messages: The segment; validated like a conversation of its own.
        prior: The summary before this segment (default: an empty one of ``schema``).
        schema: The summary schema.
        start: Log index of the first message (at least ``len(task)``).
        task: The kept head the engine shows beside the segment (log indices from 0): the
            first task message, which the summarizer reads the objective from. Empty: none.

    Raises:
        ConfigError: ``start`` falls inside the task.
    """
    if start < len(task):
        raise ConfigError(
            f"start={start} falls inside the {len(task)} task message(s); the segment starts "
            f"after them, e.g. start={len(task)}"
        )
    state = ConversationState(messages)
    segment = Segment(
        start=start, messages=tuple(messages), infos=tuple(state.infos), format=state.format
    )
    head = None
    if task:
        kept = ConversationState(task)
        head = Segment(start=0, messages=tuple(task), infos=tuple(kept.infos), format=kept.format)
    return SummaryRequest.for_segment(
        prior=prior if prior is not None else schema(), segment=segment, schema=schema, head=head
    )


def scripted_state(
    script: Iterable[Message | SummaryUpdate],
    *,
    schema: type[SummaryT] = Summary,  # type: ignore[assignment]  # mypy cannot default a TypeVar-typed parameter
    keep: int = 2,
    thread_id: str | None = None,
) -> ConversationState[SummaryT]:
    """A state built from a scripted conversation, compacted where the script says.

    The script lists messages in order; each `SummaryUpdate` in it is a compaction at that point:
    the engine folds everything but the last ``keep`` messages (widened to keep tool calls with
    their results) and the fake summarizer answers with that update. The engine's merge and guards
    run as in production, and event times are `FIXED_TIME`, so rendering the result is
    deterministic: ideal for snapshot tests of a schema and its header template. Token counts
    leave the header out, so every scripted update is merged however short the segment before it
    (in production a summary that frees no tokens is refused).

    Example:
        ``scripted_state([user_msg, reply, SummaryUpdate(add={"constraints": ["No prod."]}),
        next_msg], schema=MySummary)``

    Args:
        script: Messages (one format, as for `ConversationState`) and updates.
        schema: The summary schema the updates fill.
        keep: Messages kept verbatim after each compaction.
        thread_id: The state's thread id.

    Raises:
        ConfigError: an update names a field the schema does not have.
        MessageFormatError: a message is malformed.
    """
    fake = QueuedSummarizer()
    compactor = Compactor(
        policy=Policy(context_window=1_000_000, keep=("messages", keep)),
        summarizer=fake,
        schema=schema,
        counter=_MessagesOnly(),
        clock=lambda: FIXED_TIME,
    )
    state: ConversationState[Any] = ConversationState(thread_id=thread_id)
    updates = 0
    for step in script:
        if isinstance(step, SummaryUpdate):
            updates += 1
            fake.enqueue(step)
            state = compactor.compact(state, force=True)
            event = state.events[-1] if state.events else None
            if fake.queue or event is None or event.outcome != "compacted":
                why = event.reason if event is not None else "nothing could be folded"
                raise LookupError(
                    f"update {updates} of the script (after message {len(state.log) - 1}) was "
                    f"not merged: {why}. Put more messages before it, or lower keep"
                )
        else:
            state = state.append(step)
    return state


def summarizer_prompt(request: SummaryRequest[Any]) -> str:
    """What a model summarizer is sent for ``request``, as Markdown for a snapshot.

    The tool's input schema (derived from the request's schema: field names, descriptions, rules)
    and the user message (prior summary, must-keep candidates, the segment). The system prompt is
    the same for every request and schema: see ``progsum.summarizers.prompt._text.system_prompt()``.
    """
    model = response_model(cast("type[BaseSummary]", request.schema))
    tool = json.dumps(model.model_json_schema(), indent=2)
    return (
        f"# Tool `{TOOL_NAME}` input schema\n\n```json\n{tool}\n```\n\n"
        f"# User message\n\n{user_prompt(request, clip_chars=None)}\n"
    )


class _MessagesOnly:
    """Counts messages like `HeuristicCounter` and the header as free (see `scripted_state`)."""

    _counter = HeuristicCounter()

    def count_message(self, message: Message) -> int:
        return self._counter.count_message(message)

    def count_text(self, text: str) -> int:  # noqa: ARG002 - the protocol's signature
        return 0
