"""`CompactionEvent`: one record of what a compaction attempt did, kept in ``state.events``."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict

from progsum.policy._tokens import Method
from progsum.policy._usage import CostAlert
from progsum.summary._merge import MergeReport
from progsum.summary._record import Record
from progsum.summary._update import SummarizerUsage

__all__ = ["CompactionEvent", "StallKind"]


StallKind = Literal["nothing_to_fold", "no_gain", "not_smaller"]
"""Why a due compaction did not fold anything (see `CompactionEvent.stall`)."""


class CompactionEvent(Record):
    """One compaction attempt: what was folded, the counts around it, and how it went."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int
    """1-based position in ``state.events``."""
    outcome: Literal[
        "compacted", "reduced", "consolidated", "stalled", "repaired", "failed", "archived"
    ]
    """``compacted``: a segment was folded into the summary; ``reduced``: old tool data was
    cleared from the model view (see ``cleared``), no model call; ``consolidated``: the summary
    outgrew its header budget and was condensed (see ``merge``); ``stalled``: nothing could be
    folded; ``repaired``: a degraded segment was summarized again (see ``repairs``); ``failed``:
    the summarizer or the archive failed, the engine backs off (see ``failure``, ``retry_at``);
    ``archived``: segments folded while the archive was down were written (see ``archives``)."""
    at: datetime
    """When it happened (UTC)."""
    reason: str
    """Why it fired, or why it stalled, in one sentence."""
    tokens_before: int
    """Counted context tokens before."""
    tokens_after: int
    """Counted context tokens after (equal to before when stalled), without a recall block: a
    fold drops the one in force, and the turn's recall is chosen after it
    (`progsum.engine._recall`: it fits below the trigger)."""
    method: Method
    """How tokens were counted: anchored on real usage, or estimated."""
    folded: tuple[int, int] | None = None
    """Log range ``[start, end)`` folded into the summary."""
    forced: bool = False
    """Triggered by ``compact(..., force=True)`` rather than by the policy."""
    stall: StallKind | None = None
    """Why nothing was folded, when stalled."""
    retry_at_tokens: int | None = None
    """After a ``not_smaller`` stall: the estimated segment size before the summarizer is asked
    again (twice the larger of the refused segment and the summary growth it produced)."""
    degraded: bool = False
    """A fallback summarizer produced the update; the segment may deserve a repair later."""
    repairs: int | None = None
    """For a ``repaired`` event: the number of the degraded event whose segment it re-did."""
    degraded_reason: str | None = None
    usage: SummarizerUsage | None = None
    """Tokens and latency of the summarizer call, separate from the agent's own usage."""
    merge: MergeReport | None = None
    """What the merge added, dropped, retired and refused."""
    extracted: tuple[str, ...] = ()
    """Ids of constraints the guard added verbatim: user prohibitions the summary left out."""
    cleared: tuple[int, ...] = ()
    """For a ``reduced`` event: log indices of the messages whose tool data was cleared."""
    missing_values: tuple[str, ...] = ()
    """Exact values the user stated that the context no longer carries and the ledger could not
    restore (the schema has no field for them); they survive only in the log. See
    `progsum.contract._ledger`: usually empty, as the user's sentence is restored instead."""
    pinned: tuple[int, int] | None = None
    """For a ``compacted`` event that cut inside a tool cycle with thinking: the log range of the
    turn's opening round kept in view in front of the tail (see `ConversationState.pinned`)."""
    failure: Literal["summarizer", "archive"] | None = None
    """For a ``failed`` event: what failed (the summarizer call or the archive write)."""
    retry_at: int | None = None
    """For a ``failed`` event: the log length at which the failed call is tried again (the wait
    doubles with each consecutive failure, capped)."""
    not_before: datetime | None = None
    """For a ``failed`` event of the summarizer: when the provider's ``retry-after`` allows the
    next call (UTC); the call waits for this as well as for ``retry_at``."""
    in_archive: bool = False
    """For a ``compacted`` event: its segment is in the archive, written before the state was
    returned. False without an archive, and while the write is pending (``archive_pending``:
    a later ``archived`` event names it once written). The header points to the archive only
    when every folded segment is there (`ConversationState.folded_in_archive`)."""
    archive_pending: bool = False
    """For a ``compacted`` event: its segment could not be archived yet; the state's log keeps it
    until a later ``archived`` event writes it."""
    archives: tuple[int, ...] = ()
    """For an ``archived`` event: numbers of the compacted events whose segments it wrote."""
    over_window: str | None = None
    """Set when the context after this event is still above the model's input window: one line
    saying which messages, how big, and what would help."""
    cost_alert: CostAlert | None = None
    """Set on the event whose summarizer call lifted the summarization share to or above the
    compactor's ``cost_alert`` (`progsum.policy._usage`); once per crossing."""
