"""``progsum replay FILE``: feed a conversation turn by turn through ``maybe_compact``.

One line per compaction, as an agent would see them, then the totals, the summarization share and,
with ``--probes``, which facts survive to the end beside plain truncation
(`progsum.replay._probes`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from progsum.cli._options import conversation_of, policy_of, schema_named
from progsum.cli._output import event_line, ratio, share_line, summary_lines
from progsum.cli._progress import Progress
from progsum.cli._summarizer import summarizer_for
from progsum.engine._compactor import Compactor
from progsum.policy._usage import AgentUsage
from progsum.replay._probes import evaluate, load_probes, replay
from progsum.state._conversation import ConversationState

__all__ = ["run_replay"]


def run_replay(args: argparse.Namespace) -> int:
    """Replay ``FILE`` turn by turn, printing each compaction, then the totals; exit status 0."""
    policy = policy_of(args)
    schema = schema_named(args.schema)
    conversation = conversation_of(args)
    messages = conversation.messages
    probes = None
    if args.probes is not None:
        probes = load_probes(args.probes, messages=len(messages))
    summarizer, model = summarizer_for(args.summarizer)
    compactor = Compactor(policy=policy, summarizer=summarizer, schema=schema)
    state: ConversationState[Any] = ConversationState()
    shown_stalls: set[str | None] = set()  # a stall that recurs after compactions prints once
    agent = AgentUsage()  # what the agent was sent and wrote, estimated turn by turn
    with Progress(len(messages), f"replaying {conversation.name}") as bar:
        for step in replay(messages, compactor, authors=conversation.authors):
            if step.before.infos[step.index].role == "assistant":
                sent, _ = compactor.count(state)
                wrote = compactor.counter.count_message(step.before.log[step.index])
                agent += AgentUsage(input_tokens=sent, output_tokens=wrote, reports=1)
            state = step.after
            for event in step.events:
                if event.outcome == "stalled":
                    if event.stall in shown_stalls:
                        continue
                    shown_stalls.add(event.stall)
                sys.stdout.write(event_line(step.index + 1, event, step.after) + "\n")
            bar.update(len(state), f"{len(state.events)} events")
    out = sys.stdout
    compactions = sum(e.outcome == "compacted" for e in state.events)
    reductions = sum(e.outcome == "reduced" for e in state.events)
    stalls = sum(e.outcome == "stalled" for e in state.events)
    full = state.running_totals(compactor.counter)[len(state)]
    now = state.estimate(compactor.counter)
    out.write(
        f"replayed {len(state)} messages of {conversation.name} ({conversation.source}): "
        f"{compactions} compaction(s), {reductions} reduction(s), {stalls} stalled "
        f"attempt(s); context {now:,} tokens "
        f"estimated, the whole conversation {full:,} ({ratio(full, now)})\n"
    )
    out.write("\n".join(summary_lines(state, summarizer, model)) + "\n")
    out.write(share_line(state, agent, args.model) + "\n")
    if probes is not None:
        evaluation = evaluate(
            messages, probes, compactor, final=state, authors=conversation.authors
        )
        out.write(evaluation.report() + "\n")
    return 0
