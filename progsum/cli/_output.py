"""What the command line prints: the view, the report lines and the replay's lines.

Messages are numbered from 1, as in the summary header and in the placeholders of cleared tool
output. The view goes to stdout; reports and notes to stderr (bars: `progsum.cli._progress`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from progsum.errors import ConfigError
from progsum.messages._transcript import render_segment
from progsum.policy._usage import AgentUsage, cost_of, list_price, price_sources, share, total
from progsum.policy._windows import MODELS, Price
from progsum.render._requests import render_anthropic, render_openai
from progsum.render._view import visible
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.summary._merge import live_items
from progsum.summary._request import Summarizer
from progsum.summary._schema import BaseSummary, spec_of
from progsum.summary._update import SummarizerUsage

__all__ = [
    "CLIP_CHARS",
    "PRICES",
    "cost",
    "event_line",
    "outcome",
    "ratio",
    "recall_line",
    "save",
    "share_line",
    "summary_lines",
    "write_view",
]

CLIP_CHARS = 600
"""Longest tool input or result shown whole in the human-readable view."""


PRICES: Mapping[str, Price] = {
    name: found.price for name, found in MODELS.items() if found.price is not None
}
"""List prices of the models in progsum's table that have one: the fallback of the cost lines when
genai-prices is not installed or does not know a model (`progsum.policy._usage.quote`)."""


def write_view(
    out: TextIO, state: ConversationState[Any], system: str | None, *, as_json: bool
) -> None:
    """The context a model would be sent: human-readable, or the provider's request fields."""
    if as_json:
        request: dict[str, Any]
        if state.format == "openai":
            request = {"messages": render_openai(state, system=system)}
        else:
            blocks, messages = render_anthropic(state, system=system)
            request = {"system": blocks, "messages": messages}
        out.write(json.dumps(request, ensure_ascii=False, indent=2, default=repr) + "\n")
        return
    parts: list[str] = []
    if system:
        parts.append(f"<system>\n{system}\n</system>")
    if state.header:
        parts.append(state.header.rstrip("\n"))
    kept = state.kept
    numbered = (number + 1 for number in kept)  # counted from 1, like the header
    shown = zip(numbered, visible(state), strict=True)  # cleared tool data as the model sees it
    parts.append(render_segment(shown, clip_chars=CLIP_CHARS))
    out.write("\n\n".join(parts) + "\n")


def save(path: Path, state: ConversationState[Any]) -> None:
    """Write ``state`` as JSON for ``progsum render`` (``--save``)."""
    try:
        path.write_text(state.to_json(indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"--save {path}: cannot be written ({error})") from error


def summary_lines(
    state: ConversationState[Any], summarizer: Summarizer, model: str | None
) -> list[str]:
    """The report's last lines: live items per field, the summarizer's calls and cost."""
    lines = []
    summary = state.summary
    if summary is not None:
        live = live_items(summary)
        counts = ", ".join(f"{label.lower()} {len(live[name])}" for name, label in _labels(summary))
        lines.append(f"summary items: {counts}")
    usage = state.summarizer_usage
    who = type(summarizer).__name__ + (f" ({model})" if model else "")
    lines.append(f"summarizer: {who}, {usage.calls} model call(s), {cost(usage, model)}")
    if usage.cache_note:
        lines.append(f"summarizer cache: {usage.cache_note}")
    return lines


def recall_line(state: ConversationState[Any]) -> str:
    """One line on the recall block quoted before the newest user message, or empty."""
    recall = state.recall
    if recall is None or not state.recall_block:
        return ""
    numbers = ", ".join(str(e.index + 1) for e in recall.excerpts)
    count = len(recall.excerpts)
    return (
        f"recalled {count} excerpt{'s' if count > 1 else ''} of folded messages "
        f"({'message' if count == 1 else 'messages'} {numbers}) before message {recall.at + 1}"
    )


def share_line(state: ConversationState[Any], estimated: AgentUsage, model: str | None) -> str:
    """The summarization share of all tokens, and the agent's cost where its price is known.

    The agent's tokens are its reported usage when the conversation carried any, else the
    replay's estimate: the context counted before each assistant message, plus the message.
    """
    reported = state.agent_usage
    agent, how = (reported, "reported") if reported.reports else (estimated, "estimated")
    spent = total(state.summarizer_usage)
    found = share(spent, agent.tokens)
    figure = "no tokens" if found is None else f"{found:.1%} of all tokens"
    line = (
        f"summarization share: {figure} (summarizer {spent:,} tokens, agent {agent.tokens:,} "
        f"in {agent.reports:,} call(s), {how})"
    )
    if model is not None:
        dollars = list_price(agent, model, calls=agent.reports)
        line += (
            f"; agent cost ${dollars:.4f} at {model} list price"
            if dollars is not None
            else f"; agent cost unknown (no list price for {model})"
        )
    return line


def _labels(summary: BaseSummary) -> list[tuple[str, str]]:
    schema: type[BaseSummary] = type(summary)
    return [(spec.name, spec.label) for spec in spec_of(schema).lists]


def cost(usage: SummarizerUsage, model: str | None) -> str:
    """What the summarizer's calls cost at ``model``'s list price, or why that is unknown.

    The price is genai-prices' when it is installed and knows the model, else progsum's table's;
    its band follows the average prompt per call (`progsum.policy._usage.cost_of`).
    """
    if not usage.calls:
        return "no cost"
    found = cost_of(usage, model, calls=usage.calls)
    if found is None:
        return f"cost unknown (no list price for {model or 'this model'} in {price_sources()})"
    band = f", prompts over {found.quote.band:,} tokens" if found.quote.band is not None else ""
    return (
        f"${found.dollars:.4f} at list price{band} ({usage.input_tokens:,} input, "
        f"{usage.output_tokens:,} output tokens)"
    )


def ratio(before: int, after: int) -> str:
    """How many times smaller ``after`` is than ``before``: ``2.1x smaller``."""
    return f"{before / after:.1f}x smaller" if after and before > after else "no smaller"


def _span(folded: tuple[int, int]) -> str:
    """A log range ``[start, end)`` in the header's numbering, which counts from 1."""
    start, end = folded
    return f"message {end}" if end - start == 1 else f"messages {start + 1}-{end}"


def outcome(event: CompactionEvent, state: ConversationState[Any] | None = None) -> str:
    """What one compaction event did, in a few words.

    ``state`` (one that holds the event's messages) tells what a reduction cleared: old tool
    results and inputs, or the text of a long message clipped.
    """
    if event.outcome == "compacted" and event.folded is not None:
        merge = event.merge
        added = len(merge.added) if merge else 0
        retired = len(merge.retired) if merge else 0
        line = f"folded {_span(event.folded)} into the summary, +{added} items, {retired} retired"
        if event.degraded:
            line += f" (degraded: {event.degraded_reason})"
        return line
    if event.outcome == "reduced":
        return (
            f"{_reduced(event, state)}, no model call: "
            f"{event.tokens_before:,} -> {event.tokens_after:,} tokens"
        )
    if event.outcome == "consolidated" and event.merge is not None:
        merge = event.merge
        line = (
            f"consolidated the summary over its header budget: {len(merge.retired)} merged, "
            f"{len(merge.dropped)} least telling dropped or shortened (kept as tombstones), "
            f"+{len(merge.added)} items"
        )
        if event.degraded:
            line += f" (degraded: {event.degraded_reason})"
        return line
    if event.outcome == "stalled":
        return f"stalled ({event.stall}): {event.reason}"
    return f"{event.outcome}: {event.reason}"


def _reduced(event: CompactionEvent, state: ConversationState[Any] | None) -> str:
    """What a reduction cleared, by kind: tool results, tool inputs, clipped message text."""
    cleared = set(event.cleared)
    if state is None:
        return f"cleared old data in {len(cleared)} message(s)"
    results, inputs, texts = set(), set(), []
    for at in sorted(cleared):
        info = state.infos[at]
        if info.is_result:
            results.add(at)
        elif info.calls:
            inputs.add(at)
        else:
            texts.append(at)
    parts = []
    if results:
        parts.append(f"cleared old tool results in {_count(len(results), 'message')}")
    if inputs:
        parts.append(f"cleared old tool inputs in {_count(len(inputs), 'message')}")
    for role in ("user", "assistant", "system"):
        of_role = [at for at in texts if state.infos[at].role == role]
        if of_role:
            numbers = ", ".join(str(at + 1) for at in of_role)
            which = "message" if len(of_role) == 1 else "messages"
            parts.append(
                f"clipped the text of {_count(len(of_role), f'long {role} message')} "
                f"({which} {numbers})"
            )
    return "; ".join(parts) or "cleared nothing"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def event_line(
    number: int, event: CompactionEvent, state: ConversationState[Any] | None = None
) -> str:
    """One replay line: after which message (counted from 1) the event happened, and what it did."""
    if event.outcome == "compacted":
        return (
            f"message {number}: {event.tokens_before:,} -> {event.tokens_after:,} tokens, "
            f"{outcome(event, state)}"
        )
    return f"message {number}: {outcome(event, state)}"
