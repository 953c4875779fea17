"""The sync and async drivers are one sequence of stages: they differ only where they await.

Each scenario runs the same conversation through ``maybe_compact``/``compact``/``repair`` and
their async twins, with a summarizer and an archive that fail on a schedule, and checks that both
drivers make the same summarizer calls, the same archive writes, and build byte-identical states
(events, summary, ledger) after every turn, failures, backoffs, retries and repairs included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy, Summary, SummaryUpdate
from progsum.errors import ArchiveError, ConfigError, SummarizerError
from progsum.state._events import CompactionEvent
from progsum.store._archive import MemoryArchive
from progsum.summarizers import ExtractiveSummarizer
from progsum.summarizers._fallback import FallbackSummarizer
from progsum.summary._request import (
    AsyncSummarizer,
    ConsolidationRequest,
    Summarizer,
    SummaryRequest,
)
from progsum.summary._update import Retirement
from tests.conftest import fixed_clock
from tests.conversations import trip_planning

POLICY = Policy(
    context_window=20_000,
    trigger=("tokens", 1_500),
    keep=("messages", 2),
    header_budget=("tokens", 250),
)
"""Compacts every few turns and overflows a small header, so consolidations happen too."""


class Scripted:
    """A summarizer that fails on the call numbers it is given and logs every call it gets.

    Sync and async methods share one log, under the sync name, so that the two drivers' calls
    compare equal whichever method each driver prefers.
    """

    def __init__(self, *, fail: set[int], fail_consolidate: set[int] = frozenset()) -> None:  # type: ignore[assignment]  # a frozenset is read only
        self.fail = fail
        self.fail_consolidate = fail_consolidate
        self.calls: list[tuple[str, int, int]] = []

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Record the segment; fail if scheduled, else a rule once and three letter-named facts."""
        segment = request.segment
        self.calls.append(("summarize", segment.start, segment.end))
        if len(self.calls) in self.fail:
            raise TimeoutError(f"call {len(self.calls)} timed out")
        name = "".join(chr(97 + int(d)) for d in str(segment.start))
        facts = [f"Fact {name}{c}: the guide said a lot about the old tram line." for c in "xyz"]
        rules = ["Never book flights that leave before 9am."] if segment.start < 5 else []
        return SummaryUpdate(add={"established_facts": facts, "constraints": rules})

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Async `summarize`."""
        await asyncio.sleep(0)
        return self.summarize(request)

    def consolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
        """Record the request's size; fail if scheduled, else merge every fact into one line."""
        self.calls.append(("consolidate", request.tokens, request.budget))
        if len(self.calls) in self.fail_consolidate:
            raise RuntimeError(f"call {len(self.calls)} failed")
        facts = request.summary.established_facts
        merged = "Facts: " + " ".join(f.text.split(":")[0] for f in facts) + " (old tram)."
        return SummaryUpdate(
            add={"established_facts": [merged]},
            retire=[Retirement(id=f.id, reason="merged into one line") for f in facts],
        )

    async def aconsolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
        """Async `consolidate`."""
        await asyncio.sleep(0)
        return self.consolidate(request)


class FlakyArchive(MemoryArchive):
    """A `MemoryArchive` that refuses the writes numbered in ``fail`` and logs every attempt."""

    def __init__(self, fail: set[int]) -> None:
        super().__init__()
        self.fail = fail
        self.writes: list[tuple[int, int, int, bool]] = []

    def put(self, thread_id: str, start: int, messages: Any, event: CompactionEvent) -> None:
        """Refuse the write if scheduled; else store it (see `MemoryArchive.put`)."""
        refused = len(self.writes) + 1 in self.fail
        self.writes.append((start, len(messages), event.number, not refused))
        if refused:
            raise OSError(28, "No space left on device")
        super().put(thread_id, start, messages, event)


Made = tuple[Scripted, Summarizer | AsyncSummarizer, FlakyArchive]
"""The scripted summarizer, the summarizer the compactor holds (it or a chain), the archive."""

Trace = tuple[list[str], list[tuple[str, int, int]], list[tuple[int, int, int, bool]]]
"""The state's JSON after every step, the summarizer's calls, the archive's write attempts."""


def scenario(
    step: Callable[[Compactor[Summary], ConversationState[Summary]], Any],
    make: Callable[[], Made],
    turns: int = 40,
) -> Trace:
    """Feed a trip chat turn by turn through ``step`` (sync, or async run to completion)."""
    scripted, summarizer, archive = make()
    compactor: Compactor[Summary] = Compactor(
        policy=POLICY,
        summarizer=summarizer,
        archive=archive,
        clock=fixed_clock,
    )
    state: ConversationState[Summary] = ConversationState(thread_id="drivers")
    states: list[str] = []
    for message in trip_planning(turns):
        state = _done(step(compactor, state.append(message)))
        states.append(state.to_json())
    return states, scripted.calls, archive.writes


def _done(result: Any) -> Any:
    """``result``, or what it resolves to when it is awaitable."""
    if isinstance(result, Awaitable):
        return asyncio.run(_awaited(result))
    return result


async def _awaited(result: Awaitable[Any]) -> Any:
    return await result


def failing() -> Made:
    """A summarizer that times out on calls 2, 3 and 6 and whose first consolidation fails."""
    scripted = Scripted(fail={2, 3, 6}, fail_consolidate={5, 9})
    return scripted, scripted, FlakyArchive(fail={1, 3})


def falling_back() -> Made:
    """The failing summarizer behind an extractive fallback: degraded folds to repair later."""
    scripted = Scripted(fail={2, 3, 6, 7}, fail_consolidate={5})
    return scripted, FallbackSummarizer(scripted, ExtractiveSummarizer()), FlakyArchive(fail={2})


@pytest.mark.parametrize("make", [failing, falling_back])
def test_maybe_compact_makes_the_same_calls_writes_and_events_sync_and_async(
    make: Callable[[], Made],
) -> None:
    """Failures, backoffs, consolidations and archive retries: the same, turn by turn."""
    sync = scenario(lambda c, s: c.maybe_compact(s), make)
    both = scenario(lambda c, s: c.amaybe_compact(s), make)
    states, calls, writes = sync
    events = _events(states[-1])
    outcomes = {event["outcome"] for event in events}
    assert {"compacted", "consolidated"} <= outcomes  # the scenario covers them
    assert "failed" in outcomes or any(event.get("degraded") for event in events)
    assert any(not ok for *_, ok in writes)
    assert any(ok for *_, ok in writes)
    assert any(name == "consolidate" for name, *_ in calls)
    assert both == sync


def test_repair_makes_the_same_calls_and_states_sync_and_async() -> None:
    """Repairing the degraded folds of one state: the same requests and the same result."""
    states, _, _ = scenario(lambda c, s: c.maybe_compact(s), falling_back)
    state: ConversationState[Summary] = ConversationState.from_json(states[-1])
    assert state.pending_repairs
    results = []
    for repair in (Compactor.repair, Compactor.arepair):
        scripted = Scripted(fail=set())
        compactor: Compactor[Summary] = Compactor(
            policy=POLICY, summarizer=scripted, clock=fixed_clock
        )
        results.append((_done(repair(compactor, state)).to_json(), scripted.calls))
    assert results[0] == results[1]
    assert results[0][1]


def test_unguarded_failures_raise_the_same_errors_sync_and_async() -> None:
    """``compact`` raises the same summarizer and archive errors from both drivers."""
    conversation = ConversationState(thread_id="drivers").extend(trip_planning(12))
    for fail, archive_fail, error in (({1}, set(), SummarizerError), (set(), {1}, ArchiveError)):
        messages = []
        for compact in (Compactor.compact, Compactor.acompact):
            compactor: Compactor[Summary] = Compactor(
                policy=POLICY,
                summarizer=Scripted(fail=fail),
                archive=FlakyArchive(archive_fail),
                clock=fixed_clock,
            )
            with pytest.raises(error) as raised:
                _done(compact(compactor, conversation, force=True))
            messages.append(str(raised.value))
        assert messages[0] == messages[1]


def test_an_async_only_summarizer_is_refused_by_the_sync_driver_only_when_called() -> None:
    """A turn that asks nothing runs sync; one that asks names the async entry point."""

    class AsyncOnly:
        async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
            return SummaryUpdate(add={"established_facts": [f"{len(request.segment.messages)}"]})

    compactor: Compactor[Summary] = Compactor(policy=POLICY, summarizer=AsyncOnly())
    short = ConversationState().extend(trip_planning(1))
    assert compactor.maybe_compact(short) is short
    long = ConversationState().extend(trip_planning(12))
    with pytest.raises(ConfigError, match=r"async-only; use await compactor\.amaybe_compact"):
        compactor.compact(long, force=True)
    with pytest.raises(ConfigError, match=r"async-only; use await compactor\.arepair"):
        compactor.repair(long)


def _events(state_json: str) -> list[dict[str, Any]]:
    """The events of a state's JSON form."""
    return list(ConversationState.from_json(state_json).to_dict()["events"])
