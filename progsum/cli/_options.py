"""The values the command-line options name: the policy, the schema and the conversation.

Each reads the parsed arguments and raises `progsum.cli._status.UsageError` (exit status 2) with
the remedy when they do not name a valid value.
"""

from __future__ import annotations

import argparse
import os
import sys

from progsum.cli._status import UsageError
from progsum.errors import ConfigError
from progsum.policy._policy import (
    DEFAULT_HEADER_BUDGET,
    DEFAULT_RECALL_BUDGET,
    MIN_WINDOW,
    Policy,
    Threshold,
)
from progsum.policy._windows import MODELS, context_window
from progsum.replay._importers import Imported, read_conversations
from progsum.summary._files import load_schema, schemas
from progsum.summary._schema import BaseSummary

__all__ = ["DEFAULT_BUDGET", "budget_policy", "conversation_of", "policy_of", "schema_named"]

DEFAULT_BUDGET = 2_000
"""Trigger in tokens when neither ``--budget`` nor ``--model`` is given: demo-sized."""


def policy_of(args: argparse.Namespace) -> Policy:
    """The policy of ``--budget``, ``--header-budget``, ``--model``, ``--keep``, ``--no-recall``."""
    if args.keep is not None and args.keep < 1:
        raise UsageError(f"--keep {args.keep} must keep at least 1 message; use e.g. --keep 8")
    keep: Threshold | None = None if args.keep is None else ("messages", args.keep)
    if args.model is not None:
        _check_model(args.model)
    header: Threshold = DEFAULT_HEADER_BUDGET
    if args.header_budget is not None:
        if args.header_budget < 1:
            raise UsageError(
                f"--header-budget {args.header_budget} must be a positive number of tokens, "
                "e.g. 500"
            )
        header = ("tokens", args.header_budget)
    recall = not getattr(args, "no_recall", False)
    if args.budget is None and args.model is not None:
        return Policy(
            model=args.model,
            keep=keep,
            header_budget=header,
            recall_budget=DEFAULT_RECALL_BUDGET if recall else None,
        )
    budget = DEFAULT_BUDGET if args.budget is None else args.budget
    if budget < 1:
        raise UsageError(f"--budget {budget} must be a positive number of tokens, e.g. 2000")
    return budget_policy(
        budget, keep=args.keep, header_budget=args.header_budget, model=args.model, recall=recall
    )


def budget_policy(
    budget: int,
    *,
    keep: int | None = None,
    header_budget: int | None = None,
    model: str | None = None,
    recall: bool = True,
) -> Policy:
    """The policy of ``--budget TOKENS``: compact when the estimate (no safety margin) reaches it.

    Without ``model`` the window (twice the budget) is only there to make the policy valid. The
    header always has a budget: ``header_budget`` tokens, or by default the share of the window
    the budget implies (`progsum.policy._policy.default_header_limit`: 1,333 tokens for a budget
    of 8,000, the floor of 500 for 2,000), so the header cannot outgrow the budget. The recall
    block takes the default share likewise, or nothing with ``recall=False``.
    `bench/msc_retention.py` measures with the same policy.
    """
    recall_budget = DEFAULT_RECALL_BUDGET if recall else None
    trigger: Threshold = ("tokens", budget)
    tail: Threshold | None = None if keep is None else ("messages", keep)
    header: Threshold = (
        DEFAULT_HEADER_BUDGET if header_budget is None else ("tokens", header_budget)
    )
    if model is not None:
        return Policy(
            model=model,
            trigger=trigger,
            keep=tail,
            safety_margin=1.0,
            header_budget=header,
            recall_budget=recall_budget,
        )
    return Policy(
        context_window=max(MIN_WINDOW, 2 * budget),
        trigger=trigger,
        keep=tail,
        safety_margin=1.0,
        header_budget=header,
        recall_budget=recall_budget,
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


def schema_named(name: str) -> type[BaseSummary]:
    """A shipped schema by name, or a schema file by path (`progsum.load_schema`)."""
    looks_like_path = name.endswith(".toml") or "/" in name or os.sep in name
    if not looks_like_path and name not in {info.name for info in schemas()}:
        names = ", ".join(info.name for info in schemas())
        raise UsageError(
            f"--schema {name!r}: no such schema; use one of {names}, or the path of a .toml file"
        )
    return load_schema(name)


def conversation_of(args: argparse.Namespace) -> Imported:
    """The conversation of ``FILE`` that ``--conversation`` names (by index or by name)."""
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
