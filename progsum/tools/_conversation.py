"""Tools the agent's own model can call, and a retry for requests that overflow the context window.

`ConversationTools` gives the model two tools, each as a ready Anthropic and OpenAI definition
with one handler:

* ``compact_conversation`` compacts now (``Compactor.compact(state, force=True)``), once the
  context is at least half way to the automatic trigger; before that it says how full the context
  is and when the tool becomes available.
* ``recall`` reads the original messages behind the summary header: those an item (``C3``) was
  taken from, a range of message numbers, or the compressed messages containing some text. It
  reads the archive when there is one and the log otherwise, and answers in bounded text.

The handler never raises into the agent loop: an unknown tool, bad arguments, an unknown item id
or a failed compaction come back as a `ToolResult` with ``is_error=True`` and a message naming the
bad value and what is valid. Message numbers are 1-based and inclusive, as in the header
("Messages 2-73 of this conversation were compressed ...").

``recall``'s reading and answering lives in `progsum.store._recall`; the context-overflow retry
(`on_prompt_too_long`, `retry_on_overflow`) lives in `progsum.tools._overflow` and is
re-exported here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Literal, NamedTuple, cast

from progsum.engine._compactor import Compactor, Decision
from progsum.engine._effects import Call, Steps, astep, step
from progsum.errors import ConfigError, ProgsumError
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.store._archive import Archive
from progsum.store._recall import (
    LISTED_IDS,
    MAX_MAX_CHARS,
    MIN_MAX_CHARS,
    RECALL_TOOL,
    CallError,
    Reader,
    plural,
    recall_item,
    recall_range,
    recall_search,
    span,
)
from progsum.summary._schema import SummaryT as S
from progsum.tools._overflow import (
    Overflow,
    aon_prompt_too_long,
    aretry_on_overflow,
    on_prompt_too_long,
    prompt_too_long,
    retry_on_overflow,
)

__all__ = [
    "COMPACT_TOOL",
    "DEFAULT_MAX_CHARS",
    "ELIGIBLE_FRACTION",
    "MAX_MAX_CHARS",
    "MIN_MAX_CHARS",
    "RECALL_TOOL",
    "ConversationTools",
    "Overflow",
    "ToolResult",
    "aon_prompt_too_long",
    "aretry_on_overflow",
    "on_prompt_too_long",
    "prompt_too_long",
    "retry_on_overflow",
]

COMPACT_TOOL = "compact_conversation"
ELIGIBLE_FRACTION = 0.5
"""``compact_conversation`` works once the context reaches this share of the automatic trigger."""
DEFAULT_MAX_CHARS = 4_000
"""Longest ``recall`` answer by default, in characters (about 1,000 tokens)."""


# -- tool definitions ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Param:
    """One argument of a tool: its JSON type, description and bounds."""

    name: str
    kind: Literal["string", "integer"]
    description: str
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the argument."""
        schema: dict[str, Any] = {"type": self.kind, "description": self.description}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.max_length is not None:
            schema["maxLength"] = self.max_length
        return schema

    def read(self, value: object) -> str | int:
        """``value`` checked against the type and bounds.

        Raises:
            CallError: the value does not fit; the message names it and the valid values.
        """
        if self.kind == "string":
            if not isinstance(value, str) or not value.strip():
                raise CallError(f"{self.name}={value!r} must be a non-empty string")
            if self.max_length is not None and len(value) > self.max_length:
                raise CallError(
                    f"{self.name} is {len(value)} characters long; use at most {self.max_length}"
                )
            return value.strip()
        if isinstance(value, float | str) and str(value).removesuffix(".0").strip().isdecimal():
            value = int(str(value).removesuffix(".0"))
        if isinstance(value, bool) or not isinstance(value, int):
            raise CallError(f"{self.name}={value!r} must be a whole number")
        low = -math.inf if self.minimum is None else self.minimum
        high = math.inf if self.maximum is None else self.maximum
        if not low <= value <= high:
            bounds = f"{self.minimum:,}" if self.minimum is not None else "…"
            bounds += f" to {self.maximum:,}" if self.maximum is not None else " or more"
            raise CallError(f"{self.name}={value} is out of range; use {bounds}")
        return value


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and arguments (all optional)."""

    name: str
    description: str
    params: tuple[Param, ...] = ()

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments object."""
        return {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.params},
            "additionalProperties": False,
        }

    def anthropic(self) -> dict[str, Any]:
        """The Anthropic Messages API tool definition."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema(),
        }

    def openai(self) -> dict[str, Any]:
        """The OpenAI Chat Completions tool definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema(),
            },
        }

    def read(self, arguments: object) -> dict[str, str | int]:
        """The arguments as a dict of checked values (nulls dropped).

        Args:
            arguments: A dict (Anthropic ``input``), a JSON object string (OpenAI ``arguments``),
                or None / "" for no arguments.

        Raises:
            CallError: the arguments are not an object, name an unknown argument, or hold a
                value of the wrong type or out of range.
        """
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            arguments = {}
        if isinstance(arguments, str | bytes):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                raise CallError(
                    f"the arguments {_short(arguments)} are not valid JSON; "
                    f"pass a JSON object such as {self._example()}"
                ) from None
        if not isinstance(arguments, Mapping):
            raise CallError(
                f"the arguments {_short(arguments)} are not an object; "
                f"pass a JSON object such as {self._example()}"
            )
        known = {p.name: p for p in self.params}
        unknown = sorted(str(k) for k in arguments if k not in known)
        if unknown:
            accepted = ", ".join(known) or "none"
            raise CallError(
                f"{self.name} has no argument {', '.join(map(repr, unknown))}; "
                f"it accepts: {accepted}"
            )
        return {k: known[k].read(v) for k, v in arguments.items() if v is not None}

    def _example(self) -> str:
        return '{"item": "C1"}' if self.params else "{}"


def compact_spec(eligible_fraction: float = ELIGIBLE_FRACTION) -> ToolSpec:
    """The ``compact_conversation`` tool, as its description states the eligibility point."""
    share = "half" if eligible_fraction == ELIGIBLE_FRACTION else f"{eligible_fraction:.0%} of the"
    return ToolSpec(
        name=COMPACT_TOOL,
        description=(
            "Compress the older part of this conversation into the notes of the summary header "
            "in the system prompt, to free context space, e.g. before a large new sub-task. Works "
            f"once the context is at least {share} way to the point where it is compressed "
            "automatically; before that it only reports how full the context is. Decisions and "
            "constraints stay binding in the notes, and the original messages stay readable with "
            f"{RECALL_TOOL}. Takes no arguments."
        ),
    )


def recall_spec(max_chars: int = DEFAULT_MAX_CHARS) -> ToolSpec:
    """The ``recall`` tool, with ``max_chars`` as the stated default answer length."""
    return ToolSpec(
        name=RECALL_TOOL,
        description=(
            "Read the original text of earlier messages that were compressed into the summary "
            "header. Give exactly one of: item (a bracketed id from the header, e.g. C3, to read "
            "the messages it was taken from); first and last (message numbers as the header "
            "counts them, from 1, inclusive; last defaults to the last message); or query (text "
            "to look for, case-insensitive, among the compressed messages). Long answers are cut "
            "to max_chars and end with a note saying how to read more."
        ),
        params=(
            Param("item", "string", "A summary item id, such as C3 or F12.", max_length=20),
            Param("first", "integer", "First message number to read (1-based).", minimum=1),
            Param("last", "integer", "Last message number to read, inclusive.", minimum=1),
            Param(
                "query",
                "string",
                "Text to search for in the compressed messages (case-insensitive).",
                max_length=200,
            ),
            Param(
                "max_chars",
                "integer",
                f"Longest answer in characters (default {max_chars:,}).",
                minimum=MIN_MAX_CHARS,
                maximum=MAX_MAX_CHARS,
            ),
        ),
    )


# -- results -------------------------------------------------------------------------------------


class ToolResult(NamedTuple, Generic[S]):
    """What a tool call produced: the state to go on with and the text for the model.

    ``state`` is new after a compaction and the given state otherwise. Append the result to it
    (not to the state the call was made in) with `anthropic_message` or `openai_message`.
    """

    state: ConversationState[S]
    """The conversation to continue with."""
    content: str
    """The tool result text for the model."""
    is_error: bool = False
    """The call was invalid or failed; ``content`` says why and what to do instead."""

    def anthropic_block(self, tool_use_id: str) -> dict[str, Any]:
        """The Anthropic ``tool_result`` content block answering ``tool_use_id``."""
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": self.content,
        }
        if self.is_error:
            block["is_error"] = True
        return block

    def anthropic_message(self, tool_use_id: str) -> dict[str, Any]:
        """A user message holding only this result (parallel calls: put every block in one)."""
        return {"role": "user", "content": [self.anthropic_block(tool_use_id)]}

    def openai_message(self, tool_call_id: str) -> dict[str, Any]:
        """The OpenAI ``tool`` message answering ``tool_call_id``."""
        return {"role": "tool", "tool_call_id": tool_call_id, "content": self.content}


# -- the tools -----------------------------------------------------------------------------------


class ConversationTools(Generic[S]):
    """``compact_conversation`` and ``recall`` for the agent's model, over one compactor.

    Example:
        ``tools = ConversationTools(compactor)``; send ``tools.anthropic()`` with the request, and
        for each ``tool_use`` block named in ``tools.names``:
        ``result = tools.handle(state, block.name, block.input)``, then
        ``state = result.state.append(result.anthropic_message(block.id))``.
    """

    names = (COMPACT_TOOL, RECALL_TOOL)
    """The tool names this object handles; route other tool calls elsewhere."""

    def __init__(
        self,
        compactor: Compactor[S],
        archive: Archive | None = None,
        *,
        eligible_fraction: float = ELIGIBLE_FRACTION,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        """Bind the tools to a compactor and, optionally, the archive its messages go to.

        Args:
            compactor: Measures the context and compacts it (its policy sets the trigger).
            archive: Where ``recall`` reads folded messages first (by ``state.thread_id``;
                default: the compactor's archive); messages it does not hold are read from
                ``state.log``.
            eligible_fraction: Share of the automatic trigger from which ``compact_conversation``
                compacts.
            max_chars: Default longest ``recall`` answer.

        Raises:
            ConfigError: an argument is out of range.
        """
        if not isinstance(compactor, Compactor):
            raise ConfigError(f"compactor={compactor!r} is not a progsum.Compactor; pass one")
        if not 0 < eligible_fraction <= 1:
            raise ConfigError(
                f"eligible_fraction={eligible_fraction!r} must be in (0, 1]; use e.g. "
                f"{ELIGIBLE_FRACTION}"
            )
        if not MIN_MAX_CHARS <= max_chars <= MAX_MAX_CHARS:
            raise ConfigError(
                f"max_chars={max_chars!r} must be between {MIN_MAX_CHARS:,} and "
                f"{MAX_MAX_CHARS:,}; use e.g. {DEFAULT_MAX_CHARS}"
            )
        self.compactor = compactor
        self.archive = archive if archive is not None else compactor.archive
        self.eligible_fraction = eligible_fraction
        self.max_chars = max_chars
        self.specs = (compact_spec(eligible_fraction), recall_spec(max_chars))

    # -- definitions ------------------------------------------------------------------------------

    def anthropic(self) -> list[dict[str, Any]]:
        """Tool definitions for the Anthropic Messages API (``tools=``)."""
        return [spec.anthropic() for spec in self.specs]

    def openai(self) -> list[dict[str, Any]]:
        """Tool definitions for OpenAI Chat Completions (``tools=``)."""
        return [spec.openai() for spec in self.specs]

    # -- handling ---------------------------------------------------------------------------------

    def handle(self, state: ConversationState[Any], name: str, arguments: object) -> ToolResult[S]:
        """Run the tool call ``name(arguments)`` and answer it; never raises for a bad call.

        Append the assistant message that made the call to ``state`` before handling it.

        Args:
            state: The conversation, its last message the assistant turn making the call.
            name: The tool's name.
            arguments: A dict (Anthropic ``input``) or a JSON string (OpenAI ``arguments``).
        """
        return step(self._handling(state, name, arguments))

    async def ahandle(
        self, state: ConversationState[Any], name: str, arguments: object
    ) -> ToolResult[S]:
        """Async `handle`: compacts through the compactor's async path."""
        return await astep(self._handling(state, name, arguments))

    def _handling(
        self, state: ConversationState[Any], name: str, arguments: object
    ) -> Steps[ToolResult[S]]:
        """`handle`'s sequence: the compaction, if asked, is its one effect."""
        typed: ConversationState[S] = state
        try:
            spec = self._spec(name)
            checked = spec.read(arguments)
            if spec.name == COMPACT_TOOL:
                return (yield from self._compacting(typed))
            return self._recall(typed, checked)
        except CallError as error:
            return ToolResult(typed, _refusal(name, error), is_error=True)

    def _spec(self, name: object) -> ToolSpec:
        for spec in self.specs:
            if spec.name == name:
                return spec
        raise CallError(f"there is no tool {name!r} here; use one of {', '.join(self.names)}")

    # -- compact_conversation ---------------------------------------------------------------------

    def compact_conversation(self, state: ConversationState[S]) -> ToolResult[S]:
        """Compact now if the context is past ``eligible_fraction`` of the trigger, else say why."""
        return step(self._compacting(state))

    async def acompact_conversation(self, state: ConversationState[S]) -> ToolResult[S]:
        """Async `compact_conversation`."""
        return await astep(self._compacting(state))

    def _compacting(self, state: ConversationState[S]) -> Steps[ToolResult[S]]:
        """`compact_conversation`'s sequence: the forced compaction is its one effect."""
        decision = self.compactor.decide(state)
        if not self._eligible(decision):
            return ToolResult(state, self._not_yet(decision))
        compact = Call(
            partial(self.compactor.compact, state, force=True),
            partial(self.compactor.acompact, state, force=True),
        )
        try:
            compacted = cast("ConversationState[S]", (yield compact))
        except ProgsumError as error:
            return ToolResult(state, _compaction_failed(error), is_error=True)
        return ToolResult(compacted, _compaction_report(state, compacted))

    def eligible_at(self, decision: Decision) -> int:
        """The measured figure, in ``decision.unit``, from which the tool compacts."""
        return math.ceil(decision.limit * self.eligible_fraction)

    def _eligible(self, decision: Decision) -> bool:
        return decision.measured >= self.eligible_at(decision)

    def _not_yet(self, decision: Decision) -> str:
        how = f" ({decision.method})" if decision.unit == "tokens" else ""
        share = decision.measured / decision.limit
        return (
            f"Not compacted: the context holds {decision.measured:,} {decision.unit}{how}, "
            f"{share:.0%} of the automatic compaction trigger ({decision.limit:,} "
            f"{decision.unit}). {COMPACT_TOOL} becomes available at "
            f"{self.eligible_at(decision):,} {decision.unit} "
            f"({self.eligible_fraction:.0%} of the trigger), and compaction happens by itself at "
            "the trigger. Nothing was changed; carry on with the task."
        )

    # -- recall -----------------------------------------------------------------------------------

    def recall(
        self,
        state: ConversationState[S],
        *,
        item: str | None = None,
        first: int | None = None,
        last: int | None = None,
        query: str | None = None,
        max_chars: int | None = None,
    ) -> ToolResult[S]:
        """Answer a ``recall`` call given as Python arguments (see `handle` for the checks)."""
        given = {"item": item, "first": first, "last": last, "query": query, "max_chars": max_chars}
        return self.handle(state, RECALL_TOOL, given)

    def _recall(
        self, state: ConversationState[S], arguments: Mapping[str, str | int]
    ) -> ToolResult[S]:
        modes = [m for m in ("item", "first", "query") if m in arguments]
        if "last" in arguments and "first" not in arguments:
            raise CallError("last was given without first; give first too (last is optional)")
        if len(modes) != 1:
            chosen = f"both {modes[0]} and {modes[1]}" if len(modes) > 1 else "none of them"
            raise CallError(
                f"give exactly one of item, first (with an optional last) or query; got {chosen}"
            )
        budget = int(arguments.get("max_chars", self.max_chars))
        reader = Reader(state, self.archive)
        if "item" in arguments:
            text = recall_item(reader, str(arguments["item"]), budget)
        elif "query" in arguments:
            text = recall_search(reader, str(arguments["query"]), budget)
        else:
            last = arguments.get("last")
            end = None if last is None else int(last)
            text = recall_range(reader, int(arguments["first"]), end, budget)
        return ToolResult(state, text)


# -- compact_conversation answers ----------------------------------------------------------------


def _compaction_report(before: ConversationState[Any], after: ConversationState[Any]) -> str:
    """One paragraph on what a forced compaction did and what to do next."""
    new = after.events[len(before.events) :]
    event: CompactionEvent | None = new[-1] if new else None
    if event is None or event.outcome != "compacted" or event.folded is None:
        why = event.reason if event is not None else "nothing was due"
        return (
            f"Nothing was compacted: {why}. The context is unchanged; carry on with the task "
            "(a tool result or message in the recent turns may be what takes the space)."
        )
    start, end = event.folded
    merged = event.merge
    added = merged.added if merged is not None else ()
    retired = merged.retired if merged is not None else ()
    listed = ", ".join(added[:LISTED_IDS]) + (", …" if len(added) > LISTED_IDS else "")
    text = (
        f"Compacted: {span(start, end)} now live as notes in the summary header of the system "
        f"prompt; the context went from {event.tokens_before:,} to {event.tokens_after:,} "
        f"tokens ({event.method}). {plural(len(added), 'item')} added"
        + (f" ({listed})" if added else "")
    )
    text += f", {len(retired)} retired." if retired else "."
    if event.degraded:
        text += f" A fallback summarizer wrote them ({event.degraded_reason})."
    return (
        f"{text} Decisions and constraints in the notes stay binding. To read an original "
        f"message again, call {RECALL_TOOL} with an item id from the notes or with message "
        "numbers. Continue with the task."
    )


def _compaction_failed(error: ProgsumError) -> str:
    return (
        f"Compaction failed and the context is unchanged: {error}. Carry on with the task; "
        f"do not call {COMPACT_TOOL} again this turn."
    )


def _refusal(name: object, error: CallError) -> str:
    return f"{name}: {error}. Nothing was changed."


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."  # noqa: PLR2004
