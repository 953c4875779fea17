"""The measure stage: how big the context is, how that was counted, and whether to compact.

Counted tokens are anchored on the provider's last usage report plus an estimate of what came
after it (O(new messages) per turn); without a report they are an estimate times the policy's
safety margin.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from progsum.engine._config import Config
from progsum.policy._policy import WINDOW_GUARD, Unit
from progsum.policy._tokens import Method, count_with_anchor
from progsum.state._conversation import ConversationState

__all__ = [
    "Decision",
    "count",
    "counted",
    "decide",
    "near_window",
    "quiet",
    "quiet_check",
    "target_tokens",
    "unsent",
]


class Decision(NamedTuple):
    """The per-turn measurement and whether compaction is due."""

    due: bool
    """The trigger is reached."""
    unit: Unit
    """What the trigger counts."""
    measured: int
    """The counted figure in ``unit``."""
    limit: int
    """The trigger in ``unit``."""
    tokens: int
    """Counted context tokens (whatever the unit)."""
    method: Method
    """``anchored`` on the provider's last usage report, or ``estimated``."""
    messages: int
    """Messages in the effective context."""
    reserved: int = 0
    """Tokens held for the recall block of a person's new message, counted against the trigger
    with ``measured``: the block stays in the request until the next fold."""

    @property
    def reason(self) -> str:
        """One line: the figure, how it was counted, and the trigger."""
        how = f" ({self.method})" if self.unit == "tokens" else ""
        held = f" and {self.reserved:,} held for a recall block" if self.reserved else ""
        relation = "reached" if self.due else "is below"
        return f"{self.measured:,} {self.unit}{how}{held} {relation} the trigger of {self.limit:,}"


def count(config: Config[Any], state: ConversationState[Any]) -> tuple[int, Method]:
    """Counted context tokens of ``state``, and how they were obtained."""
    estimate = state.estimate(config.counter)
    return count_with_anchor(state.anchor, estimate, config.policy.safety_margin)


def counted(config: Config[Any], state: ConversationState[Any], estimate: int) -> int:
    """An estimated token amount on the counted scale (the anchor's learnt ratio, or the margin)."""
    anchor = state.anchor
    if anchor is not None and anchor.ratio is not None:
        return round(estimate * anchor.ratio)
    return round(estimate * config.policy.safety_margin)


def decide(config: Config[Any], state: ConversationState[Any], *, reserve: int = 0) -> Decision:
    """Measure the context and say whether compaction is due. O(new messages).

    ``reserve``: estimated tokens to hold for a recall block about to be added (counted on the
    trigger's scale; ignored when the trigger counts messages).
    """
    policy = config.policy
    tokens, method = count(config, state)
    messages = state.effective_length
    unit = policy.unit
    measured = (
        tokens - counted(config, state, unsent(config, state)) if unit == "tokens" else messages
    )
    reserved = counted(config, state, reserve) if reserve and unit == "tokens" else 0
    limit = policy.trigger_limit
    due = measured + reserved >= limit
    return Decision(due, unit, measured, limit, tokens, method, messages, reserved)


def quiet(config: Config[Any], state: ConversationState[Any]) -> bool:
    """Whether this turn has nothing to do, decided without planning (most turns).

    Not due, no clipping at ingest, no archive attached (a refused segment may wait), and a
    summary of this configuration's schema (else planning raises the error). Whether a recall is
    to be chosen is `progsum.engine._recall.due`'s question. `quiet_check` is the same question
    for one configuration, asked on every turn.
    """
    return quiet_check(config)(state)


def quiet_check(config: Config[Any]) -> Callable[[ConversationState[Any]], bool]:
    """`quiet` for ``config``, with what the configuration alone decides read once.

    A `Compactor` keeps one: a quiet turn then reads only the state.
    """
    reduction = config.reduction
    if config.archived or (reduction is not None and reduction.clip_at_ingest):
        return _never
    policy, schema = config.policy, config.schema
    limit = policy.trigger_limit
    if policy.unit == "messages":

        def by_messages(state: ConversationState[Any]) -> bool:
            summary = state.summary
            if summary is not None and type(summary) is not schema:
                return False
            return state.effective_length < limit

        return by_messages
    counter, margin = config.counter, policy.safety_margin

    def by_tokens(state: ConversationState[Any]) -> bool:
        summary = state.summary
        if summary is not None and type(summary) is not schema:
            return False
        estimate = state.estimate(counter)
        if state.quotes:  # most turns have no recall block in view
            estimate -= unsent(config, state)
        return count_with_anchor(state.anchor, estimate, margin)[0] < limit

    return by_tokens


def _never(_: ConversationState[Any]) -> bool:
    return False


def unsent(config: Config[Any], state: ConversationState[Any]) -> int:
    """Estimated tokens of the newest message's own recall block while nothing follows it.

    The trigger does not count it yet: the block was chosen to fit below the window's guard
    after the trigger said no, and may take the context past the trigger (docs/recall.md), so
    compacting the unchanged state again changes nothing (DESIGN invariant 8). The next message
    appended makes it count, and that turn folds.
    """
    quotes = state.quotes
    if not quotes or quotes[-1][0] != len(state) - 1:
        return 0
    return config.counter.count_text(quotes[-1][1]) + 4


def near_window(config: Config[Any], decision: Decision) -> bool:
    """Whether the counted tokens reached `WINDOW_GUARD` of the input window.

    In tokens whatever unit the trigger counts; never without a window.
    """
    window = config.policy.input_window
    if window is None:
        return False
    if decision.unit == "tokens":
        return decision.tokens >= config.policy.guard_limit
    return decision.tokens >= math.floor(window * WINDOW_GUARD)


def target_tokens(config: Config[Any]) -> int:
    """The token figure a compaction folds down to (the window when the policy counts messages)."""
    policy = config.policy
    if policy.unit == "tokens":
        return policy.target_limit
    return policy.input_window or 2**63
