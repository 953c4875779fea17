"""``save`` of the SQL stores: one transaction per save, recognised by the ledger if retried.

A save reads the saved state's counters and last message under the thread's write lock, checks
the version and that the new state extends the saved log, writes what is new (the messages
appended since, the new events, cleared marks, tombstones and ledger entries
(`progsum.store._history`), one JSON row for the rest: the live summary) and reconciles the
archive with it, and records itself in the save ledger (`progsum.store._outcome`). Every save is
a single transaction: after a crash at any point the thread is at its old version or its new
one, never in between, and a save against a stale version raises `ConflictError` and writes
nothing, unless it is the retry of a save that committed, which returns that save's version.

When a save's answer is lost after its COMMIT was sent, `Saving` asks the ledger whether it
committed (`progsum.store._outcome.settle`), returns its version if so, and otherwise raises an
`ArchiveError` that says "not committed" or "unknown, retry is safe".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from progsum.errors import ArchiveError, ConfigError, ConflictError
from progsum.state._conversation import ConversationState, require_state
from progsum.store import _outcome as outcome
from progsum.store._archive import check_thread
from progsum.store._history import History, Remembered, history, kept
from progsum.store._outcome import KEEP, PRUNE_EVERY, Pending, Save, digest
from progsum.store._rows import SavedHead, dump, dump_entry, dump_mark, dump_state, dump_tombstone
from progsum.store._statements import C, Dialect, Statements
from progsum.store._updating import Stored, check_version

__all__ = ["STORE_LOGGER", "Saving"]

STORE_LOGGER = logging.getLogger("progsum.store")

T = TypeVar("T")


class Saving(Generic[C]):
    """``save`` over a store's connections, and the retry of an update whose save was unknown."""

    dialect: ClassVar[Dialect]
    sql: ClassVar[Statements]
    where: str
    timeout: float
    """Seconds the store waits for the database, and tries to learn a lost save's outcome."""
    remedy: ClassVar[str]
    """What a failure message asks for before a retry."""

    if TYPE_CHECKING:  # provided by `progsum.store._sql.SQLStore` and the store classes

        def _writing(self, thread_id: str) -> AbstractContextManager[C]:
            """A write transaction in which the writers of ``thread_id`` queue."""

        def _locked(self, thread_id: str, wait: float) -> AbstractContextManager[C]:
            """A transaction holding ``thread_id``'s write lock, waiting at most ``wait`` s."""

        def _executemany(self, db: C, sql: str, rows: list[tuple[Any, ...]]) -> None:
            """Run ``sql`` once per row of ``rows`` in the current transaction."""

        def _read_head(self, db: C, thread_id: str) -> SavedHead | None:
            """The saved state's counters and last message (None: never saved)."""

        def _failure(self, action: str, exc: BaseException) -> str:
            """What failed, in one line: the action, the store and the driver's reason."""

        def _errors(self, action: str) -> AbstractContextManager[None]:
            """Turn the driver's failures into ArchiveError."""

        @property
        def _failures(self) -> tuple[type[BaseException], ...]:
            """The driver's exception classes."""

    def save(self, state: ConversationState[Any], *, expected_version: int | None) -> int:
        """Save ``state`` under ``state.thread_id`` and return the thread's new version.

        Only the messages appended since the stored state are written. Everything happens in one
        transaction: on any failure the stored state is the old one. A retry of a save that
        committed (the same state, the same ``expected_version``) writes nothing and returns the
        version that save wrote; so does a save whose answer was lost but which committed.

        Args:
            state: The state; it must extend the stored one (the log is append-only).
            expected_version: The version it was loaded at, or None to create a new thread.

        Raises:
            ConfigError: the state has no thread id (or one no store can hold), is shorter than
                the stored log or differs from it, or ``expected_version`` names a thread that
                was never saved.
            ConflictError: another writer saved the thread since (or created it, for None);
                nothing was written.
            ArchiveError: the write failed; the message says whether it was not committed or
                whether that is unknown (then a retry is safe).
        """
        return self._save(state, expected_version, ("thread", threading.get_ident()))

    def _save(
        self, state: ConversationState[Any], expected_version: int | None, caller: Hashable
    ) -> int:
        """`save`, remembering an unknown outcome for ``caller``'s retry (see `_retried`)."""
        require_state(state)
        check_version(expected_version)
        thread_id = state.thread_id
        if thread_id is None:
            raise ConfigError(
                "the state has no thread_id, so the store cannot file it; build it with "
                "ConversationState(messages, thread_id='...')"
            )
        check_thread(thread_id)
        record = dump_state(state)
        now = self.dialect.now()
        action = f"save thread {thread_id!r}"
        sent: list[Save] = []  # the save, once its COMMIT is about to be sent
        try:
            with self._errors(action), self._writing(thread_id) as db:
                version = self._save_rows(db, state, (expected_version, record, now), sent)
        except ArchiveError as error:
            cause = error.__cause__
            if not sent or not isinstance(cause, self._failures):
                raise
            self._remembered().forget(thread_id)
            version = self._lost_answer(action, cause, sent[0], state, caller)
        self._remembered().keep(thread_id, version, state)
        STORE_LOGGER.debug(
            "saved thread %s version %d: %d messages, %d events",
            thread_id,
            version,
            len(state),
            len(state.events),
        )
        return version

    def _save_rows(
        self,
        db: C,
        state: ConversationState[Any],
        given: tuple[int | None, str, object],
        sent: list[Save],
    ) -> int:
        """The save's statements; the version it wrote (or the retried save wrote).

        ``given`` is the expected version, the state row's JSON and the time; ``sent`` gets the
        save once its COMMIT is about to be sent.
        """
        expected, record, now = given
        thread_id = str(state.thread_id)
        head = self._read_head(db, thread_id)
        version, length, events, cleared, last, *_ = head or SavedHead(0, 0, 0, 0, None)
        base = expected or 0
        stale = head is not None and (expected is None or expected != version)
        if stale and self._recognised(db, state, base, record):
            return base + 1  # the retry of a save that committed: nothing to write
        _check_version(thread_id, expected, head is not None, version)
        _check_extends(state, thread_id, length, last)
        new = [dump(state.log[i]) for i in range(length, len(state))]
        self._write_log(db, state, new, length=length, events=events, now=now)
        marks, sql = state.cleared, self.sql
        self._executemany(
            db,
            sql.save_cleared,
            [(thread_id, n, dump_mark(marks[n])) for n in range(cleared or 0, len(marks))],
        )
        db.execute(sql.drop_cleared, (thread_id, len(marks)))
        retired, ledger = self._write_history(db, state, head)
        version = int(version)
        counts = (len(state), len(state.events), len(marks), retired, ledger)
        db.execute(sql.save_state, (thread_id, version + 1, *counts, record, now))
        save = Save(thread_id, version, length, digest(version, length, state, record, new))
        db.execute(sql.record_save, (thread_id, save.version, length, save.token))
        if save.version % PRUNE_EVERY == 0:
            db.execute(sql.prune_saves, (thread_id, save.version - KEEP))
        sent.append(save)
        return save.version

    def _write_log(
        self,
        db: C,
        state: ConversationState[Any],
        new: Sequence[str],
        *,
        length: int,
        events: int,
        now: object,
    ) -> None:
        """Write what is new since the saved state, and reconcile the archive.

        ``new`` is the stored text of the messages from ``length`` on. Any archive write the
        saved state does not account for comes from a writer that lost the race (it will get a
        ConflictError): rows beyond the new log are dropped, and marks of events the state does
        not have, or outside a new event's folded range, are cleared.
        """
        sql, thread_id, count = self.sql, str(state.thread_id), len(state.events)
        new_events = state.events[events:]
        folded = [
            (e.number, *e.folded)
            for e in new_events
            if e.outcome == "compacted" and e.folded is not None
        ]
        rows = [(thread_id, length + offset, text) for offset, text in enumerate(new)]
        self._executemany(db, sql.save_message, rows)
        db.execute(sql.drop_messages, (thread_id, len(state)))
        db.execute(sql.unmark_stale, (thread_id, count))
        db.execute(sql.drop_events, (thread_id, count))
        rows = [(thread_id, e.number, e.model_dump_json()) for e in new_events]
        self._executemany(db, sql.put_event, rows)
        self._executemany(db, sql.unmark_outside, [(thread_id, n, a, b) for n, a, b in folded])
        self._executemany(db, sql.mark_folded, [(now, n, thread_id, a, b, n) for n, a, b in folded])

    def _write_history(
        self, db: C, state: ConversationState[Any], head: SavedHead | None
    ) -> tuple[int, int]:
        """Write the tombstone and ledger rows that differ from the stored ones; their counts.

        What is stored is known when this store object saved or loaded the saved version
        (`progsum.store._history`); otherwise, or for a row of an older layout (its history in
        its JSON), every row is written.
        """
        sql, thread_id, new = self.sql, str(state.thread_id), history(state)
        stored = History((), ())
        if head is not None:
            known = self._remembered().at(thread_id, int(head.version))
            stored = History(
                known.retired if known is not None and head.retired is not None else (),
                known.ledger if known is not None and head.ledger is not None else (),
            )
        retired = self._write_rows(
            db,
            (sql.save_tombstone, sql.drop_tombstones),
            thread_id,
            (stored.retired, new.retired),
            dump_tombstone,
        )
        ledger = self._write_rows(
            db,
            (sql.save_entry, sql.drop_entries),
            thread_id,
            (stored.ledger, new.ledger),
            dump_entry,
        )
        return retired, ledger

    def _write_rows(
        self,
        db: C,
        statements: tuple[str, str],
        thread_id: str,
        rows: tuple[Sequence[Any], Sequence[Any]],
        dumped: Callable[[Any], str],
    ) -> int:
        """Write the rows of a numbered sequence from the first that differs; drop those beyond.

        ``statements`` saves one row and drops the rows from a number on; ``rows`` is what is
        stored and what is to be; ``dumped`` gives a row's stored text. Returns the new count.
        """
        save, drop = statements
        stored, new = rows
        start = kept(stored, new)
        written = [(thread_id, n, dumped(new[n])) for n in range(start, len(new))]
        self._executemany(db, save, written)
        db.execute(drop, (thread_id, len(new)))
        return len(new)

    def _remembered(self) -> Remembered:
        return self._own("_remembered_history", Remembered)

    def _recognised(self, db: C, state: ConversationState[Any], base: int, record: str) -> bool:
        """Whether the ledger says version ``base + 1`` was written by this very save."""
        row = db.execute(self.sql.saved_as, (state.thread_id, base + 1)).fetchone()
        if row is None or row[0] > len(state):
            return False
        length, token = int(row[0]), row[1]
        new = [dump(state.log[i]) for i in range(length, len(state))]
        return bool(token == digest(base, length, state, record, new))

    # -- lost answers -----------------------------------------------------------------------------

    def _lost_answer(
        self,
        action: str,
        exc: BaseException,
        save: Save,
        state: ConversationState[Any],
        caller: Hashable,
    ) -> int:
        """After ``save``'s answer was lost: its version if it committed, else the error."""
        committed = self._settle(save, state)
        if committed:
            self._log_committed(save)
            return save.version
        failure, medium = self._failure(action, exc), self.dialect.medium
        if committed is None:
            self._pending().keep(caller, save, state)
            raise ArchiveError(outcome.unknown(failure, medium, self.timeout, save)) from exc
        raise ArchiveError(outcome.not_committed(failure, medium, self.remedy)) from exc

    def _settle(self, save: Save, state: ConversationState[Any]) -> bool | None:
        """Whether ``save`` of ``state`` committed; None when the store cannot find out in time.

        The ledger's row of the version the save writes says so. Without that row, the stored
        log does (`_in_log`): later saves may have pruned the row (`outcome.KEEP`) while this
        store could not reach the database.
        """

        def ask(wait: float) -> bool:
            action = f"find out whether a save of thread {save.thread_id!r} committed"
            with self._errors(action), self._locked(save.thread_id, wait) as db:
                row = db.execute(self.sql.saved_as, (save.thread_id, save.version)).fetchone()
                if row is not None:
                    return bool(row[1] == save.token)
                return self._in_log(db, save, state)

        return outcome.settle(ask, self.timeout)

    def _in_log(self, db: C, save: Save, state: ConversationState[Any]) -> bool:
        """Whether the messages ``save`` appended stand in the stored log where it wrote them.

        Asked when the ledger holds no row of the version the save writes: either no save wrote
        that version (the thread is still at the save's base) or later saves pruned the row. A
        committed save's messages stand at the positions it wrote, and the log is append-only,
        so the same messages there mean the change is stored (whoever wrote them: a retry would
        store them twice). A save that appended no message is taken as not committed: applying
        its change again appends nothing twice.
        """
        head = self._read_head(db, save.thread_id)
        if head is None or head.version <= save.base or len(state) <= save.length:
            return False
        new = [dump(state.log[i]) for i in range(save.length, len(state))]
        end = save.length + len(new)
        rows = db.execute(self.sql.log_range, (save.thread_id, save.length, end)).fetchall()
        return [row[0] for row in rows] == new

    def _log_committed(self, save: Save) -> None:
        STORE_LOGGER.warning(
            "the answer to the COMMIT of the save of thread %r (version %d to %d) was lost; the "
            "%s says it committed, so the save returns version %d",
            save.thread_id,
            save.base,
            save.version,
            self.dialect.medium,
            save.version,
        )

    def _pending(self) -> Pending:
        return self._own("_pending_saves", Pending)

    def _own(self, name: str, make: Callable[[], T]) -> T:
        """The store object's own ``name`` attribute, made by ``make`` on first use.

        The stores' ``__init__`` is theirs, not this class's.
        """
        found = self.__dict__.get(name)
        if found is None:
            found = self.__dict__.setdefault(name, make())
        return found  # type: ignore[no-any-return]  # made by ``make`` just above

    def _retried(self, thread_id: str, caller: Hashable) -> Stored[Any] | None:
        """The save of ``caller``'s last update of ``thread_id`` if it was unknown and committed.

        ``update`` calls it first: its retry after an "unknown" error returns that save instead
        of applying the change again; None (not committed, or no such save) lets it run.

        Raises:
            ArchiveError: the outcome is still unknown (the retry stays recognisable).
        """
        found = self._pending().take(thread_id, caller)
        if found is None:
            return None
        save, state = found
        committed = self._settle(save, state)
        if committed is None:
            self._pending().keep(caller, save, state)
            failure = (
                f"could not find out whether the last save of thread {thread_id!r} in "
                f"{self.where} committed"
            )
            raise ArchiveError(outcome.unknown(failure, self.dialect.medium, self.timeout, save))
        if not committed:
            return None
        self._log_committed(save)
        self._remembered().keep(thread_id, save.version, state)
        return Stored(state, save.version)


def _check_version(thread_id: str, expected: int | None, exists: bool, actual: int) -> None:
    if expected is None:
        if exists:
            raise ConflictError(thread_id, expected=0, actual=actual)
        return
    if not exists:
        raise ConfigError(
            f"thread {thread_id!r} was never saved, so it has no version {expected}; create it "
            "with expected_version=None"
        )
    if expected != actual:
        raise ConflictError(thread_id, expected=expected, actual=actual)


def _check_extends(
    state: ConversationState[Any], thread_id: str, length: int, last: str | None
) -> None:
    """Refuse a state that does not extend the stored log (shorter, or another last message)."""
    if len(state) < length:
        raise ConfigError(
            f"the state has {len(state)} messages but thread {thread_id!r} has {length} saved; "
            "the log is append-only, so load the thread and append to it"
        )
    if length and last != dump(state.log[length - 1]):
        raise ConfigError(
            f"message {length - 1} of the state differs from the one saved for thread "
            f"{thread_id!r}; a saved state must extend the loaded one, so load it and append"
        )
