"""The ``progsum`` command line: compact, replay and render conversations from files.

Commands (``progsum COMMAND --help`` for every option):

* ``progsum compact FILE``: compact a conversation under a token budget and print what a model
  would be sent: the summary header and the verbatim messages (``--json``: the provider-ready
  request fields). A report goes to stderr: tokens before and after, items per field, model
  calls and cost.
* ``progsum replay FILE``: feed the conversation turn by turn through ``maybe_compact``, as an
  agent would, printing one line per compaction; ``--probes probes.json`` checks which facts
  survive to the end, beside plain truncation at the same budget (`progsum.replay.probes`).
* ``progsum render STATE.json``: a state saved by ``compact --save`` or
  ``ConversationState.to_json()``, as the header and the view.
* ``progsum schemas [NAME]``: the summary schemas and their fields.
* ``progsum store init URL``: create or upgrade a store's tables (`progsum.cli.store`).

Messages are numbered from 1, as in the summary header and in the placeholders of cleared tool
output. Input files are read by `progsum.replay.importers` (Anthropic or OpenAI JSON and JSON Lines,
Claude Code session logs, τ-bench records, SWE-agent trajectories). Without
``ANTHROPIC_API_KEY`` the extractive summarizer runs offline. Bad input is one line on stderr and
exit status 1 (bad file) or 2 (bad usage), never a traceback. When ``compact`` prints a context
that is still over the model's input window, the report says why in one line and the exit status
is 3 (``--allow-overflow`` accepts it: status 0).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from progsum._version import __version__
from progsum.cli.store import add_store_command
from progsum.engine.compactor import Compactor
from progsum.errors import ConfigError, ProgsumError
from progsum.messages.transcript import render_segment
from progsum.policy.policy import DEFAULT_KEEP, MIN_WINDOW, Policy, Threshold
from progsum.policy.usage import AgentUsage, list_price, share, total
from progsum.policy.windows import MODELS, Price, context_window, find_profile
from progsum.render.requests import render_anthropic, render_openai
from progsum.render.view import visible
from progsum.replay.importers import Imported, read_conversations
from progsum.replay.probes import evaluate, load_probes, replay
from progsum.state.conversation import CompactionEvent, ConversationState
from progsum.summarizers.extractive import ExtractiveSummarizer
from progsum.summarizers.fallback import FallbackSummarizer
from progsum.summary.files import load_schema, schemas
from progsum.summary.merge import live_items
from progsum.summary.request import Summarizer
from progsum.summary.schema import BaseSummary, Summary, spec_of
from progsum.summary.update import SummarizerUsage

__all__ = ["DEFAULT_BUDGET", "PRICES", "Price", "budget_policy", "main"]

DEFAULT_BUDGET = 2_000
"""Trigger in tokens when neither ``--budget`` nor ``--model`` is given: demo-sized."""
CLIP_CHARS = 600
"""Longest tool input or result shown whole in the human-readable view."""
EXIT_INPUT = 1
"""A bad input file, or a run-time failure."""
EXIT_USAGE = 2
EXIT_OVERFLOW = 3
"""``compact`` printed a context over the input window (without ``--allow-overflow``)."""
"""Bad arguments (argparse's own convention)."""


PRICES: Mapping[str, Price] = {
    name: found.price for name, found in MODELS.items() if found.price is not None
}
"""List prices of the models in progsum's table that have one; others print "cost unknown"."""


class UsageError(Exception):
    """A bad combination of arguments: exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 bad input, 2 bad usage)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    command: Callable[[argparse.Namespace], int] = args.run
    try:
        with _verbose(args.verbose):
            return command(args)
    except UsageError as error:
        sys.stderr.write(f"progsum {args.command}: {error}\n")
        return EXIT_USAGE
    except ProgsumError as error:
        sys.stderr.write(f"progsum {args.command}: {error}\n")
        return EXIT_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("progsum: interrupted\n")
        return 130


LOG_FORMAT = "%(name)s %(levelname)s: %(message)s"
"""How ``-v`` prints progsum's log lines on stderr."""


class _verbose:  # noqa: N801 - used as a context manager, like contextlib's lowercase ones
    """With ``-v``, progsum's INFO lines (``-vv``: DEBUG) on stderr for the command's run."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.handler: logging.Handler | None = None
        self.previous = logging.NOTSET

    def __enter__(self) -> None:
        if not self.level:
            return
        logger = logging.getLogger("progsum")
        self.handler = logging.StreamHandler(sys.stderr)
        self.handler.setFormatter(logging.Formatter(LOG_FORMAT))
        self.previous = logger.level
        logger.addHandler(self.handler)
        logger.setLevel(logging.INFO if self.level == 1 else logging.DEBUG)

    def __exit__(self, *_: object) -> None:
        if self.handler is not None:
            logger = logging.getLogger("progsum")
            logger.removeHandler(self.handler)
            logger.setLevel(self.previous)


# -- arguments -------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="progsum",
        description="Schema-driven progressive summarization of long LLM-agent conversations.",
        epilog="Run 'progsum COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"progsum {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="print progsum's log lines on stderr: one per compaction event (-vv: also each "
        "model call)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    compact = commands.add_parser(
        "compact",
        help="compact a conversation file and print the context a model would be sent",
        description="Compact a conversation under a token budget; print the summary header and "
        "the verbatim messages (stdout) and a report (stderr).",
    )
    _conversation_options(compact)
    compact.add_argument(
        "--json", action="store_true", help="print the provider-ready request fields as JSON"
    )
    compact.add_argument(
        "--save", metavar="STATE.json", type=Path, help="also write the state, for 'render'"
    )
    compact.add_argument(
        "--allow-overflow",
        action="store_true",
        help="exit 0 even when the printed context is over the model's input window",
    )
    compact.set_defaults(run=_compact)

    replayed = commands.add_parser(
        "replay",
        help="feed a conversation turn by turn through maybe_compact and report each compaction",
        description="Replay a conversation as an agent would, one message at a time, compacting "
        "whenever the budget is reached; print one line per compaction.",
    )
    _conversation_options(replayed)
    replayed.add_argument(
        "--probes",
        metavar="PROBES.json",
        type=Path,
        help="check which facts survive to the end, beside truncation at the same budget",
    )
    replayed.set_defaults(run=_replay)

    render = commands.add_parser(
        "render",
        help="print a saved state as the summary header and the view",
        description="Print a state saved by 'compact --save' or ConversationState.to_json().",
    )
    render.add_argument("state", metavar="STATE.json", type=Path)
    render.add_argument("--schema", metavar="NAME|PATH", help="the state's summary schema")
    render.add_argument("--json", action="store_true", help="print the request fields as JSON")
    render.set_defaults(run=_render)

    schemas = commands.add_parser(
        "schemas",
        help="list the summary schemas, or show the fields of one",
        description="List the summary schemas, or show the fields of NAME.",
    )
    schemas.add_argument("name", nargs="?", metavar="NAME|PATH")
    schemas.set_defaults(run=_schemas)
    add_store_command(commands)
    return parser


def _conversation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", type=Path, help="a conversation file")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="print progsum's log lines on stderr (-vv: also each model call)",
    )
    parser.add_argument(
        "--conversation",
        metavar="N|NAME",
        default="0",
        help="which conversation of a file that holds several (default: the first)",
    )
    parser.add_argument(
        "--schema", metavar="NAME|PATH", default="default", help="summary schema (default: default)"
    )
    parser.add_argument(
        "--budget",
        metavar="TOKENS",
        type=int,
        help="compact when the estimated context reaches this many tokens, without a safety "
        f"margin (default: {DEFAULT_BUDGET:,}; with --model alone: 65%% of its window, "
        "estimates x1.3)",
    )
    parser.add_argument(
        "--header-budget",
        metavar="TOKENS",
        type=int,
        help="consolidate the summary when its header exceeds this many tokens (default with "
        "--budget: no header budget, the header may grow; with --model alone: 15%% of its window)",
    )
    parser.add_argument(
        "--model", help="the agent's model: its context window and tokenizer density"
    )
    parser.add_argument(
        "--keep",
        metavar="N",
        type=int,
        default=DEFAULT_KEEP[1],
        help=f"messages kept verbatim after a compaction (default: {DEFAULT_KEEP[1]})",
    )
    parser.add_argument(
        "--summarizer",
        choices=("anthropic", "extractive"),
        help="who writes the summary (default: anthropic when ANTHROPIC_API_KEY is set, else "
        "extractive, offline)",
    )


def _policy(args: argparse.Namespace) -> Policy:
    if args.keep < 1:
        raise UsageError(f"--keep {args.keep} must keep at least 1 message; use e.g. --keep 8")
    keep: Threshold = ("messages", args.keep)
    if args.model is not None:
        _check_model(args.model)
    header: Threshold | None = None
    if args.header_budget is not None:
        if args.header_budget < 1:
            raise UsageError(
                f"--header-budget {args.header_budget} must be a positive number of tokens, "
                "e.g. 500"
            )
        header = ("tokens", args.header_budget)
    if args.budget is None and args.model is not None:
        if header is None:
            return Policy(model=args.model, keep=keep)
        return Policy(model=args.model, keep=keep, header_budget=header)
    budget = DEFAULT_BUDGET if args.budget is None else args.budget
    if budget < 1:
        raise UsageError(f"--budget {budget} must be a positive number of tokens, e.g. 2000")
    return budget_policy(budget, keep=args.keep, header_budget=args.header_budget, model=args.model)


def budget_policy(
    budget: int, *, keep: int, header_budget: int | None = None, model: str | None = None
) -> Policy:
    """The policy of ``--budget TOKENS``: compact when the estimate (no safety margin) reaches it.

    A token budget defines no real window (without ``model``, the window is only there to make
    the policy valid), so 15% of it would starve the header: the header gets a budget only when
    ``header_budget`` asks for one. `bench/msc_retention.py` measures with the same policy.
    """
    trigger: Threshold = ("tokens", budget)
    header: Threshold | None = None if header_budget is None else ("tokens", header_budget)
    if model is not None:
        return Policy(
            model=model,
            trigger=trigger,
            keep=("messages", keep),
            safety_margin=1.0,
            header_budget=header,
        )
    return Policy(
        context_window=max(MIN_WINDOW, 2 * budget),
        trigger=trigger,
        keep=("messages", keep),
        safety_margin=1.0,
        header_budget=header,
    )


def _check_model(model: str) -> None:
    try:
        context_window(model)
    except ConfigError:
        raise UsageError(
            f"--model {model!r} is not in progsum's table of context windows; use a name "
            f"starting with one of {', '.join(sorted(MODELS))}, or give its window with "
            "--budget TOKENS (compacting at that many tokens) instead of --model"
        ) from None


def _summarizer(choice: str | None) -> tuple[Summarizer, str | None]:
    """The summarizer, and its model's name when one is called."""
    keyed = bool(os.environ.get("ANTHROPIC_API_KEY"))
    if choice is None:
        choice = "anthropic" if keyed else "extractive"
        if not keyed:
            sys.stderr.write(
                "progsum: no ANTHROPIC_API_KEY, so summarizing offline with the extractive "
                "summarizer (the conversation's own sentences as terse notes, no model)\n"
            )
    if choice == "extractive":
        return ExtractiveSummarizer(), None
    if not keyed:
        raise UsageError(
            "--summarizer anthropic needs ANTHROPIC_API_KEY; set it, or use --summarizer "
            "extractive to run offline"
        )
    # the Anthropic SDK and Instructor take about a second to import: only with a key
    from progsum.summarizers.anthropic import AnthropicSummarizer  # noqa: PLC0415

    claude = AnthropicSummarizer()
    return FallbackSummarizer(claude, ExtractiveSummarizer()), claude.model


def _schema(name: str) -> type[BaseSummary]:
    """A shipped schema by name, or a schema file by path (`progsum.load_schema`)."""
    looks_like_path = name.endswith(".toml") or "/" in name or os.sep in name
    if not looks_like_path and name not in {info.name for info in schemas()}:
        names = ", ".join(info.name for info in schemas())
        raise UsageError(
            f"--schema {name!r}: no such schema; use one of {names}, or the path of a .toml file"
        )
    return load_schema(name)


def _schema_of_state(data: object) -> type[BaseSummary]:
    """The shipped schema whose class wrote a saved state (default when it has no summary)."""
    written = data.get("schema") if isinstance(data, dict) else None
    if written is None or written == Summary.__name__:
        return Summary
    for info in schemas():
        schema = load_schema(info.name)
        if schema.__name__ == written:
            return schema
    raise UsageError(
        f"the state was summarized with schema class {written!r}, which no shipped schema "
        "defines; pass --schema PATH of its .toml file"
    )


def _schema_flag(written: str) -> str:
    """The flag that reads a state written with schema class ``written``."""
    if written == Summary.__name__:
        return "leave --schema out (the default schema)"
    for info in schemas():
        if load_schema(info.name).__name__ == written:
            return f"pass --schema {info.name}, or leave --schema out"
    return "pass --schema PATH of its .toml file"


def _conversation(args: argparse.Namespace) -> Imported:
    conversations = read_conversations(args.file)
    chosen: str = args.conversation
    if chosen.isdigit():
        index = int(chosen)
        if index >= len(conversations):
            raise UsageError(
                f"--conversation {index}: {args.file} holds {len(conversations)} "
                f"conversation(s); use 0 to {len(conversations) - 1}"
            )
        conversation = conversations[index]
    else:
        named = [c for c in conversations if chosen in (c.name, c.name.rsplit(":", 1)[-1])]
        if not named:
            names = ", ".join(c.name for c in conversations[:5])
            raise UsageError(
                f"--conversation {chosen!r}: no such conversation in {args.file}; it holds "
                f"{names}{', ...' if len(conversations) > 5 else ''}"  # noqa: PLR2004
            )
        conversation = named[0]
    if len(conversations) > 1:
        sys.stderr.write(
            f"progsum: {args.file} holds {len(conversations)} conversations; using "
            f"{conversation.name!r} (choose with --conversation)\n"
        )
    return conversation


# -- commands --------------------------------------------------------------------------------------


def _compact(args: argparse.Namespace) -> int:
    policy = _policy(args)
    schema = _schema(args.schema)
    conversation = _conversation(args)
    summarizer, model = _summarizer(args.summarizer)
    compactor = Compactor(policy=policy, summarizer=summarizer, schema=schema)
    state: ConversationState[Any] = conversation.state()
    decision = compactor.decide(state)
    compacted = compactor.compact(state)
    before, after = state.estimate(compactor.counter), compacted.estimate(compactor.counter)
    _write_view(sys.stdout, compacted, conversation.system, as_json=args.json)
    if args.save is not None:
        _save(args.save, compacted)
    report = [
        (
            f"{conversation.name} ({conversation.source}, {len(state)} messages): "
            f"{before:,} tokens before, {after:,} after ({_ratio(before, after)}), trigger "
            f"{policy.trigger_limit:,}"
        )
    ]
    events = compacted.events[len(state.events) :]
    if not events:
        margin = "" if policy.safety_margin == 1 else f" (estimates x{policy.safety_margin})"
        report.append(f"nothing to compact: {decision.reason}{margin}")
    report.extend(_outcome(event) for event in events)
    if compacted.cutoff:
        report.append(f"kept {compacted.effective_length} messages verbatim")
    overflow = compactor.overflow(compacted)
    counted, _ = compactor.count(compacted)
    if overflow is not None:
        report.append(f"OVER THE WINDOW: {overflow}")
    elif counted > policy.trigger_limit:
        report.append(
            f"still over the budget: {counted:,} tokens (as counted) against "
            f"{policy.trigger_limit:,}; {_largest(compactor, compacted)}"
        )
    report.extend(_summary_lines(compacted, summarizer, model))
    sys.stderr.write("\n".join(report) + "\n")
    if overflow is not None and not args.allow_overflow:
        sys.stderr.write(
            "progsum: the context above does not fit the model's input window; exit status "
            f"{EXIT_OVERFLOW} (pass --allow-overflow to accept it)\n"
        )
        return EXIT_OVERFLOW
    return 0


def _largest(compactor: Compactor[Any], state: ConversationState[Any]) -> str:
    """The kept messages that hold most of the context, and what would help."""
    sizes = sorted(((size, i) for i, size in compactor.sizes(state)), reverse=True)[:3]
    named = ", ".join(f"message {i + 1} ({size:,} tokens)" for size, i in sizes)
    return (
        f"the largest kept messages are {named}; lower --keep, or raise --budget "
        "(the kept first message and newest tool round are never folded)"
    )


def _replay(args: argparse.Namespace) -> int:
    policy = _policy(args)
    schema = _schema(args.schema)
    conversation = _conversation(args)
    messages = conversation.messages
    probes = None
    if args.probes is not None:
        probes = load_probes(args.probes, messages=len(messages))
    summarizer, model = _summarizer(args.summarizer)
    compactor = Compactor(policy=policy, summarizer=summarizer, schema=schema)
    bar = _Progress(len(messages)) if sys.stderr.isatty() else None
    state: ConversationState[Any] = ConversationState()
    shown_stalls: set[str | None] = set()  # a stall that recurs after compactions prints once
    agent = AgentUsage()  # what the agent was sent and wrote, estimated turn by turn
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
            if bar is not None:
                bar.clear()
            sys.stdout.write(_event_line(step.index + 1, event) + "\n")
        if bar is not None:
            bar.update(len(state), len(state.events))
    if bar is not None:
        bar.clear()
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
        f"estimated, the whole conversation {full:,} ({_ratio(full, now)})\n"
    )
    out.write("\n".join(_summary_lines(state, summarizer, model)) + "\n")
    out.write(_share_line(state, agent, args.model) + "\n")
    if probes is not None:
        evaluation = evaluate(
            messages, probes, compactor, final=state, authors=conversation.authors
        )
        out.write(evaluation.report() + "\n")
    return 0


def _render(args: argparse.Namespace) -> int:
    try:
        text = args.state.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{args.state}: no such state file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{args.state}: cannot be read ({error})") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{args.state}: is not valid JSON ({error.msg} at line {error.lineno}); pass a file "
            "written by 'progsum compact --save' or ConversationState.to_json()"
        ) from error
    if not isinstance(data, dict) or "progsum_state" not in data:
        raise ConfigError(
            f"{args.state}: not a progsum state; pass a file written by 'progsum compact --save' "
            "(a conversation file goes to 'progsum compact' instead)"
        )
    schema = _schema(args.schema) if args.schema else _schema_of_state(data)
    written = data.get("schema")
    if args.schema and written is not None and written != schema.__name__:
        raise UsageError(
            f"{args.state} was summarized with schema class {written!r}, not --schema "
            f"{args.schema}; {_schema_flag(written)}"
        )
    try:
        state: ConversationState[Any] = ConversationState.from_dict(data, schema=schema)
    except ConfigError as error:
        raise ConfigError(f"{args.state}: {error}") from error
    _write_view(sys.stdout, state, None, as_json=args.json)
    compactions = sum(e.outcome == "compacted" for e in state.events)
    sys.stderr.write(
        f"{len(state)} messages logged, {state.effective_length} verbatim, "
        f"{compactions} compaction(s)\n"
    )
    return 0


def _schemas(args: argparse.Namespace) -> int:
    out = sys.stdout
    if args.name is None:
        shipped = schemas()
        width = max(len(info.name) for info in shipped)
        for info in shipped:
            out.write(f"{info.name:<{width}}  {info.description}\n")
        return 0
    spec = spec_of(_schema(args.name))
    out.write(f"{args.name} ({spec.model.__name__})\n")
    if spec.objective is not None:
        objective = spec.objective
        out.write(f"  {objective.name}: {objective.label}. {objective.description}\n")
    for field in spec.lists:
        binding = ", binding" if field.binding else ""
        out.write(
            f"  {field.name} [{field.id_prefix}1, {field.id_prefix}2, ...{binding}]: "
            f"{field.label}. {field.description}\n"
        )
    return 0


# -- output ----------------------------------------------------------------------------------------


def _write_view(
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


def _save(path: Path, state: ConversationState[Any]) -> None:
    try:
        path.write_text(state.to_json(indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"--save {path}: cannot be written ({error})") from error


def _summary_lines(
    state: ConversationState[Any], summarizer: Summarizer, model: str | None
) -> list[str]:
    lines = []
    summary = state.summary
    if summary is not None:
        live = live_items(summary)
        counts = ", ".join(f"{label.lower()} {len(live[name])}" for name, label in _labels(summary))
        lines.append(f"summary items: {counts}")
    usage = state.summarizer_usage
    who = type(summarizer).__name__ + (f" ({model})" if model else "")
    lines.append(f"summarizer: {who}, {usage.calls} model call(s), {_cost(usage, model)}")
    if usage.cache_note:
        lines.append(f"summarizer cache: {usage.cache_note}")
    return lines


def _share_line(state: ConversationState[Any], estimated: AgentUsage, model: str | None) -> str:
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
        dollars = list_price(agent, model)
        line += (
            f"; agent cost ${dollars:.4f} at {model} list price"
            if dollars is not None
            else f"; agent cost unknown (no list price for {model})"
        )
    return line


def _labels(summary: BaseSummary) -> list[tuple[str, str]]:
    schema: type[BaseSummary] = type(summary)
    return [(spec.name, spec.label) for spec in spec_of(schema).lists]


def _cost(usage: SummarizerUsage, model: str | None) -> str:
    if not usage.calls:
        return "no cost"
    found = find_profile(model) if model else None
    price = found.price if found is not None else None
    if found is None or price is None:
        return f"cost unknown (no list price for {model or 'this model'} in progsum's table)"
    prompt = (
        usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    ) / usage.calls
    band = ""
    if (
        found.long_prompt is not None
        and found.long_price is not None
        and prompt > found.long_prompt
    ):
        price, band = found.long_price, f", prompts over {found.long_prompt:,} tokens"
    dollars = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
    ) / 1_000_000
    return (
        f"${dollars:.4f} at list price{band} ({usage.input_tokens:,} input, "
        f"{usage.output_tokens:,} output tokens)"
    )


def _ratio(before: int, after: int) -> str:
    return f"{before / after:.1f}x smaller" if after and before > after else "no smaller"


def _span(folded: tuple[int, int]) -> str:
    """A log range ``[start, end)`` in the header's numbering, which counts from 1."""
    start, end = folded
    return f"message {end}" if end - start == 1 else f"messages {start + 1}-{end}"


def _outcome(event: CompactionEvent) -> str:
    """What one compaction event did, in a few words."""
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
            f"cleared old tool data in {len(event.cleared)} message(s), no model call: "
            f"{event.tokens_before:,} -> {event.tokens_after:,} tokens"
        )
    if event.outcome == "consolidated" and event.merge is not None:
        merge = event.merge
        line = (
            f"consolidated the summary over its header budget: {len(merge.retired)} merged, "
            f"{len(merge.dropped)} oldest dropped (kept as tombstones), +{len(merge.added)} items"
        )
        if event.degraded:
            line += f" (degraded: {event.degraded_reason})"
        return line
    if event.outcome == "stalled":
        return f"stalled ({event.stall}): {event.reason}"
    return f"{event.outcome}: {event.reason}"


def _event_line(number: int, event: CompactionEvent) -> str:
    """One replay line: after which message (counted from 1) the event happened, and what it did."""
    if event.outcome == "compacted":
        return (
            f"message {number}: {event.tokens_before:,} -> {event.tokens_after:,} tokens, "
            f"{_outcome(event)}"
        )
    return f"message {number}: {_outcome(event)}"


class _Progress:
    """A one-line progress bar on stderr (only when stderr is a terminal)."""

    WIDTH = 30

    def __init__(self, total: int) -> None:
        self.total = max(1, total)
        self.step = max(1, total // 200)
        self.shown = False

    def update(self, done: int, compactions: int) -> None:
        if done % self.step and done != self.total:
            return
        filled = self.WIDTH * done // self.total
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        sys.stderr.write(f"\r[{bar}] {done}/{self.total} messages, {compactions} events")
        sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * (self.WIDTH + 40) + "\r")
            sys.stderr.flush()
            self.shown = False
