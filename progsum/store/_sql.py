"""One SQL layer under both durable stores: the flows over the statements, written once.

`SQLStore` is what `progsum.store._sqlite.SQLiteStore` and `progsum.store._postgres.PostgresStore`
share: the `progsum.store._archive.Archive` protocol (put, get, search, events), saved states
with optimistic versions (save, load, ``update``: `progsum.store._saving`,
`progsum.store._updating`), the thread list and the Markdown export. Its statements are written
once (`progsum.store._statements`), and a `Dialect` spells them for one database. A store
subclass supplies only its connections: its write transaction (and how the writers of one thread
queue), its read snapshot, how it sends many rows at once, and how its driver's failures read;
it may read a saved state in fewer statements than the portable reads here.

One table holds every log message once, whether the archive wrote it (folded, with the event that
folded it) or a save did (the live tail); a save writes only the messages appended since the last
one, plus one JSON row for the rest of the state.

Archive writes are checked against the saved state when it changes: a worker may archive a segment
and then lose the race to save (it gets `ConflictError`), so each save drops what the archive holds
beyond the new log, clears marks of events the saved state does not have, and marks the segments
its new compactions folded as archived by them. The archive therefore always matches the saved
state, and is complete even when the engine wrote nothing to it first.

Every store answers the same input alike (`progsum.store._archive.check_thread`,
`progsum.store._archive.check_search`), and ``search`` matches in Python with the one folding
every store uses (`progsum.store._archive.fold`): it reads the thread's archived rows in log
order, a batch at a time, until it has ``limit`` matches.

``rank`` (the `progsum.store._archive.Ranker` protocol) answers recall from the database's own
full-text index, so a query reads the postings of its terms, never the whole history. Each
archived message row carries its recall terms (`progsum.store._rows.indexed`), which ``put``
stores in its own transaction for every archived message of the thread that lacks them; the
database clears them whenever a row's message changes, so they always belong to the message
``get`` serves. The index finds the candidates, the counts come from the stored terms, and
`progsum.recall._rank` scores them, so every store ranks exactly as `MemoryArchive` does. A
message archived without ``put`` (a save marking a segment folded) is ranked from its text until
the thread's next ``put`` stores its terms.
"""

from __future__ import annotations

import contextlib
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Generic, Self, cast

from progsum.errors import ArchiveError, ConfigError, MessageFormatError, ProgsumError
from progsum.recall._index import Ranges
from progsum.recall._rank import Candidate, Stats, rank
from progsum.recall._terms import MAX_TERM, asked
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.store import _outcome as outcome
from progsum.store._archive import (
    ArchivedMessage,
    check_range,
    check_search,
    check_segment,
    check_thread,
    fold,
)
from progsum.store._export import markdown
from progsum.store._queueing import ThreadLocks
from progsum.store._rows import (
    SavedHead,
    SavedRows,
    archived,
    candidate,
    dump,
    indexed,
    state_data,
)
from progsum.store._saving import STORE_LOGGER, Saving
from progsum.store._statements import C, Connection, Dialect, Statements
from progsum.store._updating import Stored, Updating
from progsum.summary._schema import BaseSummary, Summary, spec_of
from progsum.summary._schema import SummaryT as S

__all__ = [
    "INDEX_BATCH",
    "SEARCH_BATCH",
    "STORE_LOGGER",
    "Connection",
    "Dialect",
    "SQLStore",
    "Statements",
]

SEARCH_BATCH = 500
"""Archived rows ``search`` reads per statement while it looks for matches."""
INDEX_BATCH = 500
"""Archived rows whose recall terms ``put`` computes per statement that reads them."""
_TERM = re.compile(r"\w+")
"""What a stored recall term is made of (at most `MAX_TERM` of them): a query term of anything
else matches no message, so the full-text query leaves it out."""


class SQLStore(Saving[C], Updating, ABC, Generic[C]):
    """The archive and saved states of many conversations in one SQL database.

    A subclass sets `dialect` and `sql` (its `Statements`, spelled in its dialect) and supplies
    the connections; it may read a saved state in fewer statements (`_read_head`, `_read_saved`,
    with `_loading`). Everything else is here.
    """

    dialect: ClassVar[Dialect]
    sql: ClassVar[Statements]
    where: str
    """The store, as messages name it."""
    timeout: float
    """Seconds a call waits for a connection or a lock before it fails (or, for the update
    lock, goes on without)."""
    remedy: ClassVar[str]
    """What a failure message asks for before a retry ("once the database is reachable ...")."""

    # -- what a database supplies ----------------------------------------------------------------

    @abstractmethod
    def _writing(self, thread_id: str) -> AbstractContextManager[C]:
        """A write transaction in which the writers of ``thread_id`` queue.

        Committed when the block ends, rolled back when it raises.
        """

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[C]:
        """A read-only transaction on one snapshot (for reads of several statements)."""

    @abstractmethod
    def _reading(self) -> AbstractContextManager[C]:
        """A connection for a read of one statement."""

    def _loading(self) -> AbstractContextManager[C]:
        """A connection for `_read_saved`: a snapshot, as it reads several statements."""
        return self._snapshot()

    @abstractmethod
    def _locked(self, thread_id: str, wait: float) -> AbstractContextManager[C]:
        """A transaction holding ``thread_id``'s write lock, waiting at most ``wait`` seconds.

        Once it holds the lock, no earlier write transaction of the thread is still running, so
        what it reads of that transaction is final (`progsum.store._saving`).
        """

    @property
    @abstractmethod
    def _failures(self) -> tuple[type[BaseException], ...]:
        """The driver's exception classes (its failures at run time)."""

    @abstractmethod
    def _failure(self, action: str, exc: BaseException) -> str:
        """What failed, in one line: the action, the store and the driver's reason."""

    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn the driver's failures into ArchiveError naming the store and the action.

        For a call that changed nothing (a read, or a write that failed before its COMMIT was
        sent); `progsum.store._saving` says more when a COMMIT's answer is lost.
        """
        try:
            yield
        except ProgsumError:
            raise
        except self._failures as exc:
            raise ArchiveError(outcome.unchanged(self._failure(action, exc), self.remedy)) from exc
        except (UnicodeError, ValueError, OverflowError) as exc:
            raise ArchiveError(
                f"could not {action} in {self.where}: {type(exc).__name__}: {exc}; nothing was "
                "changed by it; the data could not be stored as it is (report it as a progsum "
                "bug with the message that caused it)"
            ) from exc

    @contextlib.contextmanager
    def _queued(self, thread_id: str) -> Iterator[None]:
        """Hold ``thread_id``'s update lock: this process's threads queue, then other writers.

        Each lock is waited for at most the store's ``timeout`` (in all); without it the update
        goes on optimistically (`progsum.store._queueing`).
        """
        deadline = time.monotonic() + self.timeout
        with ThreadLocks.holding(self.where, thread_id, self.timeout) as had:
            if not had:
                yield
                return
            with self._fleet_queue(thread_id, max(0.0, deadline - time.monotonic())):
                yield

    @abstractmethod
    def _fleet_queue(self, thread_id: str, wait: float) -> AbstractContextManager[bool]:
        """Hold ``thread_id``'s lock among the database's writers, waiting at most ``wait`` s.

        Yields whether it holds it; goes on without when it cannot be had.
        """

    @abstractmethod
    def _executemany(self, db: C, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Run ``sql`` once per row of ``rows`` in the current transaction."""

    @abstractmethod
    def close(self) -> None:
        """Close the connections this process opened; the store reopens them when used again."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the Archive protocol ---------------------------------------------------------------------

    def put(
        self,
        thread_id: str,
        start: int,
        messages: Sequence[Any],
        event: CompactionEvent,
    ) -> None:
        """Archive ``messages`` as log entries ``start, start + 1, ...`` with ``event``.

        Idempotent and durable on return (see `progsum.store._archive.Archive.put`).

        Raises:
            ConfigError: ``thread_id``, ``start``, ``messages`` or ``event`` is invalid.
            ArchiveError: the write failed: nothing of it is stored, or (the message says so)
                its answer was lost, and a retry is safe.
        """
        check_segment(thread_id, start, messages, event)
        now = self.dialect.now()
        rows = [
            (thread_id, start + offset, dump(message), now, event.number)
            for offset, message in enumerate(messages)
        ]
        action = f"archive messages of thread {thread_id!r}"
        sent = False
        try:
            with self._errors(action), self._writing(thread_id) as db:
                length, events = self._committed(db, thread_id)
                written = event.number > events  # else its save archived the segment
                if written:
                    self._executemany(
                        db, self.sql.put_message, [(*row, length, length) for row in rows]
                    )
                    event_row = (thread_id, event.number, event.model_dump_json())
                    db.execute(self.sql.put_event, event_row)
                self._index(db, thread_id)
                sent = written
        except ArchiveError as error:
            cause = error.__cause__
            if sent and isinstance(cause, self._failures):
                failure = self._failure(action, cause)
                raise ArchiveError(outcome.may_be_written(failure)) from cause
            raise

    def get(self, thread_id: str, start: int = 0, end: int | None = None) -> list[ArchivedMessage]:
        """Archived entries with ``start <= index < end``, in log order."""
        check_thread(thread_id)
        check_range(start, end)
        with self._errors(f"read the archive of thread {thread_id!r}"), self._reading() as db:
            return self._read_archive(db, thread_id, start, end)

    def search(self, thread_id: str, text: str, *, limit: int = 20) -> list[ArchivedMessage]:
        """Archived entries whose JSON contains ``text``, compared after `fold`, in log order.

        Raises:
            ConfigError: a bad thread id, search text or limit (the same in every store).
            ArchiveError: the read failed.
        """
        check_thread(thread_id)
        check_search(text, limit)
        needle, start = fold(text), 0
        found: list[tuple[int, str, Any, int | None]] = []
        with self._errors(f"search the archive of thread {thread_id!r}"), self._reading() as db:
            while len(found) < limit:
                params = (thread_id, start, SEARCH_BATCH)
                rows = db.execute(self.sql.archived_from, params).fetchall()
                found += [row for row in rows if needle in fold(row[1])]
                if len(rows) < SEARCH_BATCH:
                    break
                start = int(rows[-1][0]) + 1
        return [archived(thread_id, row, self.dialect.timestamp) for row in found[:limit]]

    def rank(
        self, thread_id: str, query: Sequence[str], within: Ranges, *, limit: int
    ) -> list[tuple[int, float]]:
        """``(log index, score)`` of the best ``limit`` archived messages for recall's ``query``.

        Only messages with a log index in one of the ``within`` ranges count, for the ranking
        and for its statistics alike (see `progsum.store._archive.Ranker.rank`). One snapshot:
        the full-text index's candidates, the messages it cannot answer for, the statistics.
        A term no query asks for (`progsum.recall._terms.askable`) is ignored, as in
        `progsum.recall._index.Index`.

        Raises:
            ConfigError: a bad thread id.
            ArchiveError: the read failed.
        """
        check_thread(thread_id)
        query = asked(query)
        cap = self.dialect.bounds(0, None)[1]
        clamped = ((min(max(a, 0), cap), min(max(b, 0), cap)) for a, b in within)
        ranges = [(a, b) for a, b in clamped if a < b]
        if not query or not ranges:
            return []
        bounds = tuple(value for pair in ranges for value in pair)
        sql, spell = self.sql, self.dialect.within
        wanted = set(query)
        searched = [t for t in wanted if len(t) <= MAX_TERM and _TERM.fullmatch(t)]
        with self._errors(f"rank the archive of thread {thread_id!r}"), self._snapshot() as db:
            rows = []
            if searched:
                params = (self.dialect.terms_query(sorted(searched)), thread_id, *bounds)
                rows = db.execute(spell(sql.ranked, len(ranges)), params).fetchall()
            found = [candidate(i, n, text, wanted) for i, n, text in rows]
            loose = db.execute(spell(sql.unranked, len(ranges)), (thread_id, *bounds)).fetchall()
            more, extra = _unranked(loose, wanted)
            found += more
            if not any(c.counts for c in found):
                return []
            stats = db.execute(spell(sql.ranked_stats, len(ranges)), (thread_id, *bounds))
            documents, total = stats.fetchone()
        whole = Stats(int(documents) + extra.documents, int(total) + extra.terms)
        return rank(query, found, whole, limit=limit)

    def _index(self, db: C, thread_id: str) -> None:
        """Store the recall terms of the thread's archived messages that have none yet.

        ``put`` calls it in its transaction (holding the thread's write lock): after its own
        rows, it finds there any message a save archived, or whose text a save replaced.
        """
        while True:
            rows = db.execute(self.sql.unindexed, (thread_id, INDEX_BATCH)).fetchall()
            self._store_terms(db, rows)
            if len(rows) < INDEX_BATCH:
                return

    def _store_terms(self, db: C, rows: Sequence[tuple[str, int, str]]) -> None:
        """Store the recall terms of ``(thread_id, idx, message)`` rows (nothing for none)."""
        if rows:
            params = [(*indexed(text), thread, idx) for thread, idx, text in rows]
            self._executemany(db, self.sql.index_terms, params)

    def events(self, thread_id: str) -> list[CompactionEvent]:
        """The compaction events archived for the thread, in order."""
        check_thread(thread_id)
        with self._errors(f"read the events of thread {thread_id!r}"), self._reading() as db:
            return self._read_events(db, thread_id)

    # -- saved states -----------------------------------------------------------------------------

    def load(
        self,
        thread_id: str,
        *,
        schema: type[S] = Summary,  # type: ignore[assignment]  # mypy cannot default a TypeVar-typed parameter
    ) -> Stored[S]:
        """The thread's saved state and its version.

        Args:
            thread_id: The conversation's thread id.
            schema: The summary schema it was saved with (default `Summary`).

        Raises:
            ConfigError: no state was saved for ``thread_id``, or it was saved with another
                schema.
            ArchiveError: the read failed or the stored data is damaged.
        """
        check_thread(thread_id)
        spec_of(schema)
        with self._errors(f"load thread {thread_id!r}"), self._loading() as db:
            found = self._read_state(db, thread_id)
            if found is None:
                known = db.execute(self.sql.some_threads, ()).fetchall()
                raise self._unknown(thread_id, [t for (t,) in known])
        version, data = found
        state = self._rebuilt(thread_id, data, schema)
        self._remembered().keep(thread_id, version, state)
        return Stored(state, version)

    def _rebuilt(
        self, thread_id: str, data: dict[str, Any], schema: type[S]
    ) -> ConversationState[S]:
        """The saved state from its data (`state_data`).

        Raises:
            ConfigError: it was saved with another schema (the caller's mistake).
            ArchiveError: the data does not make a state (a damaged store).
        """
        try:
            return ConversationState.from_dict(data, schema=schema)
        except (ConfigError, MessageFormatError) as exc:
            if data.get("schema") not in (None, schema.__name__):
                raise
            raise ArchiveError(
                f"thread {thread_id!r} in {self.where} is damaged: {exc}; restore the "
                f"{self.dialect.medium} from a backup"
            ) from exc

    def _read_head(self, db: C, thread_id: str) -> SavedHead | None:
        """The saved state's counters and last message (None: never saved), in two reads."""
        row = db.execute(self.sql.head, (thread_id,)).fetchone()
        if row is None:
            return None
        version, length, events, cleared, retired, ledger = row
        last = None
        if length:
            found = db.execute(self.sql.last_message, (thread_id, length - 1)).fetchone()
            last = None if found is None else found[0]
        return SavedHead(version, length, events, cleared, last, retired, ledger)

    def _read_saved(self, db: C, thread_id: str) -> SavedRows | None:
        """What is stored of the thread's saved state (None: never saved), in six reads."""
        sql = self.sql
        row = db.execute(sql.state, (thread_id,)).fetchone()
        if row is None:
            return None
        version, length, count, cleared, retired, ledger, text = row

        def rows(statement: str, number: int | None) -> list[str]:
            if number is None:  # in the state's JSON (an older layout)
                return []
            return [found for (found,) in db.execute(statement, (thread_id, number)).fetchall()]

        messages = db.execute(sql.log, (thread_id, length)).fetchall()
        events = db.execute(sql.event_rows, (thread_id, count)).fetchall()
        return SavedRows(
            version=version,
            length=length,
            state=text,
            stored=len(messages),
            log="[" + ",".join(message for (message,) in messages) + "]",
            events=count,
            event_rows=[event for (event,) in events],
            cleared=cleared,
            mark_rows=rows(sql.mark_rows, cleared),
            retired=retired,
            tombstone_rows=rows(sql.tombstone_rows, retired),
            ledger=ledger,
            entry_rows=rows(sql.entry_rows, ledger),
        )

    def _saved_key(self, thread_id: str) -> tuple[object, ...] | None:
        """The saved row's version, length, event count and save time (None: never saved)."""
        with self._errors(f"read thread {thread_id!r}"), self._reading() as db:
            row = db.execute(self.sql.saved_key, (thread_id,)).fetchone()
        return None if row is None else tuple(row)

    def _read_state(self, db: C, thread_id: str) -> tuple[int, dict[str, Any]] | None:
        """The thread's version and `ConversationState.to_dict` data, or None if never saved."""
        saved = self._read_saved(db, thread_id)
        if saved is None:
            return None
        return state_data(thread_id, saved, where=self.where, medium=self.dialect.medium)

    def threads(self) -> list[str]:
        """Thread ids with a saved state or anything archived, sorted."""
        with self._errors("list threads"), self._reading() as db:
            return sorted(t for (t,) in db.execute(self.sql.threads, ()).fetchall())

    def _unknown(self, thread_id: str, known: list[str]) -> ConfigError:
        listed = ", ".join(repr(t) for t in known[:5]) + (", ..." if len(known) > 5 else "")  # noqa: PLR2004 - a short list
        return ConfigError(
            f"no conversation with thread_id={thread_id!r} is saved in {self.where} (saved: "
            f"{listed or 'none'}); create it with store.save(ConversationState(messages, "
            f"thread_id={thread_id!r}), expected_version=None)"
        )

    # -- reads of several statements ---------------------------------------------------------------

    def export_markdown(self, thread_id: str, *, schema: type[Any] = Summary) -> str:
        """A readable Markdown record of the thread: summary, folded segments, live tail.

        Args:
            thread_id: The conversation's thread id.
            schema: The summary schema it was saved with (default `Summary`).

        Raises:
            ConfigError: nothing is stored for ``thread_id``.
        """
        check_thread(thread_id)
        spec_of(cast("type[BaseSummary]", schema))
        with self._errors(f"export thread {thread_id!r}"), self._snapshot() as db:
            found = self._read_state(db, thread_id)
            archive = self._read_archive(db, thread_id, 0, None)
            events = self._read_events(db, thread_id)
        if found is None and not archive:
            raise self._unknown(thread_id, self.threads())
        stored = None
        if found is not None:
            version, data = found
            stored = Stored(self._rebuilt(thread_id, data, schema), version)
        return markdown(thread_id, stored, archive, events)

    def _read_archive(
        self, db: C, thread_id: str, start: int, end: int | None
    ) -> list[ArchivedMessage]:
        low, high = self.dialect.bounds(start, end)
        rows = db.execute(self.sql.archived, (thread_id, low, high)).fetchall()
        return [archived(thread_id, row, self.dialect.timestamp) for row in rows]

    def _read_events(self, db: C, thread_id: str) -> list[CompactionEvent]:
        rows = db.execute(self.sql.events, (thread_id,)).fetchall()
        return [CompactionEvent.model_validate_json(e) for (e,) in rows]

    def _committed(self, db: C, thread_id: str) -> tuple[int, int]:
        """The saved log length and event count of the thread (0, 0 when never saved)."""
        row = db.execute(self.sql.committed, (thread_id,)).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))


def _unranked(
    rows: Sequence[tuple[int, int | None, str | None, str | None]], query: set[str]
) -> tuple[list[Candidate], Stats]:
    """The candidates among messages the index cannot answer for, and what they add to the stats.

    A row not indexed yet (no terms) counts in the statistics here; one beyond the index's size
    limit is counted by the statistics statement already.
    """
    found, documents, total = [], 0, 0
    for index, stored, text, message in rows:
        if text is None or stored is None:
            words, length = indexed(str(message))
            documents, total = documents + 1, total + length
        else:
            words, length = text, stored
        found.append(candidate(index, length, words, query))
    return found, Stats(documents, total)
