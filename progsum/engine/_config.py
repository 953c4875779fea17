"""What every stage of a compaction reads: the policy, the schema, the counter and the clock.

One frozen value per `Compactor`; the stages are functions of it and of the state they are
given, so the sync and async drivers share every decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic

from progsum.judge._judgement import Kind
from progsum.judge._machine import keeping
from progsum.judge._seam import Judge
from progsum.policy._policy import Policy
from progsum.policy._reduction import Reduction
from progsum.policy._tokens import TokenCounter
from progsum.state._conversation import ConversationState
from progsum.summary._schema import SummaryT as S

__all__ = ["Config", "conversation_kind", "utc_now"]


def utc_now() -> datetime:
    """The default clock of event timestamps."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Config(Generic[S]):
    """The configuration a compaction runs under."""

    policy: Policy
    """When to compact and how much to keep."""
    schema: type[S]
    """The summary schema."""
    counter: TokenCounter
    """The token estimator."""
    clock: Callable[[], datetime]
    """Source of event timestamps (UTC)."""
    reduction: Reduction | None
    """Which old tool data to clear before any model call; None: none."""
    archived: bool
    """An archive is attached: folded segments are written to it before the state changes."""
    judge: Judge | None = None
    """The text judge every stage asks (`progsum.judge._seam`); None: the shipped one."""
    conversation: Kind | None = None
    """``agent`` (a person working with an assistant) or ``chat`` (two people talking); None:
    read off the conversation (`progsum.judge._conversation`)."""
    prose_tags: frozenset[str] = frozenset()
    """Tags whose blocks inside user-role text are the person's own text (folded names,
    `progsum.judge._machine`); every other tag-delimited block is machine text."""


def conversation_kind(config: Config[Any], state: ConversationState[Any]) -> Kind:
    """The kind of conversation ``state`` is: the caller's, else read off its structure.

    `ConversationState.kind` (`progsum.judge._conversation`) reads the messages' authors under
    the configured prose tags.
    """
    if config.conversation is not None:
        return config.conversation
    with keeping(config.prose_tags):
        return state.kind
