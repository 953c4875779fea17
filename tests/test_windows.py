"""The context fits the window, always: long thinking cycles, oversized messages and outages.

Every request point is checked with the independent provider-rule checker (tests/provider_rules.py,
written from docs/thinking-rules.md) and against the model's input window as the engine counts it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy, render_anthropic, render_openai
from progsum.errors import ProviderError
from progsum.messages._formats import Message
from progsum.policy._reduction import Reduction
from progsum.replay._importers import read_conversations
from progsum.store._archive import MemoryArchive
from progsum.store._sqlite import SQLiteStore
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._update import SummaryUpdate
from progsum.testing import FunctionSummarizer
from tests.provider_rules import anthropic_violations, openai_violations

TASK = "Fix the failing build in /srv/app; never push to main. " * 3


def thinking_cycle(rounds: int, *, result_chars: int = 2_500) -> list[Message]:
    """One human turn and a tool cycle of ``rounds`` rounds; only the first response thinks."""
    messages: list[Message] = [{"role": "user", "content": TASK}]
    for n in range(rounds):
        blocks: list[dict[str, Any]] = []
        if n == 0:
            blocks.append(
                {"type": "thinking", "thinking": "Plan: read, test, fix.", "signature": "s0"}
            )
        blocks.append({"type": "text", "text": f"Step {n}: reading file {n}."})
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_{n}",
                "name": "Read",
                "input": {"path": f"/srv/app/m{n}.py"},
            }
        )
        messages.append({"role": "assistant", "content": blocks})
        body = f"# module {n}\n" + "".join(
            f"line {n}.{k} = value_{k}\n" for k in range(result_chars // 16)
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": body}],
            }
        )
    return messages


def replay(
    messages: list[Message], compactor: Compactor[Any], *, thread_id: str | None = None
) -> ConversationState[Any]:
    """Append one message at a time with maybe_compact, checking every request point."""
    state: ConversationState[Any] = ConversationState(thread_id=thread_id)
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
        if state.infos[-1].role == "assistant":
            continue
        assert compactor.overflow(state) is None, compactor.overflow(state)
        if state.format == "openai":
            assert openai_violations(render_openai(state)) == []
        else:
            assert (
                anthropic_violations(render_anthropic(state, thinking="keep")[1], state.log) == []
            )
    return state


def test_the_checker_flags_a_thinking_turn_resumed_without_its_opener() -> None:
    """The independent checker catches a view that resumes a thinking cycle mid-way (rule T3)."""
    log = thinking_cycle(4)
    view = [log[0], *log[5:]]  # the task, then round 2 onwards: the opener with thinking is gone
    problems = anthropic_violations(view, log)
    assert any("neither the turn's opener nor starts with thinking" in p for p in problems)
    assert anthropic_violations([log[0], *log[1:3], *log[5:]], log) == []  # opener pinned: valid


def test_the_checker_flags_edited_thinking_and_duplicate_results() -> None:
    """A changed thinking block and a tool call answered twice are both violations."""
    log = thinking_cycle(2)
    edited = json.loads(json.dumps(log))
    edited[1]["content"][0]["thinking"] = "something else"
    assert any("not in the log unchanged" in p for p in anthropic_violations(edited, log))
    doubled = json.loads(json.dumps(log))
    doubled[2]["content"].append(dict(doubled[2]["content"][0]))
    assert any("twice" in p for p in anthropic_violations(doubled, log))


def test_a_forty_round_thinking_cycle_fits_a_32k_window() -> None:
    """40 rounds, thinking only on the first response: compacted inside the cycle, always valid.

    Without the cheap reduction (which alone keeps this cycle under the default trigger), so the
    cycle must fold.
    """
    compactor = Compactor(
        policy=Policy(context_window=32_000), summarizer=ExtractiveSummarizer(), reduction=None
    )
    state = replay(thinking_cycle(40), compactor)
    compacted = [e for e in state.events if e.outcome == "compacted"]
    assert compacted, "the cycle was never folded"
    assert all(e.pinned == (1, 3) for e in compacted)  # the opening round stays in view
    assert not [e for e in state.events if e.stall == "nothing_to_fold"]
    assert state.pinned == (1, 3)


def test_the_cycle_fits_an_8k_window_with_a_short_keep() -> None:
    """At 8k the same cycle folds down to the opener and the newest rounds, still valid."""
    policy = Policy(context_window=8_000, keep=("messages", 2))
    replay(thinking_cycle(40), Compactor(policy=policy, summarizer=ExtractiveSummarizer()))


def test_a_five_megabyte_tool_result_fits_a_200k_window() -> None:
    """A 5 MB tool result (the newest one) is clipped to its head and tail, named in the view."""
    messages = thinking_cycle(2)
    huge = "x" * 2_500_000 + "MIDDLE" + "y" * 2_500_000
    messages.append(
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "big", "name": "Bash", "input": {}}],
        }
    )
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "big", "content": huge}],
        }
    )
    compactor = Compactor(policy=Policy(context_window=200_000), summarizer=ExtractiveSummarizer())
    state = replay(messages, compactor, thread_id="big")
    shown = json.dumps(render_anthropic(state)[1])
    assert "MIDDLE" not in shown
    assert "progsum clipped" in shown
    assert "recall message 7" in shown  # log index 6, counted from 1
    assert state.log[-1]["content"][0]["content"] == huge  # the log keeps it whole


def test_a_one_megabyte_first_message_fits_a_200k_window() -> None:
    """The kept first task message is clipped too, when it alone would crowd the window."""
    first = "TASK START " + "please read this spec. " * 45_000 + " TASK END"
    messages: list[Message] = [
        {"role": "user", "content": first},
        {"role": "assistant", "content": "Understood."},
        {"role": "user", "content": "Go on."},
    ]
    compactor = Compactor(policy=Policy(context_window=200_000), summarizer=ExtractiveSummarizer())
    state = replay(messages, compactor)
    text = render_anthropic(state)[1][0]["content"]
    assert text.startswith("TASK START")
    assert text.endswith("TASK END")
    assert "progsum clipped" in text


def test_clipping_at_ingest_when_the_caller_asks() -> None:
    """With clip_at_ingest, an oversized message is clipped before any compaction is due."""
    compactor = Compactor(
        policy=Policy(context_window=200_000),
        summarizer=ExtractiveSummarizer(),
        reduction=Reduction(clip_at_ingest=True, clip_share=0.01),
    )
    state = compactor.maybe_compact(ConversationState([{"role": "user", "content": "z" * 40_000}]))
    assert state.events[-1].outcome == "reduced"
    assert "clipped 1 oversized block" in state.events[-1].reason


def _always_down(calls: list[int]) -> FunctionSummarizer:
    def fail(_: object) -> SummaryUpdate:
        calls.append(1)
        raise ProviderError("529 overloaded", status=529)

    return FunctionSummarizer(fail)


def test_a_summarizer_that_always_fails_backs_off_and_the_context_still_fits() -> None:
    """100 turns of outage: about log2(100) calls, each failure recorded, never over the window."""
    calls: list[int] = []
    compactor = Compactor(policy=Policy(context_window=8_000), summarizer=_always_down(calls))
    state = replay(thinking_cycle(50, result_chars=1_200), compactor)
    failures = [e for e in state.events if e.outcome == "failed"]
    assert len(calls) <= 7
    assert len(failures) == len(calls)
    assert all(e.failure == "summarizer" and e.retry_at for e in failures)
    degraded = [e for e in state.events if e.outcome == "compacted"]
    assert degraded
    assert all(e.degraded for e in degraded)
    assert state.pending_repairs  # repairable once the summarizer is back


def assert_every_fold_archived(state: ConversationState[Any], archive: MemoryArchive) -> None:
    """Every message a compaction of ``state`` folded is in ``archive`` under its thread."""
    assert state.thread_id is not None
    folded = {i for e in state.events if e.folded for i in range(*e.folded)}
    archived = {entry.index for entry in archive.get(state.thread_id)}
    assert folded <= archived


class FullDisk(MemoryArchive):
    """An archive whose disk is full until ``fixed`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.fixed = False
        self.refused = 0

    def put(self, *args: Any, **kwargs: Any) -> None:
        """Refuse the write while the disk is full."""
        if not self.fixed:
            self.refused += 1
            raise OSError(28, "No space left on device")
        super().put(*args, **kwargs)


def test_a_full_disk_for_120_turns_loses_nothing_and_fits() -> None:
    """While the archive is down folded segments stay in the state; once back, all are written."""
    archive = FullDisk()
    compactor = Compactor(
        policy=Policy(context_window=8_000), summarizer=ExtractiveSummarizer(), archive=archive
    )
    messages = thinking_cycle(100, result_chars=1_200)
    state = replay(messages[:120], compactor, thread_id="disk")
    assert archive.refused < 10  # backed off, not retried every turn
    assert [e for e in state.events if e.archive_pending]
    archive.fixed = True
    for message in messages[120:]:
        state = compactor.maybe_compact(state.append(message))
    assert any(e.outcome == "archived" for e in state.events)
    assert_every_fold_archived(state, archive)


def test_maybe_compact_raises_when_backoff_is_off() -> None:
    """failure_backoff=None keeps the old contract: the summarizer's error reaches the caller."""
    from progsum.errors import SummarizerError  # noqa: PLC0415 - only here

    compactor = Compactor(
        policy=Policy(context_window=8_000, failure_backoff=None), summarizer=_always_down([])
    )
    with pytest.raises(SummarizerError, match="529 overloaded"):
        replay(thinking_cycle(20), compactor)


def test_a_lone_surrogate_is_stored_and_read_back(tmp_path: Path) -> None:
    """Text cut inside a UTF-16 pair saves and loads unchanged instead of failing every save."""
    store = SQLiteStore(tmp_path / "s.db")
    state = ConversationState(
        [{"role": "user", "content": "half an emoji: \ud83d end"}], thread_id="t"
    )
    version = store.save(state, expected_version=None)
    state = state.append({"role": "assistant", "content": "noted"})
    store.save(state, expected_version=version)
    loaded, _ = store.load("t")
    assert loaded.log[0]["content"] == "half an emoji: \ud83d end"


def test_memory_archive_recall_on_a_fork_does_not_show_the_other_fork() -> None:
    """Two forks archive different messages at one index; neither is served for it."""
    from progsum.state._events import CompactionEvent  # noqa: PLC0415 - only here

    archive = MemoryArchive()
    event = CompactionEvent(
        number=1,
        outcome="compacted",
        at="2026-12-01T00:00:00Z",
        reason="r",
        tokens_before=1,
        tokens_after=1,
        method="estimated",
    )
    archive.put("t", 1, [{"role": "assistant", "content": "fork A"}], event)
    archive.put("t", 1, [{"role": "assistant", "content": "fork B"}], event)
    archive.put("t", 2, [{"role": "user", "content": "shared"}], event)
    assert [e.message["content"] for e in archive.get("t")] == ["shared"]


def test_duplicate_tool_results_reach_the_provider_once() -> None:
    """A result repeated for one call is rendered once (Anthropic block and OpenAI message)."""
    result = {"type": "tool_result", "tool_use_id": "c1", "content": "42"}
    state = ConversationState(
        [
            {"role": "user", "content": "compute"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "calc", "input": {}}],
            },
            {"role": "user", "content": [result, dict(result)]},
        ]
    )
    messages = render_anthropic(state)[1]
    assert anthropic_violations(messages, state.log) == []
    assert len(messages[2]["content"]) == 1
    openai = ConversationState(
        [
            {"role": "user", "content": "compute"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "calc", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
        ]
    )
    assert openai_violations(render_openai(openai)) == []


def test_a_claude_code_log_being_written_imports_its_complete_rows(tmp_path: Path) -> None:
    """A torn last row (no newline yet) is left out; the complete rows import."""
    rows = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hello"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "text", "text": "hi"}],
            },
        },
    ]
    path = tmp_path / "live.jsonl"
    path.write_text(
        "\n".join(json.dumps(r) for r in rows) + '\n{"type": "user", "mess', encoding="utf-8"
    )
    (conversation,) = read_conversations(path)
    assert [m["role"] for m in conversation.messages] == ["user", "assistant"]


def test_the_async_engine_backs_off_the_same_way() -> None:
    """amaybe_compact records the failure, backs off and folds extractively near the window."""
    import asyncio  # noqa: PLC0415 - only here

    calls: list[int] = []
    compactor = Compactor(policy=Policy(context_window=8_000), summarizer=_always_down(calls))

    async def run() -> ConversationState[Any]:
        state: ConversationState[Any] = ConversationState()
        for message in thinking_cycle(50, result_chars=1_200):
            state = await compactor.amaybe_compact(state.append(message))
            if state.infos[-1].role != "assistant":
                assert compactor.overflow(state) is None
        return state

    state = asyncio.run(run())
    assert 0 < len(calls) <= 7
    assert len([e for e in state.events if e.outcome == "failed"]) == len(calls)


class Flaky(MemoryArchive):
    """An archive that refuses writes at random (seeded): a flapping network disk."""

    def __init__(self, seed: int, share: float) -> None:
        super().__init__()
        self._random = random.Random(seed)  # noqa: S311 - a test's fault pattern
        self.share = share
        self.refused = 0

    def put(self, *args: Any, **kwargs: Any) -> None:
        """Refuse about ``share`` of the writes."""
        if self._random.random() < self.share:
            self.refused += 1
            raise OSError(5, "Input/output error")
        super().put(*args, **kwargs)


def _chat_with_values(turns: int) -> list[Message]:
    """A chat whose user turns each state numbers (the value ledger keeps every one)."""
    messages: list[Message] = [{"role": "user", "content": "Plan a long trip; budget $9,000."}]
    for n in range(turns):
        messages.append(
            {"role": "user", "content": f"Room {n}: {n + 2} guests, ${100 + n} a night, ref R-{n}."}
        )
        messages.append({"role": "assistant", "content": f"Noted room {n}. " * 30})
    return messages


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("workload", ["tools", "chat"])
def test_intermittent_archive_errors_never_push_the_context_over_the_window(
    seed: int, workload: str
) -> None:
    """While the archive fails now and then, folds go on into ``archive_pending``.

    Every request fits the window, and once the archive takes writes again nothing folded is
    missing from it.
    """
    archive = Flaky(seed, share=0.6)
    compactor = Compactor(
        policy=Policy(context_window=4_000), summarizer=ExtractiveSummarizer(), archive=archive
    )
    messages = (
        thinking_cycle(120, result_chars=1_200) if workload == "tools" else _chat_with_values(150)
    )
    state = replay(messages, compactor, thread_id=f"flaky-{workload}-{seed}")
    assert archive.refused
    assert sum(e.outcome == "compacted" for e in state.events) >= 5
    archive.share = 0.0  # the disk is back
    filler: Message = {"role": "user", "content": "And next?"}
    for _ in range(80):  # past the longest backoff (64 turns)
        state = compactor.maybe_compact(state.append(filler))
        state = compactor.maybe_compact(state.append({"role": "assistant", "content": "Next."}))
    assert_every_fold_archived(state, archive)
