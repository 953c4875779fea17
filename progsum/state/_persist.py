"""The JSON layout of a conversation state, and its validation when it is read back.

`ConversationState.to_dict` writes it; `ConversationState.from_dict` reads it through
`parse_log` and `parse_fields`, whose errors say which field is damaged.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import ValidationError

from progsum.errors import ConfigError
from progsum.judge._values import StatedValue as Entry
from progsum.policy._tokens import Anchor
from progsum.policy._usage import AgentUsage
from progsum.state._cleared import Cleared
from progsum.state._events import CompactionEvent
from progsum.summary._schema import BaseSummary, spec_of

__all__ = ["STATE_FORMAT", "Fields", "anchor_dict", "entry_data", "parse_fields", "parse_log"]

STATE_FORMAT = 1
"""Version of the JSON layout written by `ConversationState.to_dict`."""


class Fields(NamedTuple):
    """A stored state's fields after its log, validated."""

    cutoff: int
    head_end: int
    summary: BaseSummary | None
    events: tuple[CompactionEvent, ...]
    anchor: Anchor | None
    attempted_at: int | None
    cleared: tuple[Cleared, ...]
    ledger: tuple[Entry, ...]
    pinned: tuple[int, int] | None
    agent_usage: AgentUsage
    version: int


def anchor_dict(anchor: Anchor | None) -> dict[str, Any] | None:
    """The anchor as JSON data."""
    if anchor is None:
        return None
    return {
        "tokens": anchor.tokens,
        "estimate": anchor.estimate,
        "ratio": anchor.ratio,
        "observations": anchor.observations,
    }


def parse_log(data: object, schema: type[BaseSummary]) -> tuple[list[Any], list[Any] | None]:
    """The log of a state written by `ConversationState.to_dict`, and its authors by index.

    Raises:
        ConfigError: the data is not a progsum state or was written with another schema.
    """
    if not isinstance(data, dict) or data.get("progsum_state") != STATE_FORMAT:
        raise ConfigError(
            "not a progsum state (expected a dict with 'progsum_state': "
            f"{STATE_FORMAT}); pass what ConversationState.to_dict() returned"
        )
    spec_of(schema)
    written = data.get("schema")
    if written is not None and written != schema.__name__:
        raise ConfigError(
            f"the state was summarized with schema {written!r}; pass schema={written} to read it"
        )
    log = data.get("log") or []
    marked = data.get("authors") or {}
    if not isinstance(marked, dict):
        raise ConfigError("the state's authors must map log indices to author classes")
    return log, [marked.get(str(at)) for at in range(len(log))] if marked else None


def parse_fields(data: dict[str, Any], schema: type[BaseSummary], length: int) -> Fields:
    """The fields after the log of a state of ``length`` messages, validated.

    Raises:
        ConfigError: the data is damaged (the message says which field).
    """
    try:
        summary = None if data.get("summary") is None else schema.model_validate(data["summary"])
        events = tuple(CompactionEvent.model_validate(e) for e in data.get("events") or [])
    except ValidationError as exc:
        raise ConfigError(f"the state's summary or events do not validate: {exc}") from exc
    cutoff, head_end = _whole(data, "cutoff"), _whole(data, "head_end")
    if not 0 <= head_end <= cutoff <= length or (cutoff and summary is None):
        raise ConfigError(
            f"the state's cutoff={cutoff} and head_end={head_end} do not fit its "
            f"{length}-message log; the data is damaged"
        )
    anchor = data.get("anchor")
    return Fields(
        cutoff=cutoff,
        head_end=head_end,
        summary=summary,
        events=events,
        anchor=None if anchor is None else Anchor(**anchor),
        attempted_at=data.get("attempted_at"),
        cleared=_cleared(data),
        ledger=_ledger(data),
        pinned=_pinned(data.get("pinned"), head_end, cutoff),
        agent_usage=_agent_usage(data),
        version=_whole(data, "version"),
    )


def _whole(data: dict[str, Any], key: str) -> int:
    """The whole number the state's ``key`` holds (0 when absent).

    Raises:
        ConfigError: it holds something else.
    """
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"the state's {key}={value!r} is not a whole number; the data is damaged")
    return value


def _cleared(data: dict[str, Any]) -> tuple[Cleared, ...]:
    try:
        return tuple(Cleared(*c) for c in data.get("cleared") or [])
    except TypeError as exc:
        raise ConfigError(f"the state's cleared blocks do not validate: {exc}") from exc


def entry_data(entry: Entry) -> list[Any]:
    """One ledger entry as the state's JSON holds it: ``[value, at, sentence, rule]``."""
    return [entry.value, entry.at, entry.sentence, entry.rule]


def _ledger(data: dict[str, Any]) -> tuple[Entry, ...]:
    try:
        return tuple(Entry(*e) for e in data.get("ledger") or [])
    except TypeError as exc:
        raise ConfigError(f"the state's exact-value ledger does not validate: {exc}") from exc


def _pinned(pinned: object, head_end: int, cutoff: int) -> tuple[int, int] | None:
    if pinned is None:
        return None
    if not (
        isinstance(pinned, list)
        and len(pinned) == 2  # noqa: PLR2004 - a [start, end) pair
        and head_end <= int(pinned[0]) < int(pinned[1]) <= cutoff
    ):
        raise ConfigError(
            f"the state's pinned={pinned!r} does not lie between its head_end={head_end} and "
            f"cutoff={cutoff}; the data is damaged"
        )
    return int(pinned[0]), int(pinned[1])


def _agent_usage(data: dict[str, Any]) -> AgentUsage:
    try:  # a state stored without usage totals loads with none
        return AgentUsage.from_dict(data.get("agent_usage") or {})
    except ConfigError as exc:
        raise ConfigError(f"the state's {exc}; the data is damaged") from exc
