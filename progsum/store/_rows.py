"""The stored forms of a conversation: messages, states and marks as JSON text, and back.

Pure functions shared by both SQL stores. A message row holds the JSON of `to_record` (what
`progsum.store._archive.matches` searches); a state row holds `ConversationState.to_dict` without
the log, the events, the cleared marks, the summary's tombstones and the exact-value ledger,
which are rows of their own, written once each, so a save costs O(what is new), not O(history):
the state row is the live summary. `state_data` puts a saved state back together from what a
store read, and refuses a thread whose rows do not add up.

An archived message row also holds its recall terms (`indexed`: the terms of its
`progsum.recall._terms.document`, space-joined, and their count), which each store's full-text
index reads; `candidate` counts a query's terms in that text as `progsum.recall._rank` needs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any, NamedTuple

from progsum.errors import ArchiveError
from progsum.judge._values import StatedValue
from progsum.messages._formats import to_record
from progsum.recall._rank import Candidate
from progsum.recall._terms import document, terms
from progsum.state._cleared import Cleared
from progsum.state._conversation import ConversationState
from progsum.state._persist import entry_data
from progsum.store._archive import ArchivedMessage, escaped, stored_text
from progsum.summary._schema import Tombstone

__all__ = [
    "SavedHead",
    "SavedRows",
    "archived",
    "candidate",
    "dump",
    "dump_entry",
    "dump_mark",
    "dump_state",
    "dump_tombstone",
    "escaped",
    "indexed",
    "plain",
    "state_data",
]

_SHOWN = 60
"""Characters of a damaged row shown in the message."""


class SavedHead(NamedTuple):
    """What a save reads first of the saved state: its counters and its last message."""

    version: int
    length: int
    events: int
    cleared: int | None
    last: str | None
    """The stored text of message ``length - 1`` (None: no message, or none stored)."""
    retired: int | None = 0
    """Tombstone rows of the saved state; None for a row whose tombstones are in its JSON."""
    ledger: int | None = 0
    """Ledger rows of the saved state; None for a row whose ledger is in its JSON."""


class SavedRows(NamedTuple):
    """What a store read of one saved state: its row, its log, its event and mark rows."""

    version: int
    length: int
    """Messages of the saved log (``states.length``)."""
    state: str
    """The state row's JSON (`dump_state`)."""
    stored: int
    """Message rows found below ``length``."""
    log: str
    """Those rows as one JSON array, in log order."""
    events: int
    """Events of the saved state (``states.events``)."""
    event_rows: list[str]
    """The event rows numbered up to ``events``, in order."""
    cleared: int | None
    """Cleared marks of the saved state; None for a row whose marks are in its JSON."""
    mark_rows: list[str]
    """The mark rows numbered below ``cleared``, in order."""
    retired: int | None = None
    """Tombstones of the saved state; None for a row whose tombstones are in its JSON."""
    tombstone_rows: list[str] = []  # noqa: RUF012 - a NamedTuple's default, never mutated
    """The tombstone rows numbered below ``retired``, in order."""
    ledger: int | None = None
    """Ledger entries of the saved state; None for a row whose ledger is in its JSON."""
    entry_rows: list[str] = []  # noqa: RUF012 - likewise
    """The ledger rows numbered below ``ledger``, in order."""


def dump(message: Any) -> str:  # noqa: ANN401 - messages are provider dicts or SDK objects
    """The stored text of a message (the JSON `progsum.store._archive.matches` searches)."""
    return stored_text(to_record(message))


def dump_state(state: ConversationState[Any]) -> str:
    """`ConversationState.to_dict` without what is stored in rows of its own, as JSON.

    That is the log, the events, the cleared marks, the summary's tombstones and the ledger.
    Rows saved by earlier layouts kept some of these in the JSON; `state_data` reads every
    layout.
    """
    data = state.to_dict(log=False, events=False, cleared=False, retired=False, ledger=False)
    return escaped(json.dumps(data, ensure_ascii=False))


def dump_tombstone(tombstone: Tombstone) -> str:
    """The stored text of one tombstone (an object of ``summary.retired`` in the state's JSON)."""
    return escaped(json.dumps(tombstone.model_dump(mode="json"), ensure_ascii=False))


def dump_entry(entry: StatedValue) -> str:
    """The stored text of one ledger entry (the list the state's JSON holds)."""
    return escaped(json.dumps(entry_data(entry), ensure_ascii=False))


def dump_mark(mark: Cleared) -> str:
    """The stored text of one cleared mark (the list `ConversationState.to_dict` writes)."""
    return escaped(json.dumps(list(mark), ensure_ascii=False))


def plain(message: object) -> bool:
    """Whether ``message`` is the JSON a load would give back for it: equal, and of JSON types."""
    if type(message) is not dict:
        return False
    try:
        return bool(json.loads(dump(message)) == message) and _json_typed(message)
    except (TypeError, ValueError):
        return False


def _json_typed(value: object) -> bool:
    """Whether ``value`` is built from JSON's own types only (no tuples, subclasses or objects)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _json_typed(v) for k, v in value.items())  # type: ignore[attr-defined]
    if kind is list:
        return all(_json_typed(v) for v in value)  # type: ignore[attr-defined]
    return kind in (str, int, float, bool, type(None))


def state_data(
    thread_id: str, saved: SavedRows, *, where: object, medium: str
) -> tuple[int, dict[str, Any]]:
    """The thread's version and `ConversationState.to_dict` data, from the rows a store read.

    Args:
        thread_id: The conversation's thread id.
        saved: What the store read.
        where: The store, as error messages name it.
        medium: What holds the store ("file", "database"), as the damage message names it.

    Raises:
        ArchiveError: the rows do not add up to the saved state, or one is not the JSON a save
            writes (a damaged store).
    """

    def damaged(problem: str) -> ArchiveError:
        return ArchiveError(
            f"thread {thread_id!r} in {where} is damaged: {problem}; restore the {medium} from "
            "a backup"
        )

    def parsed(text: str, what: str) -> Any:  # noqa: ANN401 - JSON
        try:
            return json.loads(text)
        except ValueError as exc:
            raise damaged(f"{what} is not valid JSON ({exc})") from exc

    def numbered(rows: list[str], count: int, what: str) -> list[Any]:
        """The saved state's ``count`` events, marks, ... from their rows (JSON, in order)."""
        if len(rows) != count:
            raise damaged(f"its state has {count} {what} but {len(rows)} are stored")
        return [parsed(row, f"a row of its {what}") for row in rows]

    if saved.stored != saved.length:
        raise damaged(f"its state has {saved.length} messages but {saved.stored} are stored")
    data = parsed(saved.state, "its state row")
    if not isinstance(data, dict):
        raise damaged(f"its state row is not a JSON object but {_brief(data)}")
    if not isinstance(data.get("summary"), dict | None):
        raise damaged(f"the summary in its state row is not a JSON object but {_brief(data)}")
    data["log"] = parsed(saved.log, "a row of its messages")
    if "events" not in data:  # a row of the current layout: the events are rows only
        data["events"] = numbered(saved.event_rows, saved.events, "events")
    if saved.cleared is not None:  # the marks are rows (NULL: in the JSON, the first layout)
        data["cleared"] = numbered(saved.mark_rows, saved.cleared, "cleared blocks")
    if saved.retired is not None:  # the tombstones are rows (NULL: in the JSON, older layouts)
        rows = numbered(saved.tombstone_rows, saved.retired, "tombstones")
        if data.get("summary") is not None:
            data["summary"]["retired"] = rows
        elif rows:
            raise damaged(f"its state has no summary but {len(rows)} tombstones are stored")
    if saved.ledger is not None:  # the ledger is rows (NULL: in the JSON, older layouts)
        data["ledger"] = numbered(saved.entry_rows, saved.ledger, "ledger entries")
    return int(saved.version), data


def _brief(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def archived(
    thread_id: str,
    row: tuple[int, str, Any, int | None],
    timestamp: Callable[[Any], datetime],
) -> ArchivedMessage:
    """An archived message from its row ``(idx, message, archived_at, event)``.

    ``timestamp`` reads the row's time as an aware UTC datetime (each driver returns its own).
    """
    idx, message, archived_at, event = row
    return ArchivedMessage(thread_id, idx, json.loads(message), timestamp(archived_at), event)


def indexed(text: str) -> tuple[str, int]:
    """The recall terms of a stored message: its document's terms joined by spaces, and how many.

    No term holds a space (a term is a run of word characters), so the text splits back into
    exactly these terms, and a full-text tokenizer that splits on spaces only sees them as they
    are.
    """
    found = terms(document(json.loads(text)))
    return " ".join(found), len(found)


def candidate(index: int, length: int, text: str, query: Collection[str]) -> Candidate:
    """A ranked message: how often each ``query`` term occurs in its terms ``text`` (`indexed`)."""
    counts = Counter(term for term in text.split(" ") if term in query)
    return Candidate(index, counts, length)
