"""The store's SQL, written once for both databases, and what each database spells its own way.

`Statements` holds every statement of `progsum.store._sql.SQLStore` with ``{messages}``-style
table names and ``?`` parameters; a `Dialect` spells them for one database (table names,
placeholders, recall's term queries) and reads its values back (timestamps, index bounds). A
store gives the statements it spells its own way (the thread list, and recall's, which read its
own full-text index) and may replace any other.

Recall's statements restrict their rows to the searched log ranges with ``{within}``, which stays
in the spelled statement: `Dialect.within` fills it in for a number of ranges.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

__all__ = ["TABLES", "C", "Connection", "Dialect", "Rows", "Statements"]

TABLES = ("messages", "events", "states", "cleared", "retired", "ledger", "saves", "recall")
"""The store's tables, as `Statements` name them (``{messages}``, ...; ``{recall}`` is SQLite's
FTS table, which PostgreSQL does without)."""


class Rows(Protocol):
    """The result of one statement, as both drivers' cursors return it."""

    def fetchone(self) -> Any:  # noqa: ANN401 - a driver's row
        """The next row, or None."""

    def fetchall(self) -> list[Any]:
        """The remaining rows."""


class Connection(Protocol):
    """What the shared flows ask of a driver's connection: one statement at a time."""

    def execute(self, sql: str, params: tuple[Any, ...], /) -> Rows:
        """Run ``sql`` with positional ``params``."""


C = TypeVar("C", bound=Connection)


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    """What one database spells differently in the store's SQL, and how its values come back."""

    prefix: str
    """Prefix of every table name."""
    placeholder: str
    """The driver's positional parameter."""
    medium: str
    """What holds the store ("file", "database"), as a damage message names it."""
    now: Callable[[], object]
    """The current time, as the driver writes it into a timestamp column."""
    timestamp: Callable[[Any], datetime]
    """A timestamp column's value as an aware UTC datetime."""
    bounds: Callable[[int, int | None], tuple[int, int]]
    """``get``'s ``start`` and ``end`` (None: to the end) as the query's index bounds."""
    terms_query: Callable[[Sequence[str]], str]
    """The full-text query matching a message that holds any of the terms (each made of word
    characters only), as the recall statement ``ranked`` takes it."""

    def spell(self, template: str) -> str:
        """``template`` for this database: its table names and placeholders (``{within}`` kept)."""
        tables = {name: self.prefix + name for name in TABLES}
        return template.format(**tables, within="{within}").replace("?", self.placeholder)

    def within(self, template: str, ranges: int) -> str:
        """A spelled recall statement restricted to ``ranges`` log ranges (two parameters each)."""
        one = f"(idx >= {self.placeholder} AND idx < {self.placeholder})"
        return template.format(within=" OR ".join([one] * ranges))


@dataclass(frozen=True, slots=True, kw_only=True)
class Statements:
    """The store's SQL, written once: ``{messages}`` and the like name tables, ``?`` a parameter.

    Both databases read the upserts (``INSERT ... AS alias ... ON CONFLICT``) alike; a store
    gives the statement that differs (`threads`) and may replace any other, then `spelled` gives
    the statements in its `Dialect`.
    """

    threads: str
    """The thread ids with a saved state or anything archived."""

    ranked: str
    """Recall: ``(idx, length, terms)`` of the thread's archived messages in ``{within}`` that
    the full-text index finds for a `Dialect.terms_query` (the parameters: the query, the thread
    id, the ranges' bounds); it may find more than hold a term, never fewer."""
    unranked: str
    """Recall: ``(idx, length, terms, message)`` of the thread's archived messages in
    ``{within}`` that the full-text index cannot answer for: those not indexed yet (``length``
    and ``terms`` NULL, with their ``message``) and, where the index has a size limit, those
    beyond it (``message`` NULL)."""
    ranked_stats: str
    """Recall: how many indexed archived messages of the thread lie in ``{within}``, and their
    terms in all."""
    unindexed: str
    """``(thread_id, idx, message)`` of archived messages of a thread whose terms are not stored
    yet, at most a given number (`index_terms` stores them)."""
    index_terms: str
    """Store a message's recall terms (space-joined) and their count."""

    put_message: str = """
INSERT INTO {messages} AS m (thread_id, idx, message, archived_at, event)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (thread_id, idx) DO UPDATE SET
    message = CASE WHEN m.idx >= ? THEN excluded.message ELSE m.message END,
    archived_at = excluded.archived_at,
    event = excluded.event
WHERE m.archived_at IS NULL OR (m.idx >= ? AND m.message <> excluded.message)
"""
    """Archive a message: kept as stored when saved or archived already; a provisional one (beyond
    the saved log, whose length is both last parameters) that differs is replaced."""
    put_event: str = """
INSERT INTO {events} AS e (thread_id, number, event) VALUES (?, ?, ?)
ON CONFLICT (thread_id, number) DO UPDATE SET event = excluded.event
WHERE e.event <> excluded.event
"""
    """Archive an event (one a stale writer left under its number is replaced)."""
    save_message: str = """
INSERT INTO {messages} AS m (thread_id, idx, message) VALUES (?, ?, ?)
ON CONFLICT (thread_id, idx) DO UPDATE SET
    message = excluded.message, archived_at = NULL, event = NULL
WHERE m.message <> excluded.message
"""
    """Save a log message; a provisional archived copy of another message at its index is
    replaced."""
    unmark_stale: str = """
UPDATE {messages} SET archived_at = NULL, event = NULL WHERE thread_id = ? AND event > ?
"""
    """Forget archive marks of events the saved state does not have (a stale writer's)."""
    unmark_outside: str = """
UPDATE {messages} SET archived_at = NULL, event = NULL
WHERE thread_id = ? AND event = ? AND (idx < ? OR idx >= ?)
"""
    """Forget marks of a new event's number outside its folded range (a stale writer's)."""
    mark_folded: str = """
UPDATE {messages} SET archived_at = COALESCE(archived_at, ?), event = ?
WHERE thread_id = ? AND idx >= ? AND idx < ? AND (event IS NULL OR event <> ?)
"""
    """Mark a new compaction's segment archived by it (when the engine wrote no archive)."""
    save_state: str = """
INSERT INTO {states} (thread_id, version, length, events, cleared, retired, ledger, state, saved_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (thread_id) DO UPDATE SET
    version = excluded.version, length = excluded.length, events = excluded.events,
    cleared = excluded.cleared, retired = excluded.retired, ledger = excluded.ledger,
    state = excluded.state, saved_at = excluded.saved_at
"""
    """The saved state's row: its new version, counters and JSON (the live summary)."""
    save_cleared: str = """
INSERT INTO {cleared} (thread_id, number, mark) VALUES (?, ?, ?)
ON CONFLICT (thread_id, number) DO UPDATE SET mark = excluded.mark
"""
    """One cleared mark of the saved state; ``states.cleared`` counts them (NULL for a row of the
    first layout, whose marks are in its JSON)."""
    save_tombstone: str = """
INSERT INTO {retired} (thread_id, number, tombstone) VALUES (?, ?, ?)
ON CONFLICT (thread_id, number) DO UPDATE SET tombstone = excluded.tombstone
"""
    """One tombstone of the saved summary (``summary.retired``, 0-based); ``states.retired``
    counts them (NULL for a row whose tombstones are in its JSON)."""
    save_entry: str = """
INSERT INTO {ledger} (thread_id, number, entry) VALUES (?, ?, ?)
ON CONFLICT (thread_id, number) DO UPDATE SET entry = excluded.entry
"""
    """One entry of the saved exact-value ledger (0-based); ``states.ledger`` counts them (NULL
    for a row whose ledger is in its JSON)."""
    drop_tombstones: str = "DELETE FROM {retired} WHERE thread_id = ? AND number >= ?"
    """Drop the tombstone rows from a number on (those the saved state has not, or rewrites)."""
    drop_entries: str = "DELETE FROM {ledger} WHERE thread_id = ? AND number >= ?"
    """Drop the ledger rows from a number on, likewise."""
    drop_messages: str = "DELETE FROM {messages} WHERE thread_id = ? AND idx >= ?"
    """Drop the messages beyond the saved log (a stale writer's provisional archive)."""
    drop_events: str = "DELETE FROM {events} WHERE thread_id = ? AND number > ?"
    """Drop the events the saved state does not have."""
    drop_cleared: str = "DELETE FROM {cleared} WHERE thread_id = ? AND number >= ?"
    """Drop the cleared marks the saved state does not have."""
    head: str = (
        "SELECT version, length, events, cleared, retired, ledger FROM {states} WHERE thread_id = ?"
    )
    """The saved state's counters, which a save reads first."""
    last_message: str = "SELECT message FROM {messages} WHERE thread_id = ? AND idx = ?"
    """One stored message (the saved log's last, which a save must extend)."""
    state: str = (
        "SELECT version, length, events, cleared, retired, ledger, state FROM {states} "
        "WHERE thread_id = ?"
    )
    """The saved state's row: counters and JSON (then its log, events, marks, tombstones and
    ledger)."""
    log: str = "SELECT message FROM {messages} WHERE thread_id = ? AND idx < ? ORDER BY idx"
    """The saved log's messages, in order."""
    log_range: str = (
        "SELECT message FROM {messages} WHERE thread_id = ? AND idx >= ? AND idx < ? ORDER BY idx"
    )
    """The saved log's messages ``[start, end)``, in order."""
    event_rows: str = (
        "SELECT event FROM {events} WHERE thread_id = ? AND number <= ? ORDER BY number"
    )
    """The saved state's events, in order."""
    mark_rows: str = "SELECT mark FROM {cleared} WHERE thread_id = ? AND number < ? ORDER BY number"
    """The saved state's cleared marks, in order."""
    tombstone_rows: str = (
        "SELECT tombstone FROM {retired} WHERE thread_id = ? AND number < ? ORDER BY number"
    )
    """The saved summary's tombstones, in order."""
    entry_rows: str = (
        "SELECT entry FROM {ledger} WHERE thread_id = ? AND number < ? ORDER BY number"
    )
    """The saved ledger's entries, in order."""
    committed: str = "SELECT length, events FROM {states} WHERE thread_id = ?"
    """The saved log length and event count, which an archive write checks."""
    saved_key: str = "SELECT version, length, events, saved_at FROM {states} WHERE thread_id = ?"
    """What tells one save of the thread from another (see `Updating`)."""
    some_threads: str = "SELECT thread_id FROM {states} LIMIT 6"
    """A few saved thread ids, for the message about an unknown one."""
    archived: str = (
        "SELECT idx, message, archived_at, event FROM {messages} WHERE thread_id = ? "
        "AND archived_at IS NOT NULL AND idx >= ? AND idx < ? ORDER BY idx"
    )
    """Archived entries of a log range, in order."""
    events: str = "SELECT event FROM {events} WHERE thread_id = ? ORDER BY number"
    """Every archived event of the thread, in order."""
    archived_from: str = (
        "SELECT idx, message, archived_at, event FROM {messages} WHERE thread_id = ? "
        "AND archived_at IS NOT NULL AND idx >= ? ORDER BY idx LIMIT ?"
    )
    """The next archived entries from an index on, in order (what ``search`` reads, a batch at
    a time: matching happens in Python, with `progsum.store._archive.fold`)."""
    record_save: str = """
INSERT INTO {saves} AS s (thread_id, version, length, token) VALUES (?, ?, ?, ?)
ON CONFLICT (thread_id, version) DO UPDATE SET length = excluded.length, token = excluded.token
"""
    """The save ledger's row of a save: the version it wrote, the log length it was based on
    and the digest of what it wrote (`progsum.store._outcome`)."""
    prune_saves: str = "DELETE FROM {saves} WHERE thread_id = ? AND version <= ?"
    """Forget the ledger rows of old versions."""
    saved_as: str = "SELECT length, token FROM {saves} WHERE thread_id = ? AND version = ?"
    """The ledger's row of one version: what tells whether a given save wrote it."""

    def spelled(self, dialect: Dialect) -> Statements:
        """Every statement as ``dialect`` spells it."""
        fields = dataclasses.fields(self)
        return Statements(**{f.name: dialect.spell(getattr(self, f.name)) for f in fields})
