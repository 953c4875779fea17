"""Compression and split safety on real agent transcripts (Claude Code, τ-bench, SWE-agent).

    python bench/transcripts.py /work/shared/data
    python bench/transcripts.py DATA_DIR --trigger 2000 --keep 4

Data: ``DATA_DIR/claude_code/**/*.jsonl``, ``DATA_DIR/tau_bench/*.json`` and
``DATA_DIR/swe_agent/**/*.traj``, read in place with `progsum.replay._importers.read_conversations`
(a missing folder is skipped). Nothing is copied.

The run. Each conversation is appended one message at a time, and ``Compactor.maybe_compact`` is
called after each, with the offline `ExtractiveSummarizer` and a small budget, ``Policy(
context_window=max(MIN_WINDOW, 4 * trigger), trigger=("tokens", trigger), keep=("messages",
keep))``, so that cuts happen even in short conversations. A system prompt taken off the front by
the importer is passed to the renderer; it is not counted (nothing can compact it).

The checks, after every compaction, on both sides of the cut:

* the model view (`render_anthropic` or `render_openai`): every tool call is answered in the very
  next message (Anthropic: the following user message; OpenAI: the run of ``tool`` messages right
  after it), every result answers a call of the message right before it, counting repeated ids,
  and only the last message may hold a call still awaiting its result;
* the folded segment (what the summarizer received) by the same rule, with no call left awaiting.

Pairing is checked here independently of progsum's own adapter (`orphans`), on the rendered
messages. The sizes are `HeuristicCounter` estimates of the effective context with the summary
header, right before and right after each compaction, and at the end beside the whole log.

Claude Code's own compaction. Where a session log holds Claude Code's compaction summary
(`progsum.replay._importers.claude_code_summaries`), the prefix it replaced is compacted by progsum
too, once (``compact(..., force=True)`` with a 200,000-token window and the same ``keep``) and turn
by turn as above, and the sizes are printed side by side, all by the same `HeuristicCounter`.

Everything is deterministic; the run time goes to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared_data import AGENT_SETS, agent_files, present

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.policy._policy import MIN_WINDOW
from progsum.policy._reduction import Reduction
from progsum.policy._tokens import HeuristicCounter
from progsum.replay._importers import (
    CompactSummary,
    Imported,
    claude_code_summaries,
    read_conversations,
)
from progsum.summarizers import ExtractiveSummarizer

DEFAULT_TRIGGER = 2_000
"""Trigger in tokens: small, so that cuts happen in the short τ-bench and SWE-agent runs too."""
DEFAULT_KEEP = 4
"""Messages kept verbatim after each compaction (widened by the engine to keep tool pairs)."""
CLAUDE_CODE_WINDOW = 200_000
"""The window of the one-shot comparison with Claude Code's own compaction."""
COUNTER = HeuristicCounter()


# -- tool-call pairing, checked on provider-shaped messages ---------------------------------------


def _get(obj: object, key: str) -> Any:  # noqa: ANN401 - messages are untyped JSON
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _blocks(message: object, kind: str) -> list[Any]:
    content = _get(message, "content")
    if not isinstance(content, list):
        return []
    return [block for block in content if _get(block, "type") == kind]


def anthropic_orphans(messages: Sequence[object], *, trailing_call: bool) -> list[str]:
    """Tool pairing problems in an Anthropic message list; empty when every pair is whole.

    Args:
        messages: The messages, in order.
        trailing_call: The last message may hold calls still awaiting their results.
    """
    problems: list[str] = []
    for i, message in enumerate(messages):
        role = _get(message, "role")
        calls = Counter(str(_get(b, "id")) for b in _blocks(message, "tool_use"))
        results = Counter(str(_get(b, "tool_use_id")) for b in _blocks(message, "tool_result"))
        if results:
            before = messages[i - 1] if i else None
            asked = Counter(str(_get(b, "id")) for b in _blocks(before, "tool_use"))
            if role != "user" or _get(before, "role") != "assistant":
                asked = Counter()
            problems += [
                f"message {i}: result for {call_id} answers no call of message {i - 1}"
                for call_id in results - asked
            ]
        if calls:
            if i + 1 == len(messages):
                if not trailing_call:
                    problems += [f"message {i}: call {c} is left without its result" for c in calls]
                continue
            after = messages[i + 1]
            answered = Counter(str(_get(b, "tool_use_id")) for b in _blocks(after, "tool_result"))
            if _get(after, "role") != "user":
                answered = Counter()
            problems += [
                f"message {i}: call {call_id} is not answered in message {i + 1}"
                for call_id in calls - answered
            ]
    return problems


def openai_orphans(messages: Sequence[object], *, trailing_call: bool) -> list[str]:
    """Tool pairing problems in an OpenAI chat message list; empty when every pair is whole.

    Args:
        messages: The messages, in order.
        trailing_call: The last message may hold calls still awaiting their results.
    """
    problems: list[str] = []
    open_calls: Counter[str] | None = None  # calls of the assistant message before this tool run
    opened_at = -1
    for i, message in enumerate(messages):
        role = _get(message, "role")
        if role == "tool":
            call_id = str(_get(message, "tool_call_id"))
            if open_calls is None or open_calls[call_id] <= 0:
                problems.append(f"message {i}: result for {call_id} answers no call before it")
            else:
                open_calls[call_id] -= 1
            continue
        problems += _unanswered(open_calls, opened_at)
        calls = (_get(message, "tool_calls") or []) if role == "assistant" else []
        open_calls = Counter(str(_get(c, "id")) for c in calls) if calls else None
        opened_at = i
    if not (trailing_call and opened_at == len(messages) - 1):
        problems += _unanswered(open_calls, opened_at)
    return problems


def _unanswered(open_calls: Counter[str] | None, at: int) -> list[str]:
    if open_calls is None:
        return []
    return [f"message {at}: call {c} is not answered" for c, n in open_calls.items() if n > 0]


def orphans(messages: Sequence[object], fmt: str, *, trailing_call: bool) -> list[str]:
    """Tool pairing problems in ``messages`` of format ``fmt`` (``anthropic`` or ``openai``)."""
    check = anthropic_orphans if fmt == "anthropic" else openai_orphans
    return check(messages, trailing_call=trailing_call)


def tool_calls(messages: Sequence[object], fmt: str) -> int:
    """Number of tool calls made in ``messages``."""
    if fmt == "anthropic":
        return sum(len(_blocks(m, "tool_use")) for m in messages)
    return sum(len(_get(m, "tool_calls") or []) for m in messages if _get(m, "role") == "assistant")


# -- the replay -----------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the replay of one corpus found."""

    conversations: int = 0
    messages: int = 0
    calls: int = 0
    compactions: int = 0
    stalls: int = 0
    cuts_checked: int = 0
    problems: list[str] = field(default_factory=list)
    before: list[int] = field(default_factory=list)
    """Context tokens right before each compaction."""
    after: list[int] = field(default_factory=list)
    """Context tokens right after each compaction."""
    final: int = 0
    """Context tokens at the end, summed over conversations."""
    whole: int = 0
    """Tokens of the whole logs, summed over conversations."""


def policy_for(trigger: int, keep: int) -> Policy:
    """The small-budget policy of the replay."""
    return Policy(
        context_window=max(MIN_WINDOW, 4 * trigger),
        trigger=("tokens", trigger),
        keep=("messages", keep),
    )


def rendered(state: ConversationState[Any], fmt: str, system: str | None) -> list[Any]:
    """The messages of the model view of ``state``, with the header as a first system message."""
    if fmt == "anthropic":
        _, messages = render_anthropic(state, system=system)
        return list(messages)
    return list(render_openai(state, system=system))


def replay(
    conversation: Imported, compactor: Compactor[Any], tally: Tally
) -> ConversationState[Any]:
    """Feed ``conversation`` turn by turn through ``compactor``, checking every cut into ``tally``.

    Returns:
        The final state.
    """
    fmt = conversation.format
    state: ConversationState[Any] = ConversationState()
    authors = conversation.authors or (None,) * len(conversation.messages)
    for message, author in zip(conversation.messages, authors, strict=True):
        grown = state.append(message, author=author)
        state = compactor.maybe_compact(grown)
        if state is grown or len(state.events) == len(grown.events):
            continue
        new = state.events[len(grown.events) :]  # a compaction may be followed by more
        event = next((e for e in new if e.outcome == "compacted" and e.folded), None)
        if event is None or event.folded is None:
            tally.stalls += 1
            continue
        tally.compactions += 1
        tally.cuts_checked += 1
        tally.before.append(grown.estimate(COUNTER))
        tally.after.append(state.estimate(COUNTER))
        start, end = event.folded
        name = f"{conversation.name} compaction {event.number}"
        view = rendered(state, state.format or fmt, conversation.system)
        tally.problems += [
            f"{name}, model view: {p}"
            for p in orphans(view, state.format or fmt, trailing_call=True)
        ]
        segment = list(state.log[start:end])
        tally.problems += [
            f"{name}, folded messages {start}-{end - 1}: {p}"
            for p in orphans(segment, state.format or fmt, trailing_call=False)
        ]
    tally.conversations += 1
    tally.messages += len(conversation.messages)
    tally.calls += tool_calls(conversation.messages, fmt)
    tally.final += state.estimate(COUNTER)
    tally.whole += sum(COUNTER.count_message(m) for m in conversation.messages)
    return state


def corpus_files(data_dir: Path) -> Iterator[tuple[str, list[Path]]]:
    """The agent sets present in ``data_dir`` and their files, in a fixed order (`shared_data`)."""
    for name in present(data_dir, AGENT_SETS):
        files = agent_files(data_dir, name)
        if files:
            yield name, files


@dataclass(frozen=True, slots=True)
class Comparison:
    """Claude Code's own compaction summary beside progsum's, for the same prefix."""

    session: str
    prefix_messages: int
    prefix_tokens: int
    claude_code: int
    """Tokens of Claude Code's summary (which replaces the whole prefix)."""
    once_header: int
    """progsum's header after one compaction of the prefix."""
    once_context: int
    """progsum's whole context after it: header, kept first message and verbatim tail."""
    replay_header: int
    """progsum's header after replaying the prefix turn by turn with the small budget."""
    replay_context: int
    replay_compactions: int


def compare(
    conversation: Imported, summary: CompactSummary, compactor: Compactor[Any], keep: int
) -> Comparison:
    """Compact the prefix Claude Code compacted, once and turn by turn; measure both."""
    prefix = conversation.messages[: summary.at]
    head = dataclasses.replace(
        conversation,
        messages=prefix,
        authors=None if conversation.authors is None else conversation.authors[: summary.at],
    )
    once = Compactor(
        policy=Policy(context_window=CLAUDE_CODE_WINDOW, keep=("messages", keep)),
        summarizer=ExtractiveSummarizer(),
    ).compact(head.state(), force=True)
    replayed = replay(head, compactor, Tally())
    return Comparison(
        session=conversation.name,
        prefix_messages=len(prefix),
        prefix_tokens=sum(COUNTER.count_message(m) for m in prefix),
        claude_code=COUNTER.count_text(summary.text),
        once_header=once.header_tokens(COUNTER),
        once_context=once.estimate(COUNTER),
        replay_header=replayed.header_tokens(COUNTER),
        replay_context=replayed.estimate(COUNTER),
        replay_compactions=sum(1 for e in replayed.events if e.outcome == "compacted"),
    )


# -- output ---------------------------------------------------------------------------------------


def print_tallies(tallies: Mapping[str, Tally], trigger: int, keep: int) -> None:
    """The split-safety and compression table."""
    print(
        f"Split safety and compression, turn by turn (ExtractiveSummarizer, trigger {trigger:,} "
        f"tokens, keep {keep} messages; HeuristicCounter estimates)"
    )
    print(
        f"{'corpus':<12} | {'convs':>5} | {'messages':>8} | {'tool calls':>10} | "
        f"{'compactions':>11} | {'stalls':>6} | {'orphans':>7} | {'before → after (median)':>23} | "
        f"{'end / whole log':>17}"
    )
    for name, t in tallies.items():
        sizes = (
            f"{statistics.median(t.before):,.0f} → {statistics.median(t.after):,.0f}"
            if t.before
            else "no compaction"
        )
        end = f"{t.final / t.whole:.1%} of {t.whole:,}" if t.whole else "-"
        print(
            f"{name:<12} | {t.conversations:>5} | {t.messages:>8,} | {t.calls:>10,} | "
            f"{t.compactions:>11,} | {t.stalls:>6,} | {len(t.problems):>7} | {sizes:>23} | "
            f"{end:>17}"
        )
    problems = [p for t in tallies.values() for p in t.problems]
    cuts = sum(t.cuts_checked for t in tallies.values())
    print(f"{cuts:,} cuts checked on both sides: {len(problems)} orphaned tool calls or results")
    for problem in problems[:20]:
        print(f"  {problem}")


def print_comparisons(comparisons: Sequence[Comparison], trigger: int) -> None:
    """Claude Code's summaries beside progsum's for the same prefixes."""
    if not comparisons:
        return
    print("\nClaude Code's own compaction beside progsum's, same prefix (HeuristicCounter tokens)")
    print(
        f"{'session':<10} | {'prefix':>17} | {'Claude Code summary':>19} | "
        f"{'progsum once: header / context':>30} | "
        f"{f'progsum turn by turn at {trigger:,}: header / context':>44}"
    )
    for c in comparisons:
        prefix = f"{c.prefix_messages} msgs, {c.prefix_tokens:,}"
        once = f"{c.once_header:,} / {c.once_context:,}"
        replayed = (
            f"{c.replay_header:,} / {c.replay_context:,} ({c.replay_compactions} compactions)"
        )
        print(
            f"{c.session[:10]:<10} | {prefix:>17} | {c.claude_code:>19,} | {once:>30} | "
            f"{replayed:>44}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    """Replay every transcript under DATA_DIR and print the tables."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("data_dir", type=Path, help="folder holding claude_code/, tau_bench/, ...")
    parser.add_argument(
        "--trigger", type=int, default=DEFAULT_TRIGGER, help="trigger in tokens (%(default)s)"
    )
    parser.add_argument(
        "--keep", type=int, default=DEFAULT_KEEP, help="messages kept verbatim (%(default)s)"
    )
    parser.add_argument(
        "--no-reduction",
        action="store_true",
        help="turn off the cheap reduction stage, to see what it saves",
    )
    args = parser.parse_args(argv)
    data_dir: Path = args.data_dir
    trigger: int = args.trigger
    keep: int = args.keep
    started = time.perf_counter()
    compactor = Compactor(
        policy=policy_for(trigger, keep),
        summarizer=ExtractiveSummarizer(),
        reduction=None if args.no_reduction else Reduction(),
    )
    tallies: dict[str, Tally] = {}
    comparisons: list[Comparison] = []
    for corpus, files in corpus_files(data_dir):
        tally = tallies.setdefault(corpus, Tally())
        for file in files:
            conversations = read_conversations(file)
            for conversation in conversations:
                replay(conversation, compactor, tally)
            if corpus == "claude_code":
                comparisons += [
                    compare(conversations[0], summary, compactor, keep)
                    for summary in claude_code_summaries(file)
                ]
    print_tallies(tallies, trigger, keep)
    print_comparisons(comparisons, trigger)
    print(f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
