"""``progsum compact FILE``: compact a conversation once and print what a model would be sent.

The context goes to stdout (``--json``: the provider-ready request fields), a report to stderr:
tokens before and after, items per field, model calls and cost. A context still over the model's
input window gives exit status 3 unless ``--allow-overflow``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from progsum.cli._options import conversation_of, policy_of, schema_named
from progsum.cli._output import outcome, ratio, recall_line, save, summary_lines, write_view
from progsum.cli._progress import imported_state
from progsum.cli._status import EXIT_OVERFLOW
from progsum.cli._summarizer import summarizer_for
from progsum.engine._compactor import Compactor
from progsum.engine._config import conversation_kind
from progsum.state._conversation import ConversationState

__all__ = ["run_compact"]


def run_compact(args: argparse.Namespace) -> int:
    """Compact ``FILE`` once; the context on stdout, the report on stderr; the exit status."""
    policy = policy_of(args)
    schema = schema_named(args.schema)
    conversation = conversation_of(args)
    summarizer, model = summarizer_for(args.summarizer)
    compactor = Compactor(policy=policy, summarizer=summarizer, schema=schema)
    state: ConversationState[Any] = imported_state(conversation)
    decision = compactor.decide(state)
    compacted = compactor.compact(state)
    (before, method), (after, _) = compactor.count(state), compactor.count(compacted)
    write_view(sys.stdout, compacted, conversation.system, as_json=args.json)
    if args.save is not None:
        save(args.save, compacted)
    margin = ""
    if method == "estimated" and policy.safety_margin != 1:
        margin = f" (as counted: estimates x{policy.safety_margin} until usage is reported)"
    report = [
        (
            f"{conversation.name} ({conversation.source}, {len(state)} messages): "
            f"{before:,} tokens before, {after:,} after ({ratio(before, after)}), trigger "
            f"{policy.trigger_limit:,}{margin}"
        )
    ]
    events = compacted.events[len(state.events) :]
    if not events:
        report.append(f"nothing to compact: {decision.reason}")
    report.extend(outcome(event, compacted) for event in events)
    if compacted.cutoff:
        report.append(f"kept {compacted.effective_length} messages verbatim")
    recalled = recall_line(compacted)
    if recalled:
        report.append(recalled)
    overflow = compactor.overflow(compacted)
    counted, _ = compactor.count(compacted)
    if overflow is not None:
        report.append(f"OVER THE WINDOW: {overflow}")
    elif counted > policy.trigger_limit:
        report.append(
            f"still over the budget: {counted:,} tokens (as counted) against "
            f"{policy.trigger_limit:,}; {_largest(compactor, compacted, counted)}"
        )
    report.extend(summary_lines(compacted, summarizer, model))
    sys.stderr.write("\n".join(report) + "\n")
    if overflow is not None and not args.allow_overflow:
        sys.stderr.write(
            "progsum: the context above does not fit the model's input window; exit status "
            f"{EXIT_OVERFLOW} (pass --allow-overflow to accept it)\n"
        )
        return EXIT_OVERFLOW
    return 0


def _largest(compactor: Compactor[Any], state: ConversationState[Any], counted: int) -> str:
    """The part that holds most of the context (the header or the largest kept messages)."""
    shown = compactor.sizes(state)
    header = max(0, counted - sum(size for _, size in shown))  # what the kept messages leave
    sizes = sorted(((size, i) for i, size in shown), reverse=True)[:3]
    named = ", ".join(f"message {i + 1} ({size:,} tokens)" for size, i in sizes)
    if sizes and header <= sizes[0][0]:
        return (
            f"the largest kept messages are {named}; lower --keep, or raise --budget "
            "(the kept first message and newest tool round are never folded)"
        )
    kind = conversation_kind(compactor.config, state)
    limit = compactor.policy.in_conversation(kind).header_limit
    what = f"the header is what is over: {header:,} tokens, more than any kept message"
    if named:
        what += f" (the largest: {named})"
    if limit is None:
        return f"{what}; it has no budget: give it one with --header-budget, or raise --budget"
    if header <= limit:
        return f"{what}; its budget is {limit:,}: lower --header-budget, or raise --budget"
    return (
        f"{what}, and over its budget of {limit:,}: binding items and the last carriers of "
        "values the user stated are never dropped, so raise --budget or start a new "
        "conversation"
    )
