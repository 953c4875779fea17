"""The value ledger's stage: after a merge, every value the user stated is still in the context.

`keep_values` asks the ledger (`progsum.contract._ledger`) which values no live item and no kept
message carries any more, and restores the user's sentence for each, verbatim, labelled with who
stated it and when in a field of notes. The fold, the consolidation and the repair all end with it.
Pure.
"""

from __future__ import annotations

from typing import Any

from progsum.contract._enforce import ITEM_OVERHEAD
from progsum.contract._ledger import carriers, lost, restore
from progsum.engine._config import Config
from progsum.judge._extract import message_text
from progsum.judge._notes import label
from progsum.judge._values import StatedValue
from progsum.messages._formats import speaker
from progsum.state._conversation import ConversationState
from progsum.summarizers.extractive._routing import note_fields
from progsum.summary._merge import MergeReport
from progsum.summary._schema import BaseSummary, spec_of
from progsum.summary._schema import SummaryT as S

__all__ = ["binding_room", "item_cost", "keep_values", "kept_prose", "user_label"]


def kept_prose(state: ConversationState[Any]) -> list[str]:
    """The prose of the messages a state keeps verbatim (the kept head and the tail)."""
    return [message_text(m) for m in state.effective]


def keep_values(  # noqa: PLR0917 - the fold's values, in the order the stages know them
    config: Config[Any],
    state: ConversationState[Any],
    summary: S,
    report: MergeReport,
    ledger: tuple[StatedValue, ...] | list[StatedValue],
    kept: list[str],
    number: int,
) -> tuple[S, MergeReport, tuple[StatedValue, ...]]:
    """Restore the user's sentence for every ledger value the context no longer carries.

    A sentence restored into a field of notes says who stated it and when (`user_label`); a
    rule's sentence binds while the binding items fit their budget (`binding_room`), past it it
    is kept as a fact, named in the report's ``demoted``. Returns the summary, the report with
    the restored ids, and the entries with no field to go to.
    """
    missing = lost(ledger, carriers(summary, kept, ledger))
    if not missing:
        return summary, report, ()
    restored, extra, unplaced = restore(
        summary,
        missing,
        compaction=number,
        label=lambda at: user_label(state, at),
        notes=note_fields(spec_of(type(summary))),
        room=binding_room(config, summary),
        cost=lambda text: item_cost(config, text),
    )
    combined = report.model_copy(
        update={
            "added": report.added + extra.added,
            "restored": report.restored + extra.added,
            "demoted": (*report.demoted, *extra.demoted),
        }
    )
    return restored, combined, unplaced


def binding_room(config: Config[Any], summary: BaseSummary) -> int | None:
    """Tokens the binding budget has left over ``summary``'s binding items (None: no budget)."""
    limit = config.policy.binding_limit
    if limit is None:
        return None
    spec = spec_of(type(summary))
    used = sum(
        item_cost(config, item.text) for f in spec.binding for item in getattr(summary, f.name)
    )
    return max(0, limit - used)


def item_cost(config: Config[Any], text: str) -> int:
    """Tokens one item of ``text`` takes in the header, as the binding budget counts them."""
    return config.counter.count_text(text) + ITEM_OVERHEAD


def user_label(state: ConversationState[Any], at: int) -> str:
    """The note label of log message ``at``, a user's: its speaker (else ``User``) and its day."""
    return label(speaker(state.log[at]) or "User", state.day_before(at + 1))
