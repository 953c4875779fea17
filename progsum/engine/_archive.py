"""The archive stage: the folded segment is written before the state that replaces it is returned.

With the failure backoff on, a failed write does not raise: the compacted event is marked
``archive_pending`` (and not ``in_archive``, so the header names no archive) with the turn of the
next try, the state's log keeps the segment, and `retry` writes every pending segment once the
backoff has passed (an ``archived`` event; the header names the archive again once every folded
segment is there).
The only I/O here is the `Archive` the caller passes in.
"""

from __future__ import annotations

from typing import Any

from progsum.engine._config import Config
from progsum.engine._measure import count
from progsum.engine._outages import backing_off, failures, first_clause, retry_turn
from progsum.errors import ArchiveError
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent
from progsum.store._archive import Archive
from progsum.summary._schema import SummaryT as S

__all__ = ["PendingMemo", "archived", "put", "retry"]


class PendingMemo:
    """The compacted events last found waiting for the archive, for the events tuple read.

    States appended since share that tuple, so a quiet turn with an archive does not read every
    event again. One per `Compactor`.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[tuple[CompactionEvent, ...], tuple[CompactionEvent, ...]] | None = None

    def pending(self, state: ConversationState[Any]) -> list[CompactionEvent]:
        """Compacted events whose segments wait for the archive, oldest first."""
        events = state.events
        last = self._last
        if last is not None and last[0] is events:
            return list(last[1])
        written = {n for e in events if e.outcome == "archived" for n in e.archives}
        found = [e for e in events if e.archive_pending and e.number not in written]
        self._last = (events, tuple(found))
        return found


def archived(
    config: Config[S],
    archive: Archive | None,
    before: ConversationState[S],
    after: ConversationState[S],
    *,
    guarded: bool = False,
) -> ConversationState[S]:
    """Write the segment ``after`` folds to the archive; only then is ``after`` returned.

    Raises:
        ArchiveError: the write failed and not ``guarded``; ``before`` is still valid.
    """
    if archive is None or after.cutoff == before.cutoff:
        return after
    event = after.events[-1]
    if guarded and backing_off(before, "archive"):
        waiting = failures(before, "archive")[-1].retry_at
        return _pending(
            config, before, after, "the archive is backing off after a failure", retry=waiting
        )
    try:
        put(archive, after, event)
    except ArchiveError as exc:
        if not guarded:
            raise
        return _pending(config, before, after, str(exc))
    return after


def put(archive: Archive, state: ConversationState[Any], event: CompactionEvent) -> None:
    """Write the segment ``event`` folded; any failure is an `ArchiveError` naming it."""
    thread = state.thread_id
    assert thread is not None  # checked when planning  # noqa: S101
    assert event.folded is not None  # a compacted event always folds  # noqa: S101
    start, end = event.folded
    try:
        archive.put(thread, start, state.log[start:end], event)
    except ArchiveError:
        raise
    except Exception as exc:
        raise ArchiveError(
            f"archiving messages {start}-{end - 1} of thread {thread!r} failed: "
            f"{type(exc).__name__}: {exc}; the conversation state is unchanged (use the "
            "state you passed in) and the next turn will try again"
        ) from exc


def _pending(
    config: Config[S],
    before: ConversationState[S],
    after: ConversationState[S],
    why: str,
    *,
    retry: int | None = None,
) -> ConversationState[S]:
    """``after`` with its compacted event marked as waiting for the archive until ``retry``."""
    event = after.events[-1]
    retry = retry or retry_turn(config, before, "archive")
    marked = event.model_copy(
        update={
            "archive_pending": True,
            "in_archive": False,
            "retry_at": retry,
            "reason": f"{event.reason}; not archived yet ({first_clause(why)}"
            f"): the segment stays in the state's log and is written at message {retry} or "
            "later",
        }
    )
    return before.record(
        marked,
        summary=after.summary,
        cutoff=after.cutoff,
        head_end=after.head_end,
        ledger=after.ledger,  # the values the folded segment stated stay guarded
        pinned=after.pinned,
    )


def retry(
    config: Config[S], archive: Archive | None, memo: PendingMemo, state: ConversationState[S]
) -> ConversationState[S]:
    """Write the segments the archive refused earlier, once its backoff has passed."""
    if archive is None:
        return state
    pending = memo.pending(state)
    if not pending or backing_off(state, "archive"):
        return state
    written: list[int] = []
    tokens, method = count(config, state)
    try:
        for event in pending:
            put(archive, state, event)
            written.append(event.number)
    except ArchiveError as exc:
        again = retry_turn(config, state, "archive")
        failed = CompactionEvent(
            number=len(state.events) + 1,
            outcome="failed",
            at=config.clock(),
            reason=f"{first_clause(str(exc))}; backing off: "
            f"{len(pending) - len(written)} folded segment(s) stay in the state's log and "
            f"are written at message {again} or later",
            tokens_before=tokens,
            tokens_after=tokens,
            method=method,
            failure="archive",
            retry_at=again,
            archives=tuple(written),
        )
        return state.record(failed)
    done = CompactionEvent(
        number=len(state.events) + 1,
        outcome="archived",
        at=config.clock(),
        reason=f"the archive is back: wrote the {len(written)} segment(s) folded while it was down",
        tokens_before=tokens,
        tokens_after=tokens,
        method=method,
        archives=tuple(written),
    )
    after = state.record(done)
    tokens_after, _ = count(config, after)  # the header may now name the archive
    if tokens_after == tokens:
        return after
    return after.annotated(done.model_copy(update={"tokens_after": tokens_after}))
