"""progsum as an OpenAI Agents SDK session: ``Runner.run(agent, text, session=ProgsumSession())``.

A `ProgsumSession` wraps any Agents SDK ``Session`` (``SQLiteSession``, SQLAlchemy, Redis, ...),
which keeps every item the runner adds: the log, never rewritten. What ``get_items`` hands the
runner is progsum's view of it (`progsum.messages.responses.render_responses`): the summary header
as a developer message, the first task message and the verbatim tail, with function calls, their
outputs and reasoning items (ids and ``encrypted_content`` intact) kept together. The agent's own
``instructions`` are sent by the SDK before all of it, unchanged.

progsum's own state (summary, cutoff, events; no items) is saved after each compaction in a second
session of the same backend (``state_session``; `ProgsumSession.sqlite` sets both up in one SQLite
file), so a new process resumes the summary instead of summarizing again. Appending is
O(new items); the first ``get_items`` of a process reads the stored items once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from progsum.integrations import missing

try:
    from agents.memory import Session, SessionABC, SQLiteSession
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing("the OpenAI Agents SDK (openai-agents)", "openai-agents")) from exc

from progsum.engine.compactor import Compactor
from progsum.render.responses import render_responses
from progsum.state.conversation import ConversationState

__all__ = ["STATE_ITEM", "ProgsumSession"]

STATE_ITEM = "progsum_state"
"""The ``type`` of the one item progsum keeps in its state session."""


class ProgsumSession(SessionABC):
    """An Agents SDK session whose history progsum compacts; the stored items stay whole.

    Example:
        ``session = ProgsumSession.sqlite("user-42", "chats.db", compactor=compactor)``, then
        ``await Runner.run(agent, "Plan my trip", session=session)`` each turn.

    Args:
        session_id: The conversation's id (also progsum's ``thread_id``).
        underlying_session: Where the items are stored (every one of them).
        compactor: The progsum compactor.
        state_session: Where progsum's state is saved after each compaction (None: memory only,
            so a new process summarizes again).
    """

    def __init__(
        self,
        session_id: str,
        underlying_session: Session,
        *,
        compactor: Compactor[Any],
        state_session: Session | None = None,
    ) -> None:
        if not isinstance(compactor, Compactor):
            raise TypeError(f"compactor={compactor!r} is not a progsum.Compactor; pass one")
        self.session_id = session_id
        self.session_settings = getattr(underlying_session, "session_settings", None)
        self.underlying_session = underlying_session
        self.state_session = state_session
        self.compactor = compactor
        self._state: ConversationState[Any] | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def sqlite(cls, session_id: str, db_path: str, *, compactor: Compactor[Any]) -> ProgsumSession:
        """Items and progsum's state in one SQLite file (``SQLiteSession`` for both)."""
        return cls(
            session_id,
            SQLiteSession(session_id, db_path),
            compactor=compactor,
            state_session=SQLiteSession(f"{session_id}:progsum", db_path),
        )

    @property
    def state(self) -> ConversationState[Any] | None:
        """Progsum's state as of the last call (None before the first)."""
        return self._state

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items to send: header, first task message and verbatim tail (latest ``limit``)."""
        async with self._lock:
            state = await self._compacted(await self._load())
            items = [dict(item) for item in render_responses(state)]
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        """Store the items, then compact when the policy says so.

        Raises:
            MessageFormatError: an item is malformed; nothing was stored.
        """
        async with self._lock:
            state = (await self._load()).extend(items)  # checks the items before storing them
            await self.underlying_session.add_items(items)
            self._state = state
            await self._compacted(state)

    async def pop_item(self) -> Any:  # noqa: ANN401 - a Responses input item
        """Remove the newest stored item; progsum's state is rebuilt on the next call."""
        async with self._lock:
            item = await self.underlying_session.pop_item()
            self._state = None
        return item

    async def clear_session(self) -> None:
        """Remove every item and progsum's state."""
        async with self._lock:
            await self.underlying_session.clear_session()
            if self.state_session is not None:
                await self.state_session.clear_session()
            self._state = None

    # -- progsum's state ----------------------------------------------------------------------

    async def _load(self) -> ConversationState[Any]:
        if self._state is not None:
            return self._state
        items = await self.underlying_session.get_items()
        stored = await self._stored()
        length = int(stored["length"]) if stored else -1
        if stored and 0 < length <= len(items):
            data = dict(stored["state"])
            data["log"] = items[:length]
            state: ConversationState[Any] = ConversationState.from_dict(
                data, schema=self.compactor.schema
            )
            state = state.extend(items[length:])
        else:
            state = ConversationState(items, thread_id=self.session_id)
        self._state = state
        return state

    async def _compacted(self, state: ConversationState[Any]) -> ConversationState[Any]:
        compacted = await self.compactor.amaybe_compact(state)
        self._state = compacted
        if len(compacted.events) != len(state.events) and self.state_session is not None:
            snapshot = {
                "type": STATE_ITEM,
                "length": len(compacted.log),
                "state": compacted.to_dict(log=False),
            }
            await self.state_session.clear_session()
            await self.state_session.add_items([snapshot])  # type: ignore[list-item]  # progsum's own record
        return compacted

    async def _stored(self) -> dict[str, Any] | None:
        if self.state_session is None:
            return None
        for item in reversed(await self.state_session.get_items()):
            record: Any = item  # progsum's own record, not a Responses item
            if isinstance(record, dict) and record.get("type") == STATE_ITEM:
                return record
        return None
