"""Load, change, save: ``update`` and ``aupdate`` of the SQL stores, retried on a lost race.

A save names the version it was loaded at and raises `ConflictError` when another writer saved
the thread since; `Updating.update` then reloads and applies the change again, after a short
jittered wait, so two workers never fold the same messages twice.

When a save's answer was lost and the store could not find out whether it committed, ``update``
raises an `ArchiveError` that says so; the retry of that update, from the same calling thread or
asyncio task, first asks again, and returns that save instead of applying the change a second
time if it committed (`progsum.store._outcome`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import random
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Hashable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar, cast

from progsum._driving import adrive, drive
from progsum.errors import ArchiveError, ConfigError, ConflictError
from progsum.state._conversation import ConversationState
from progsum.store._archive import check_thread
from progsum.store._rows import plain
from progsum.summary._schema import Summary
from progsum.summary._schema import SummaryT as S

T = TypeVar("T")

__all__ = [
    "REMEMBERED",
    "Stored",
    "Updating",
    "backoff",
    "check_attempts",
    "check_change",
    "check_version",
]


class Stored(NamedTuple, Generic[S]):
    """A saved state and the store's version of it (pass it to the next save)."""

    state: ConversationState[S]
    version: int
    """The store's counter for the thread: 1 after the first save, then 2, 3, ..."""


REMEMBERED = 16
"""Conversations whose last save each thread remembers for its next update (the most recent)."""


class _Recent(threading.local):
    """This thread's last state saved by ``update``, per thread id, with its saved row's key."""

    def __init__(self) -> None:
        self.states: dict[str, tuple[type, Stored[Any], tuple[object, ...]]] = {}


class Updating:
    """``update``/``aupdate`` for a store with ``load`` and ``save`` (SQLite and PostgreSQL).

    Both are one sequence (`_updating`) that yields its store work, the change and the pauses;
    ``update`` performs them in line, ``aupdate`` awaits them (the store work in worker threads).

    Each thread that runs the store work (the caller's for ``update``, a worker for ``aupdate``)
    remembers the state its last save wrote; the next update of that thread id there starts
    from it when the saved row is still that save's (the same version, length, event count and
    time), instead of reloading the whole log. Only states whose messages are the plain JSON a
    load would give back are remembered, so the change sees what it would have loaded.
    """

    if TYPE_CHECKING:  # provided by the store classes

        def _saved_key(self, thread_id: str) -> tuple[object, ...] | None:
            """The saved row's version, length, event count and time (None: never saved)."""

        def load(self, thread_id: str, *, schema: type[S] = ...) -> Stored[S]:
            """The thread's saved state and its version."""

        def _save(
            self, state: ConversationState[Any], expected_version: int | None, caller: Hashable
        ) -> int:
            """Save ``state`` if the stored version is still ``expected_version``."""

        def _retried(self, thread_id: str, caller: Hashable) -> Stored[Any] | None:
            """``caller``'s last save of ``thread_id``, if it was unknown and it committed."""

        def _queued(self, thread_id: str) -> AbstractContextManager[None]:
            """Hold ``thread_id``'s update lock (`progsum.store._queueing`) while inside."""

    def update(
        self,
        thread_id: str,
        change: Callable[[ConversationState[S]], ConversationState[S]],
        *,
        schema: type[S] = Summary,  # type: ignore[assignment]  # see load
        attempts: int = 5,
    ) -> Stored[S]:
        """Load the thread, apply ``change`` and save; on a conflict, reload and apply it again.

        Writers of one thread take turns: the update holds a lock per thread id from its load to
        its save (threads of a process and, on SQLite, processes on the file, on PostgreSQL
        every worker of the fleet; `progsum.store._queueing`), waiting at most the store's
        ``timeout`` for it before going on without. So a change normally runs once; it may still
        run again after a conflict with a writer that holds no lock (a plain `save`), so it must
        not have side effects that cannot repeat. When it returns the state it was given,
        nothing is saved.

        Args:
            thread_id: The conversation's thread id.
            change: A function from the stored state to the new one, e.g.
                ``lambda state: compactor.maybe_compact(state.append(message))``.
            schema: The summary schema.
            attempts: How many times to try before giving up (1 or more).

        Raises:
            ConflictError: every attempt lost the race to another writer.
            ConfigError: the thread was never saved.
            ArchiveError: the store failed; the message says whether the save was not committed
                or whether that is unknown (then retrying this update is safe: if the save
                committed, the retry returns it without applying ``change`` again).
        """
        check_attempts(attempts)
        check_thread(thread_id)
        check_change(change)
        caller = ("thread", threading.get_ident())
        return drive(self._updating(thread_id, change, schema, attempts, caller), _perform)

    async def aupdate(
        self,
        thread_id: str,
        change: Callable[
            [ConversationState[S]], ConversationState[S] | Awaitable[ConversationState[S]]
        ],
        *,
        schema: type[S] = Summary,  # type: ignore[assignment]  # see load
        attempts: int = 5,
    ) -> Stored[S]:
        """Async `update`: ``change`` may be async; the store runs in worker threads.

        The retry of an update whose save had an unknown outcome is recognised from the same
        asyncio task.
        """
        check_attempts(attempts)
        check_thread(thread_id)
        check_change(change)
        caller = ("task", id(asyncio.current_task()))
        return await adrive(self._updating(thread_id, change, schema, attempts, caller), _aperform)

    def _updating(
        self,
        thread_id: str,
        change: Callable[[ConversationState[S]], object],
        schema: type[S],
        attempts: int,
        caller: Hashable,
    ) -> Generator[_Effect, Any, Stored[S]]:
        """`update` and `aupdate` as one sequence: it yields the work, the drivers perform it.

        Store work (`_Work`) runs in line or in a worker thread, the change (`_Change`) is
        called (and awaited when async), a pause (`_Pause`) sleeps; the update lock is released
        from whichever thread performs its release.
        """
        retried = yield _Work(partial(self._retried, thread_id, caller))
        if retried is not None:
            return cast("Stored[S]", retried)
        queue = self._queued(thread_id)
        yield _Work(queue.__enter__)
        try:
            for attempt in range(attempts):
                stored = yield _Work(partial(self._started, thread_id, schema))
                changed = yield _Change(change, stored.state)
                finish = partial(self._finished, thread_id, schema, stored, changed, caller)
                try:
                    saved: Stored[S] = yield _Work(finish)
                except ConflictError:
                    if attempt + 1 == attempts:
                        raise
                else:
                    return saved
                yield _Pause(backoff(attempt))
        finally:
            yield _Work(partial(queue.__exit__, None, None, None))
        raise AssertionError  # pragma: no cover - the loop returns or raises

    def _started(self, thread_id: str, schema: type[S]) -> Stored[S]:
        """The state an attempt starts from: this thread's last save of it, else a load."""
        return self._recalled(thread_id, schema) or self.load(thread_id, schema=schema)

    def _finished(
        self,
        thread_id: str,
        schema: type[S],
        stored: Stored[S],
        changed: ConversationState[S],
        caller: Hashable,
    ) -> Stored[S]:
        """Save ``changed`` over ``stored``, and remember the save for this thread's next update."""
        saved = self._save_changed(thread_id, stored, changed, caller)
        self._remember(thread_id, schema, stored, saved)
        return saved

    def _recent(self) -> _Recent:
        recent = self.__dict__.get("_recent_states")
        if recent is None:
            recent = self.__dict__.setdefault("_recent_states", _Recent())
        return recent  # type: ignore[no-any-return]  # a _Recent, set just above

    def _recalled(self, thread_id: str, schema: type) -> Stored[Any] | None:
        """This thread's remembered state of ``thread_id``, if the saved row is still its save."""
        found = self._recent().states.get(thread_id)
        if found is None or found[0] is not schema:
            return None
        if self._saved_key(thread_id) != found[2]:
            del self._recent().states[thread_id]
            return None
        return found[1]

    def _remember(
        self, thread_id: str, schema: type, before: Stored[Any], saved: Stored[Any]
    ) -> None:
        """Remember ``saved`` when its new messages are plain JSON (what a load gives back)."""
        states = self._recent().states
        states.pop(thread_id, None)
        if saved is before:
            return
        log = saved.state.log
        if not all(plain(log[i]) for i in range(len(before.state), len(log))):
            return
        key = None
        with contextlib.suppress(ArchiveError):  # the save committed: only the memo is lost
            key = self._saved_key(thread_id)
        if key is not None and key[0] == saved.version:
            states[thread_id] = (schema, saved, key)
            while len(states) > REMEMBERED:  # the one updated longest ago goes
                del states[next(iter(states))]

    def _save_changed(
        self,
        thread_id: str,
        stored: Stored[S],
        changed: ConversationState[S],
        caller: Hashable,
    ) -> Stored[S]:
        if changed is stored.state:
            return stored
        if not isinstance(changed, ConversationState) or changed.thread_id != thread_id:
            raise ConfigError(
                f"the change returned {changed!r}, not a ConversationState of thread "
                f"{thread_id!r}; return the state it was given, changed"
            )
        return Stored(changed, self._save(changed, stored.version, caller))


@dataclass(frozen=True, slots=True)
class _Work:
    """Blocking store work: performed in line, or in a worker thread."""

    work: Callable[[], object]


@dataclass(frozen=True, slots=True)
class _Change:
    """The caller's change of ``state``: called, and awaited when it returns an awaitable."""

    change: Callable[[ConversationState[Any]], object]
    state: ConversationState[Any]


@dataclass(frozen=True, slots=True)
class _Pause:
    """A wait after a lost race."""

    seconds: float


_Effect = _Work | _Change | _Pause


def _perform(effect: _Effect) -> object:
    """Perform ``effect`` in line (what it raises, cancellation included, goes to the sequence)."""
    if isinstance(effect, _Work):
        return effect.work()
    if isinstance(effect, _Change):
        return effect.change(effect.state)
    time.sleep(effect.seconds)
    return None


async def _aperform(effect: _Effect) -> object:
    """Await ``effect`` (store work in a worker thread)."""
    if isinstance(effect, _Work):
        return await asyncio.to_thread(effect.work)
    if isinstance(effect, _Change):
        result = effect.change(effect.state)
        return await result if inspect.isawaitable(result) else result
    await asyncio.sleep(effect.seconds)
    return None


def check_attempts(attempts: int) -> None:
    """Refuse an ``attempts`` below 1 (``update`` tries at least once)."""
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ConfigError(f"attempts={attempts!r} must be at least 1; use the default 5")


def check_change(change: object) -> None:
    """Refuse a ``change`` that cannot be called with the stored state."""
    if not callable(change):
        raise ConfigError(
            f"change={change!r} is not callable; pass a function from the stored state to the "
            "new one, e.g. lambda state: compactor.maybe_compact(state.append(message))"
        )


def check_version(expected_version: object) -> None:
    """Refuse an ``expected_version`` that no save of a thread can have written."""
    if expected_version is None:
        return
    if (
        isinstance(expected_version, bool)
        or not isinstance(expected_version, int)
        or expected_version < 1
    ):
        raise ConfigError(
            f"expected_version={expected_version!r} is no version of a thread; pass the version "
            "load() or save() returned (1, 2, ...), or None to create a new thread"
        )


def backoff(attempt: int) -> float:
    """Seconds to wait after a lost race: jittered, doubling from 1 ms, at most 50 ms."""
    return random.uniform(0, min(0.05, 0.001 * 2**attempt))  # noqa: S311 - jitter, not secrecy
