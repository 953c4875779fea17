"""Property tests: the design's invariants hold after every turn of generated conversations.

Each generated conversation is fed message by message (``append`` then ``maybe_compact``) with a
small window, so compaction fires many times; after every turn all invariants of DESIGN.md are
checked against independent oracles that read the caller's raw dicts (not progsum's infos).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import operator
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, example, given, settings
from hypothesis import strategies as st

from progsum import (
    Compactor,
    ConversationState,
    Policy,
    Summary,
    SummaryRequest,
    SummaryUpdate,
    render_anthropic,
    render_openai,
)
from progsum.engine._cut import find_cut
from progsum.judge._extract import message_text
from progsum.judge._values import exact_values
from progsum.messages._formats import is_safe_cut, to_record
from progsum.policy._policy import WINDOW_GUARD, Threshold
from progsum.policy._reduction import Reduction
from progsum.policy._tokens import HeuristicCounter, count_with_anchor
from progsum.summary._merge import merge
from progsum.summary._schema import spec_of
from progsum.summary._update import NewItem, Retirement
from progsum.testing import FunctionSummarizer
from tests import prefix_rule
from tests.conversations import spelled
from tests.strategies import (
    Conversation,
    anthropic_conversations,
    big_text,
    conversations,
    neutral_conversations,
    openai_conversations,
    texts,
)

RawMessage = Mapping[str, Any]

SPEC = spec_of(Summary)
LIST_FIELDS = tuple(f.name for f in SPEC.lists)
BINDING = frozenset(f.name for f in SPEC.binding)
SYSTEM = "You are a careful coding agent. Follow the user's rules."
SYSTEM_BLOCKS = ({"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}},)
SYSTEMS: tuple[str | None, ...] = (None, "", SYSTEM, SYSTEM)
"""The caller's system prompt: none, empty, or text (Anthropic also gets it as blocks)."""
USER_CONSTRAINT = "User constraint: "
COUNTER = HeuristicCounter()

# Generating a conversation of up to ~160 messages (some with 40k-character tool results) takes
# more than Hypothesis' default per-example budget for data generation; that is the point of the
# test, not a sign of an inefficient strategy.
FEED_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
DIRECT_SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# -- independent reading of raw messages --------------------------------------------------------


def role(message: RawMessage) -> str:
    """The message's role as written."""
    return str(message.get("role"))


def blocks(message: RawMessage) -> list[RawMessage]:
    """The content blocks of a message (none for string or missing content)."""
    content = message.get("content")
    return list(content) if isinstance(content, list) else []


def tool_use_ids(message: RawMessage) -> list[str]:
    """Ids of the tool calls an assistant message makes (Anthropic blocks or OpenAI tool_calls)."""
    if role(message) != "assistant":
        return []
    ids = [b["id"] for b in blocks(message) if b.get("type") == "tool_use"]
    ids += [c["id"] for c in message.get("tool_calls") or []]
    return ids


def tool_result_ids(message: RawMessage) -> list[str]:
    """Ids answered by a message (Anthropic tool_result blocks or an OpenAI tool message)."""
    if role(message) == "tool":
        return [str(message["tool_call_id"])]
    if role(message) != "user":
        return []
    return [b["tool_use_id"] for b in blocks(message) if b.get("type") == "tool_result"]


def is_result(message: RawMessage) -> bool:
    """The message carries tool results."""
    return role(message) == "tool" or bool(tool_result_ids(message))


def is_human(message: RawMessage) -> bool:
    """A user message that is not a tool result: it starts a new assistant turn."""
    return role(message) == "user" and not tool_result_ids(message)


def has_thinking(message: RawMessage) -> bool:
    """The message holds a thinking or redacted_thinking block."""
    return any(b.get("type") in ("thinking", "redacted_thinking") for b in blocks(message))


def starts_with_thinking(message: RawMessage) -> bool:
    """The message's first block is a thinking or redacted_thinking block."""
    first = blocks(message)[:1]
    return bool(first) and first[0].get("type") in ("thinking", "redacted_thinking")


def thinking_before(log: Sequence[RawMessage]) -> list[bool]:
    """For each k: the assistant turn that log[k] continues showed thinking before log[k]."""
    flags = []
    running = False
    for message in log:
        flags.append(running)
        if is_human(message) or role(message) in ("system", "developer"):
            running = False
        else:
            running = running or has_thinking(message)
    return flags


def call_index(log: Sequence[RawMessage], k: int) -> int:
    """Log index of the assistant message whose calls result message log[k] answers."""
    j = k - 1
    while j >= 0 and role(log[j]) == "tool":
        j -= 1
    return j


def oracle_safe_cut(log: Sequence[RawMessage], j: int, thinking: Sequence[bool]) -> bool:
    """Whether a verbatim tail may start at log[j], read from the raw dicts.

    ``thinking`` is `thinking_before(log)`.
    """
    message = log[j]
    if is_result(message):
        return False
    continues = j > 0 and (role(log[j - 1]) == "assistant" or is_result(log[j - 1]))
    return not (
        role(message) == "assistant"
        and continues
        and thinking[j]
        and not starts_with_thinking(message)
    )


def expected_head(log: Sequence[RawMessage], keep_first: bool) -> int:
    """Length of the head kept in front: leading system messages, and the task if kept."""
    leading = 0
    while leading < len(log) and role(log[leading]) in ("system", "developer"):
        leading += 1
    if keep_first:
        for index in range(leading, len(log)):
            if is_human(log[index]):
                return index + 1
    return leading


def note(label: str) -> None:
    """Count a situation in Hypothesis' statistics (shown with --hypothesis-show-statistics)."""
    if currently_in_test_context():
        event(label)


def same_render(first: Sequence[RawMessage], second: Sequence[RawMessage]) -> bool:
    """Two renderings are equal: the same log objects, and equal added messages."""
    return len(first) == len(second) and all(
        a is b or a == b for a, b in zip(first, second, strict=True)
    )


def dumps(value: object) -> str:
    """Canonical JSON text for comparing rendered output."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# -- invariant checks on rendered messages ------------------------------------------------------


def check_only_thinking_left_out(sent: Sequence[RawMessage], kept: Sequence[RawMessage]) -> None:
    """``sent`` is ``kept`` with some thinking blocks left out, and nothing else changed.

    A message left with no content goes; every other message is the same object, or a copy whose
    content is the kept content without some of its thinking blocks.
    """
    remaining = list(sent)
    for message in kept:
        if remaining and (remaining[0] is message or remaining[0] == message):
            remaining.pop(0)
            continue
        content = _content(message)
        assert isinstance(content, list), "a message without thinking was changed"
        if remaining and role(remaining[0]) == role(message):
            shown = _content(remaining[0])
            if isinstance(shown, list) and shown and _without(content, shown):
                remaining.pop(0)
                note("stale thinking left out")
                continue
        assert all(
            isinstance(b, Mapping) and b.get("type") in prefix_rule.THINKING for b in content
        ), "a message was left out that held more than thinking"
        note("a message of only stale thinking left out")
    assert not remaining, "the request sends messages the kept view does not hold"


def _without(content: Sequence[Any], shown: Sequence[Any]) -> bool:
    """Whether ``shown`` is ``content`` with some thinking blocks left out, in order."""
    rest = iter(shown)
    expected = next(rest, None)
    for block in content:
        if expected is not None and block == expected:
            expected = next(rest, None)
        elif not (isinstance(block, Mapping) and block.get("type") in prefix_rule.THINKING):
            return False
    return expected is None


def check_anthropic_pairing(messages: Sequence[RawMessage]) -> None:
    """Every tool_use is answered in the next message and every tool_result follows its call."""
    for i, message in enumerate(messages):
        results = tool_result_ids(message)
        if results:
            assert i > 0, "the rendered list opens with a tool result"
            calls = tool_use_ids(messages[i - 1])
            missing = Counter(results) - Counter(calls)
            assert not missing, f"message {i} answers {sorted(missing)} not called just before"
        calls = tool_use_ids(message)
        if calls and i + 1 < len(messages):
            answered = tool_result_ids(messages[i + 1])
            unanswered = set(calls) - set(answered)
            assert not unanswered, f"message {i}: calls {sorted(unanswered)} are not answered next"


def check_openai_pairing(messages: Sequence[RawMessage]) -> None:
    """Every tool_calls message is followed by a tool message per call; tool messages follow one."""
    for i, message in enumerate(messages):
        if role(message) == "tool":
            j = call_index(messages, i)
            assert j >= 0, f"tool message {i} has no assistant call before its run"
            assert message["tool_call_id"] in tool_use_ids(messages[j]), (
                f"tool message {i} answers {message['tool_call_id']!r}, not called at {j}"
            )
        calls = tool_use_ids(message)
        if calls:
            end = i + 1
            while end < len(messages) and role(messages[end]) == "tool":
                end += 1
            if end == len(messages):
                continue  # a trailing round still awaiting (some of) its results
            answered = {str(m["tool_call_id"]) for m in messages[i + 1 : end]}
            unanswered = set(calls) - answered
            assert not unanswered, f"message {i}: calls {sorted(unanswered)} are not answered"


def _strings(value: object) -> Iterator[str]:
    """Every string inside a message, and inside the JSON objects its strings hold."""
    if isinstance(value, str):
        yield value
        if value.startswith("{"):
            with contextlib.suppress(ValueError):
                yield from _strings(json.loads(value))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _content(message: object) -> Any:
    if isinstance(message, str):
        return message
    if isinstance(message, dict):
        return message.get("content")
    return getattr(message, "content", None)


def check_verbatim(
    rendered: Sequence[RawMessage],
    state: ConversationState[Summary],
    extra: Callable[[int, RawMessage], bool],
) -> None:
    """The log messages in ``rendered`` are the kept messages, by identity.

    Kept: the head, the pinned opening round and ``log[cutoff:]``; a copy only where a block was
    cleared or clipped.

    ``extra(i, message)`` says whether rendered message ``i`` may be one progsum added (a system
    prompt, the header or the bridge turn).
    """
    log = state.log
    if state.cutoff:
        pinned = range(*state.pinned) if state.pinned else range(0)
        kept = [*range(state.head_end), *pinned, *range(state.cutoff, len(log))]
    else:
        kept = list(range(len(log)))
    tail = log[state.cutoff :]
    assert len(rendered) >= len(tail)
    marks: dict[int, list[Any]] = {}
    latest = {(mark.at, mark.block): mark for mark in state.cleared}  # a block clipped again
    for mark in latest.values():  # (a round no request has sent yet) shows its newest mark
        marks.setdefault(mark.at, []).append(mark)
    logged = {id(m) for m in log}
    from_log = [m for i, m in enumerate(rendered) if not extra(i, m)]
    assert len(from_log) == len(kept), "the kept messages are not rendered exactly once"
    quoted = {at for at, _ in state.quotes}
    for a, index in zip(from_log, kept, strict=True):
        b = log[index]
        if index in quoted and index not in marks:
            # the message the recall answers: a copy that opens with the block, its own after
            assert a is not b
            assert role(a) == role(b)
            shown, own = _content(a), _content(b)
            if isinstance(own, str):
                assert isinstance(shown, str)
                assert shown.startswith("<recalled_history ")
                assert shown.endswith(own)
            else:
                assert shown[0]["text"].startswith("<recalled_history ")
                assert [to_record(p) for p in shown[1:]] == [to_record(p) for p in own]
            continue
        if index not in marks:
            assert a is b, f"kept message {index} is not verbatim"
            continue
        # old tool data the cheap reduction cleared or clipped: a copy with the placeholder
        assert a is not b
        assert role(a) == role(b)
        texts = list(_strings(a))
        for mark in marks[index]:
            assert any(mark.placeholder in text for text in texts)
    assert all(id(m) not in logged for i, m in enumerate(rendered) if extra(i, m)), (
        "a log message was taken for an added one"
    )


def restore_cleared(
    rendered: Sequence[RawMessage], state: ConversationState[Summary]
) -> list[RawMessage]:
    """``rendered`` with each cleared copy (checked by check_verbatim) swapped for its original."""
    restored = list(rendered)
    if state.cutoff:
        pinned = range(*state.pinned) if state.pinned else range(0)
        kept = [*range(state.head_end), *pinned, *range(state.cutoff, len(state))]
    else:
        kept = list(range(len(state)))
    start = len(rendered) - len(kept)
    position = {index: start + n for n, index in enumerate(kept)}
    for mark in state.cleared:
        if mark.at in position:
            restored[position[mark.at]] = state.log[mark.at]
    return restored


def check_anthropic_valid(rendered: Sequence[RawMessage], log: Sequence[RawMessage]) -> None:
    """A user turn first, no system role, and no continued thinking turn stripped of thinking."""
    assert rendered, "nothing rendered"
    assert role(rendered[0]) == "user"
    assert all(role(m) in ("user", "assistant") for m in rendered)
    where = {id(m): k for k, m in enumerate(log)}
    thinking = thinking_before(log)
    for i, message in enumerate(rendered):
        k = where.get(id(message))
        if k is None or role(message) != "assistant":
            continue
        contiguous = i > 0 and k > 0 and rendered[i - 1] is log[k - 1]
        if contiguous:
            continue  # the same neighbour as in the log: nothing was cut here
        if k > 0 and not is_human(log[k - 1]) and thinking[k]:
            note("tail starts inside a thinking tool turn")
            r = i - 1
            while r >= 0 and not is_human(rendered[r]):
                r -= 1
            opener = next(
                (where.get(id(m)) for m in rendered[r + 1 : i] if role(m) == "assistant"), None
            )
            pinned = (
                opener is not None
                and (opener == 0 or is_human(log[opener - 1]))
                and not any(is_human(m) for m in log[opener:k])
            )
            if pinned:
                note("the turn's opening round is pinned in front of the tail")
            assert pinned or starts_with_thinking(message), (
                f"log message {k} continues a thinking tool turn but is rendered neither with "
                "thinking nor after the turn's opening round"
            )


# -- the scripted summarizer --------------------------------------------------------------------


def restated(text: str) -> str:
    """The same item as a model might repeat it: other case and spacing, exact values untouched."""
    values = exact_values(text)
    words = [w if any(v in w for v in values) else w.upper() for w in text.split()]
    return "  " + "  ".join(words) + "."


@dataclass
class Script:
    """What the fake summarizer does: derive an update from the request, and remember it all."""

    rng: random.Random
    constraint: str
    stating: frozenset[int]
    """ids of the messages that state the task's constraint."""
    retire_rate: float
    proposed: dict[str, set[str]] = field(default_factory=lambda: {f: set() for f in LIST_FIELDS})
    objectives: set[str] = field(default_factory=set)
    reasonless: list[list[str]] = field(default_factory=list)
    """Per request: binding ids it tried to retire without a reason (merge must refuse them)."""

    def __call__(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Propose items quoting exact values, a duplicate now and then, and some retirements."""
        rng = self.rng
        segment = request.segment
        start, end = segment.start, segment.end
        add: dict[str, list[str | NewItem]] = {
            # invented values: the engine's contract refuses both (nothing in the segment has them)
            "constraints": [f"budget ${3_000 + start:,} for segment {start}"],
            "established_facts": [
                f"segment {start}-{end} read /srv/data/part-{start}.csv (sha 0x{start:04x})",
                f"segment {spelled(start)} was read",  # no value: it stands
            ],
        }
        if any(id(message) in self.stating for _, message in segment):
            add["constraints"].append(f"{USER_CONSTRAINT}{self.constraint}")
        if rng.random() < 0.5:
            text = (
                f"use port {8_000 + start} for run {start}, deadline 2025-07-{start % 28 + 1:02d}"
            )
            add["decisions"] = [NewItem(text=text, at=rng.randrange(start, end))]
        if rng.random() < 0.3:
            add["open_threads"] = [f"check https://ci.example.com/build/{start}?retry=1"]
        prior = request.prior
        live = [
            (name, item)
            for name in LIST_FIELDS
            for item in getattr(prior, name)
            if not item.text.startswith(USER_CONSTRAINT)
        ]
        retire: list[Retirement] = []
        reasonless: list[str] = []
        if live and rng.random() < self.retire_rate:
            for name, item in rng.sample(live, k=min(len(live), rng.randint(1, 3))):
                if name in BINDING and rng.random() < 0.5:
                    retire.append(Retirement(id=item.id, reason=rng.choice(("", "   "))))
                    reasonless.append(item.id)
                else:
                    retire.append(Retirement(id=item.id, reason=f"superseded in segment {start}"))
        if rng.random() < 0.1:
            retire.append(Retirement(id="C999", reason="no such item"))
        if prior.retired and rng.random() < 0.2:  # an id already retired: refused, stays retired
            retire.append(Retirement(id=rng.choice(prior.retired).item.id, reason="again"))
        for name, entries in add.items():
            self.proposed[name].update(e.text if isinstance(e, NewItem) else e for e in entries)
        staying = [(name, item) for name, item in live if item.id not in {r.id for r in retire}]
        if staying and rng.random() < 0.3:  # restate a live item: merge must drop it
            name, item = rng.choice(staying)
            add.setdefault(name, []).append(restated(item.text))
        objective = None
        if rng.random() < 0.3:
            objective = f"Tidy the repository by 2025-06-{start % 28 + 1:02d}"
            self.objectives.add(objective)
        self.reasonless.append(reasonless)
        return SummaryUpdate(
            objective=objective,
            add={name: tuple(entries) for name, entries in add.items()},
            retire=tuple(retire),
        )


# -- the run: feed, then check everything -------------------------------------------------------


@dataclass
class Run:
    """One conversation fed turn by turn, with the bookkeeping the invariants need."""

    conversation: Conversation
    policy: Policy
    script: Script
    usage_factor: float | None
    system: str | None
    """The caller's system prompt passed to both renderers."""
    blocks: bool
    """Pass the Anthropic system prompt as a list of blocks (with cache_control)."""
    fake: FunctionSummarizer = field(init=False)
    compactor: Compactor[Summary] = field(init=False)
    appended: list[RawMessage] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)
    accepted: list[tuple[int, int]] = field(default_factory=list)
    stand_ins: list[tuple[int, int]] = field(default_factory=list)
    """Folded ranges (also in ``accepted``) the extractive stand-in wrote without a request."""
    outcomes: list[bool] = field(default_factory=list)
    """Per summarizer request: whether its segment was folded (False: refused as not smaller)."""
    seen: dict[str, tuple[str, str]] = field(default_factory=dict)
    produced: dict[int, tuple[Any, str]] = field(default_factory=dict)
    """Per thinking block (by identity): the block and the digest of the prefix it came under."""
    sent_last: dict[str, Any] | None = None
    """The last Anthropic request rendered (``thinking="auto"``): what the next reply answers."""
    originals: list[str] = field(init=False)
    """JSON of every message before the run, to prove nothing edits the caller's dicts."""

    def __post_init__(self) -> None:
        self.originals = [dumps(m) for m in self.conversation.messages]
        self.fake = FunctionSummarizer(self.script)
        # policy.model set: the compactor picks the model's scaled counter itself
        counter = None if self.policy.model else COUNTER
        self.compactor = Compactor(
            summarizer=self.fake,
            policy=self.policy,
            counter=counter,
            reduction=Reduction(min_chars=120, keep_results=1),  # small, to clear often
        )

    def feed(self) -> ConversationState[Summary]:
        """Append every message, compacting after each, and check all invariants every turn."""
        counter = self.compactor.counter
        state: ConversationState[Summary] = ConversationState()
        snapshots: list[tuple[ConversationState[Summary], int, int, str]] = []
        for message in self.conversation.messages:
            if self.conversation.format == "anthropic" and role(message) == "assistant":
                self.record_produced(message)
            state = state.append(message)
            self.appended.append(message)
            if self.usage_factor is not None and role(message) == "assistant":
                reported = round(state.estimate(counter) * self.usage_factor) + 50
                state = state.record_usage(reported, counter=counter)
            before, requests = state, len(self.fake.requests)
            state = self.compactor.maybe_compact(state)
            last = message is self.conversation.messages[-1]
            persist = last or len(state.events) > len(before.events)
            self.check_turn(state, before, requests, persist=persist)
            if persist:
                snapshots.append((state, len(state), state.cutoff, state.header))
        assert all(
            dumps(m) == copy for m, copy in zip(self.appended, self.originals, strict=True)
        ), "a caller's message was modified"
        self.check_values(state, snapshots)
        return state

    def check_values(
        self,
        final: ConversationState[Summary],
        snapshots: Sequence[tuple[ConversationState[Summary], int, int, str]],
    ) -> None:
        """States are values: later turns, and appending to an older state, change no state."""
        if snapshots:
            old = snapshots[0][0]
            forked = old.append({"role": "user", "content": "a different branch"})
            assert forked.log[-1]["content"] == "a different branch"
            assert len(forked) == len(old) + 1
        for old, length, cutoff, header in snapshots:
            assert (len(old), old.cutoff, old.header) == (length, cutoff, header)
            assert all(a is b for a, b in zip(old.log, self.appended[:length], strict=True))
        assert len(final) == len(self.appended)
        assert all(a is b for a, b in zip(final.log, self.appended, strict=True))

    def check_turn(
        self,
        state: ConversationState[Summary],
        before: ConversationState[Summary],
        requests: int,
        *,
        persist: bool,
    ) -> None:
        """Every invariant, after one maybe_compact.

        The JSON round trip (invariant 7) re-reads the whole log, so it runs when the turn
        recorded an event and on the last turn; in between, only the verbatim tail has grown.
        """
        self.check_attempts(state, before, requests)
        self.check_nothing_lost(state)
        self.check_no_double_work(state)
        self.check_summary(state)
        fmt = self.conversation.format
        if fmt in ("anthropic", "neutral"):
            self.check_anthropic_view(state, persist=persist)
        if fmt in ("openai", "neutral"):
            self.check_openai_view(state, persist=persist)

    # invariant 8 and the request/event bookkeeping
    def check_attempts(
        self, state: ConversationState[Summary], before: ConversationState[Summary], requests: int
    ) -> None:
        """At most one attempt per turn, progress when compacted, and a stable second call."""
        new_events = state.events[len(before.events) :]
        decision = self.compactor.decide(before)
        if decision.unit == "messages":
            pinned = before.pinned[1] - before.pinned[0] if before.pinned else 0
            expected = (
                len(before) - before.cutoff + before.head_end + pinned
                if before.cutoff
                else len(before)
            )
            assert decision.measured == expected
        recalled = state is not before and state.recall != before.recall
        if before.attempted_at == len(before) or not decision.due:
            if recalled and state.events == before.events:  # only the recall was chosen anew
                assert state.cutoff == before.cutoff
                assert state.summary == before.summary
            else:
                assert state is before, "compacted when not due, or twice in one turn"
        else:
            assert state.attempted_at == len(state), "a due compaction was not attempted"
        assert [e.number for e in state.events] == list(range(1, len(state.events) + 1))
        if state is not before and state.events != before.events:
            assert state.attempted_at == len(state)
        new_requests = self.fake.requests[requests:]
        if new_events and new_events[0].outcome == "reduced":
            reduced, new_events = new_events[0], new_events[1:]
            assert reduced.tokens_after < reduced.tokens_before, "a reduction freed nothing"
            assert reduced.cleared, "a reduction cleared nothing"
            note("old tool data cleared")
            if currently_in_test_context():
                event("old tool data cleared")
            waiting = any(  # a refused summary waits for a bigger segment before it is asked again
                e.retry_at_tokens is not None
                for e in itertools.takewhile(
                    lambda e: e.outcome != "compacted", reversed(before.events)
                )
            )
            if not new_events:
                assert not new_requests, "the summarizer was called after a sufficient reduction"
                if not waiting:
                    assert reduced.tokens_after <= self.compactor.policy.target_limit
        consolidated = None
        if new_events and new_events[-1].outcome == "consolidated":
            consolidated, new_events = new_events[-1], new_events[:-1]
            if not new_events or new_events[-1].outcome != "compacted":
                # a due turn that folds nothing gives the header way only near the window
                window = self.compactor.policy.input_window
                assert window is not None, "consolidated after no compaction"
                assert consolidated.tokens_before >= math.floor(window * WINDOW_GUARD)
                assert "the window leaves it" in consolidated.reason
            assert consolidated.merge is not None
            note("summary consolidated")
            if currently_in_test_context():
                event("summary consolidated")
        assert all(e.outcome not in ("reduced", "consolidated") for e in new_events), (
            "two reductions or consolidations in one turn"
        )
        assert len(new_events) <= 1, "more than one compaction event in one turn"
        assert len(new_requests) <= 1, "more than one summarizer call in one turn"
        if len(state.events) > len(before.events):
            assert len(state) not in self.attempts, "two attempts at the same log length"
            self.attempts.append(len(state))
        assert self.compactor.maybe_compact(state) is state, "a second call in the turn did work"
        for past in state.events:
            if past.outcome == "compacted":
                assert past.tokens_after < past.tokens_before
        if new_requests:
            request = new_requests[0]
            segment = request.segment
            assert new_events, "the summarizer was called but no event was recorded"
            prior = before.summary if before.summary is not None else Summary()
            assert request.prior == prior, "the summarizer did not get the current summary"
            log = before.log
            assert segment.start == (before.cutoff or expected_head(log, self.policy.keep_first))
            assert all(m is log[segment.start + i] for i, m in enumerate(segment.messages)), (
                "the segment is not the caller's messages"
            )
            attempt = new_events[0]
            self.outcomes.append(attempt.outcome == "compacted")
            if attempt.outcome == "compacted":
                assert attempt.folded == (segment.start, segment.end)
                self.accepted.append((segment.start, segment.end))
                counter = self.compactor.counter
                # the event counts the fold, before the recall
                bare = state._replace(_recalls=(), _quotes=(), _recall_tokens=None)
                counted, _ = count_with_anchor(
                    bare.anchor, bare.estimate(counter), self.policy.safety_margin
                )
                unit, amount = self.policy.keep_amount
                totals = state.running_totals(counter)
                kept = (
                    len(state) - state.cutoff
                    if unit == "messages"
                    else (totals[len(state)] - totals[state.cutoff])
                )
                near_window = self.compactor.decide(before).tokens >= self.policy.guard_limit
                if (
                    near_window and self.policy.unit == "tokens"
                ):  # past the window guard the window outranks keep
                    note("keep narrowed near the window")
                    amount = 1 if unit == "messages" else min(amount, kept)
                assert kept >= amount, f"the tail keeps {kept} {unit}, under keep={amount}"
                if consolidated is None:
                    assert attempt.tokens_after == counted, "tokens_after is not the state's count"
                else:
                    assert consolidated.tokens_before == attempt.tokens_after
                    assert consolidated.tokens_after == counted, "tokens_after is not the count"
                assert attempt.merge is not None
                refused = {r.id for r in attempt.merge.refused}
                if self.script.reasonless[-1]:
                    note("reasonless binding retirement proposed")
                if attempt.merge.retired:
                    note("items retired with a reason")
                missing = set(self.script.reasonless[-1]) - refused
                assert not missing, f"reasonless binding retirements {missing} were not refused"
            else:
                assert attempt.stall == "not_smaller"
                if len(self.outcomes) > 1 and not self.outcomes[-2]:
                    note("summarizer asked again after a refused (not smaller) summary")
        elif new_events:
            first = new_events[0]
            waiting = bool(self.outcomes) and not self.outcomes[-1]  # a refusal waits to double
            if first.outcome == "compacted":  # near the window meanwhile: folded extractively
                assert first.degraded_reason is not None
                assert first.degraded_reason.startswith("the last summary was refused")
                assert waiting, "a fold without a request, but no refusal to wait on"
                assert first.folded is not None
                self.accepted.append(first.folded)
                self.stand_ins.append(first.folded)
                note("folded extractively while a refused summary waited")
            elif first.stall == "not_smaller":  # the extractive stand-in was not smaller either
                assert waiting, "refused without a request, but no refusal to wait on"
            else:
                assert first.outcome == "stalled"
                assert first.stall in ("nothing_to_fold", "no_gain")

    # invariant 4
    def check_nothing_lost(self, state: ConversationState[Summary]) -> None:
        """The log is exactly the appended objects, in order."""
        log = list(state.log)
        assert len(log) == len(self.appended)
        assert all(a is b for a, b in zip(log, self.appended, strict=True))

    # invariant 3
    def check_no_double_work(self, state: ConversationState[Summary]) -> None:
        """Folded ranges are disjoint, contiguous from the head; no request re-reads them.

        Two requests overlap only when the first was refused as not smaller (nothing folded): the
        next turn asks again from the same start.
        """
        folded = [e.folded for e in state.events if e.outcome == "compacted"]
        assert all(f is not None for f in folded)
        ranges = [f for f in folded if f is not None]
        assert ranges == self.accepted
        for (_, end), (start, _) in itertools.pairwise(ranges):
            assert start == end, "folded ranges are not contiguous"
        assert all(start < end for start, end in ranges)
        if ranges:
            assert ranges[0][0] == state.head_end
            assert state.head_end == expected_head(state.log, self.policy.keep_first)
            assert ranges[-1][1] == state.cutoff
        else:
            assert state.cutoff == 0
        frontier = 0
        assert len(self.outcomes) == len(self.fake.requests)
        for request, folded_it in zip(self.fake.requests, self.outcomes, strict=True):
            segment = request.segment
            assert segment.start >= frontier, "a request re-read messages already folded"
            if folded_it:
                frontier = segment.end

    # invariants 5 and 6
    def check_summary(self, state: ConversationState[Summary]) -> None:
        """Items keep their exact text; a binding item leaves only with a stated reason."""
        summary = state.summary
        if summary is None:
            return
        live = {
            item.id: (name, item.text) for name in LIST_FIELDS for item in getattr(summary, name)
        }
        tombs = {t.item.id: t for t in summary.retired}
        assert not live.keys() & tombs.keys(), "an item is both live and retired"
        for name in LIST_FIELDS:
            for item in getattr(summary, name):
                start, end = item.source
                assert any(a <= start < end <= b for a, b in self.accepted), (
                    f"{item.id} says it came from {item.source}, outside every folded segment"
                )
        extracted = {
            item.id
            for name in LIST_FIELDS
            for item in getattr(summary, name)
            if item.origin == "extracted"
        }
        said = [" ".join(message_text(m).split()) for m in state.log if role(m) == "user"]
        # merge takes the outer whitespace off every item (progsum.summary._merge): not a rewrite
        proposed = {text.strip() for texts in self.script.proposed.values() for text in texts}
        trailed = {
            item.id
            for name in LIST_FIELDS
            for item in getattr(summary, name)
            if item.origin == "extracted" and item.author == "tool"
        }
        leaves = _tool_leaves(state.log)
        stood_in = {
            item.id: item.source
            for name in LIST_FIELDS
            for item in getattr(summary, name)
            if item.id in extracted
            and item.id not in trailed
            and any(a <= item.source[0] < item.source[1] <= b for a, b in self.stand_ins)
        }
        for item_id, (name, text) in live.items():
            if item_id in stood_in:  # the extractive stand-in's: a note of the folded messages
                start, end = stood_in[item_id]
                said_there = " ".join(message_text(m) for m in state.log[start:end])
                allowed = set(_words(said_there)) | _LABEL_WORDS
                for part in text.split("; "):
                    new = [w for w in _words(part) if w and w not in allowed]
                    assert len(new) <= 1, (  # the one verb made to agree: "I'm" -> "is"
                        f"stand-in item {item_id} {text!r} has words the fold lacks: {new}"
                    )
            elif item_id in trailed:
                # the artifact trail: one line, its exact values from tool data
                assert name not in BINDING, f"trail item {item_id} went into binding {name}"
                assert "\n" not in text, f"trail item {item_id} spans lines: {text!r}"
                for token in text.partition(": ")[0].split():
                    exact = token.strip("\"'(),…")
                    if exact and any(c.isdigit() or c == "/" for c in exact):
                        assert any(exact in leaf for leaf in leaves), (
                            f"trail item {item_id} names {exact!r}, which no tool call carries"
                        )
            elif item_id in extracted:  # the guard's or the ledger's: a user's sentence, verbatim
                assert name in ("constraints", "established_facts"), (
                    f"{item_id} was extracted into {name}"
                )
                # a restored fact may say who stated it and when: "User (9 June 2023): ..."
                body = _USER_LABEL.sub("", text) if name == "established_facts" else text
                assert any(" ".join(body.split()) in words for words in said), (
                    f"extracted {item_id} text {text!r} is no user's sentence"
                )
            else:  # a binding item the user did not state may be filed as a fact, never rewritten
                assert text in proposed, f"{item_id} text {text!r} was rewritten"
                if name in BINDING:
                    assert text in {p.strip() for p in self.script.proposed[name]}, (
                        f"{item_id} moved into {name}"
                    )
            assert self.seen.setdefault(item_id, (name, text)) == (name, text), (
                f"{item_id} changed from {self.seen[item_id]} to {(name, text)}"
            )
            assert text in state.header, f"{item_id} is not in the header verbatim"
        for item_id, (name, text) in self.seen.items():
            if item_id in live:
                continue
            tomb = tombs.get(item_id)
            assert tomb is not None, f"{item_id} ({name}) vanished without a tombstone"
            assert (tomb.field, tomb.item.text) == (name, text)
            if name in BINDING:  # only on the user's word: a user message of the folded segment
                assert tomb.evidence is not None, f"binding {item_id} left without user evidence"
                assert state.authors[tomb.evidence] == "user", f"{item_id}: evidence not the user's"
        for tomb in tombs.values():
            self.seen.setdefault(tomb.item.id, (tomb.field, tomb.item.text))
        if summary.objective:
            assert summary.objective in self.script.objectives

    def restore(self, state: ConversationState[Summary]) -> ConversationState[Summary]:
        """The state read back from its JSON: same text again, same header, same attempt mark."""
        text = state.to_json()
        restored = ConversationState.from_json(text)
        assert restored.to_json() == text
        assert restored.header == state.header
        assert (restored.cutoff, restored.head_end) == (state.cutoff, state.head_end)
        if state.attempted_at == len(state):
            assert self.compactor.maybe_compact(restored) is restored
        return restored

    def constraint_visible(
        self, state: ConversationState[Summary], rendered: Sequence[RawMessage]
    ) -> bool:
        """The task's constraint string is in the rendered messages or the header."""
        constraint = self.conversation.constraint
        if len(state) <= self.conversation.task_index:
            return True  # the task message has not been appended yet
        return constraint in state.header or any(id(m) in self.script.stating for m in rendered)

    # the provider's prefix rule on thinking blocks (tests/prefix_rule.py)
    def record_produced(self, message: RawMessage) -> None:
        """Note the prefix each thinking block of ``message`` was produced under.

        The model wrote ``message`` in answer to the last request rendered before it was
        appended, so that request's system and messages, then the blocks before it in its own
        message, are each block's prefix ("Preserved thinking", Anthropic).
        """
        if self.sent_last is None:
            return
        body = {**self.sent_last, "messages": [*self.sent_last["messages"], message]}
        for b, block in enumerate(prefix_rule.blocks(_content(message))):
            if isinstance(block, Mapping) and block.get("type") in prefix_rule.THINKING:
                self.produced[id(block)] = (
                    block,
                    prefix_rule.prefix_digest(body, len(body["messages"]) - 1, b),
                )

    def check_prefix_rule(self, system: Sequence[Any], messages: Sequence[RawMessage]) -> None:
        """Every thinking block the request sends presents the prefix it was produced under."""
        body = {"system": list(system), "messages": [dict(m) for m in messages]}
        for m, message in enumerate(messages):
            for b, block in enumerate(prefix_rule.blocks(_content(message))):
                known = self.produced.get(id(block))
                if known is None or known[0] is not block:
                    continue
                assert prefix_rule.prefix_digest(body, m, b) == known[1], (
                    f"message {m} resends a thinking block whose prefix changed: the API refuses it"
                )
                note("thinking block resent under its own prefix")
        self.sent_last = body

    # invariants 1, 2, 5 (the first message), 7 and 9 for Anthropic
    def check_anthropic_view(self, state: ConversationState[Summary], *, persist: bool) -> None:
        """The Anthropic view is paired, verbatim, valid, deterministic and survives JSON."""
        given = list(SYSTEM_BLOCKS) if self.blocks else self.system
        sent_system, sent = render_anthropic(state, system=given)  # thinking="auto"
        self.check_prefix_rule(sent_system, sent)
        system, messages = render_anthropic(state, system=given, thinking="keep")
        system_again, messages_again = render_anthropic(state, system=given, thinking="keep")
        assert system_again == system == sent_system
        assert same_render(messages_again, messages), "rendering the same state twice differs"
        check_only_thinking_left_out(sent, messages)
        check_anthropic_pairing(messages)
        log = self.appended
        logged = {id(m) for m in log}

        def bridge(i: int, message: RawMessage) -> bool:
            extra = len(messages) > state.effective_length  # else a clipped copy comes first
            return extra and i == 0 and role(message) == "user" and id(message) not in logged

        check_verbatim(messages, state, bridge)
        if messages and id(messages[0]) not in logged:
            note("bridge turn rendered")
        if tool_use_ids(messages[-1]):
            note("trailing call awaiting its result")
        check_anthropic_valid(restore_cleared(messages, state), state.log)
        assert all(b.get("type") == "text" for b in system)
        caller = list(SYSTEM_BLOCKS) if self.blocks else [{"type": "text", "text": self.system}]
        expected = caller if self.blocks or self.system else []
        expected += [{"type": "text", "text": state.header}] if state.header else []
        assert system == expected, "the system blocks are not the caller's prompt and the header"
        if self.policy.keep_first and len(state) > self.conversation.task_index:
            first = next(m for m in messages if id(m) in logged)
            assert id(first) in self.script.stating, "the task message was dropped"
        assert self.constraint_visible(state, messages), "the user's constraint was lost"
        if not persist:
            return
        restored = self.restore(state)
        again = render_anthropic(restored, system=given, thinking="keep")
        assert dumps(again) == dumps((system, messages)), (
            "the state read back from JSON renders differently"
        )
        assert dumps(render_anthropic(restored, system=given)) == dumps((sent_system, sent)), (
            "the state read back from JSON leaves out different thinking"
        )

    # invariants 1, 2, 5 (the first message) and 7 for OpenAI
    def check_openai_view(self, state: ConversationState[Summary], *, persist: bool) -> None:
        """The OpenAI view is paired, verbatim, deterministic and survives JSON."""
        messages = render_openai(state, system=self.system)
        assert same_render(render_openai(state, system=self.system), messages), (
            "rendering the same state twice differs"
        )
        check_openai_pairing(messages)
        header = state.header

        logged = {id(m) for m in state.log}

        def added(i: int, message: RawMessage) -> bool:
            if role(message) != "system" or id(message) in logged:
                return False
            content = message["content"]
            caller = i == 0 and bool(self.system) and content == self.system
            return caller or bool(header and content == header)

        check_verbatim(messages, state, added)
        if self.policy.keep_first and len(state) > self.conversation.task_index:
            first = next(m for m in messages if role(m) not in ("system", "developer"))
            assert id(first) in self.script.stating, "the task message was dropped"
        assert self.constraint_visible(state, messages), "the user's constraint was lost"
        if not persist:
            return
        restored = self.restore(state)
        assert dumps(render_openai(restored, system=self.system)) == dumps(messages), (
            "the state read back from JSON renders differently"
        )


# -- policies -----------------------------------------------------------------------------------


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    """Valid policies with small windows, every kind of trigger, target and tail."""
    window = draw(st.integers(2_000, 5_000) | st.integers(2_000, 20_000))
    model = draw(st.sampled_from((None, None, "claude-opus-4-7", "claude-sonnet-4-5")))
    keep_first = draw(st.booleans())
    margin = draw(st.sampled_from((1.0, 1.3, 1.3, 2.0)))
    kind = draw(st.sampled_from(("fraction", "fraction", "messages", "tokens")))
    trigger: Threshold
    if kind == "fraction":
        trigger = ("fraction", draw(st.floats(0.3, 0.9)))
    elif kind == "messages":
        trigger = ("messages", draw(st.integers(6, 40)))
    else:
        trigger = ("tokens", draw(st.integers(600, window - window // 10)))
    probe = Policy(context_window=window, trigger=trigger, keep=("messages", 1))
    target: Threshold | None = None
    if draw(st.integers(0, 3)) == 0:  # an explicit target, in the trigger's unit
        limit = probe.trigger_limit
        if probe.unit == "messages":
            target = ("messages", draw(st.integers(3, limit - 1)))
        else:
            target = ("tokens", draw(st.integers(limit // 4, limit - 1)))
        probe = Policy(context_window=window, trigger=trigger, target=target, keep=("messages", 1))
    goal, unit, room = probe.target_limit, probe.unit, probe.input_window or window
    keep: Threshold
    tail = draw(st.sampled_from(("messages", "tokens", "fraction")))
    if tail == "messages":
        keep = ("messages", draw(st.integers(1, min(10, goal - 1 if unit == "messages" else 10))))
    elif tail == "tokens" or (unit == "tokens" and goal * 10 < room):
        keep = ("tokens", draw(st.integers(1, min(3_000, goal - 1 if unit == "tokens" else room))))
    else:
        top = min(0.3, (goal - 1) / room) if unit == "tokens" else 0.3
        keep = ("fraction", draw(st.floats(0.01, top)))
    return Policy(
        model=model,
        context_window=window,
        trigger=trigger,
        target=target,
        keep=keep,
        keep_first=keep_first,
        safety_margin=margin,
    )


def run(conversation: Conversation, policy: Policy, rng: random.Random, usage: bool) -> Run:
    """Feed ``conversation`` under ``policy`` with a scripted summarizer; return the run."""
    stating = frozenset(id(m) for m in conversation.messages if conversation.constraint in dumps(m))
    script = Script(
        rng=rng, constraint=conversation.constraint, stating=stating, retire_rate=rng.random()
    )
    factor = rng.uniform(0.8, 1.5) if usage else None
    feeding = Run(
        conversation=conversation,
        policy=policy,
        script=script,
        usage_factor=factor,
        system=rng.choice(SYSTEMS),
        blocks=rng.random() < 0.25,
    )
    state = feeding.feed()
    compacted = len(feeding.accepted)
    note(f"compactions: {'0' if not compacted else '1-3' if compacted < 4 else '4+'}")
    note(f"messages: {len(state) // 40 * 40}+")
    for stalled in {e.stall for e in state.events if e.stall}:
        note(f"stall: {stalled}")
    return feeding


# -- the engine, turn by turn -------------------------------------------------------------------

# The three full feeds are the suite's longest runs, marked slow (CI runs them in a step of their
# own); the default run feeds 20 text-only conversations through the same checks every turn in
# test_refused_summaries_back_off.


@pytest.mark.slow
@FEED_SETTINGS
@given(
    conversation=anthropic_conversations(),
    policy=policies(),
    rng=st.randoms(use_true_random=False),
    usage=st.booleans(),
)
def test_invariants_hold_every_turn_anthropic(
    conversation: Conversation, policy: Policy, rng: random.Random, usage: bool
) -> None:
    """Anthropic conversations keep invariants 1-9 after every maybe_compact."""
    run(conversation, policy, rng, usage)


@pytest.mark.slow
@FEED_SETTINGS
@given(
    conversation=openai_conversations(),
    policy=policies(),
    rng=st.randoms(use_true_random=False),
    usage=st.booleans(),
)
def test_invariants_hold_every_turn_openai(
    conversation: Conversation, policy: Policy, rng: random.Random, usage: bool
) -> None:
    """OpenAI conversations keep invariants 1-8 after every maybe_compact."""
    run(conversation, policy, rng, usage)


@pytest.mark.slow
@FEED_SETTINGS
@given(
    conversation=neutral_conversations(),
    policy=policies(),
    rng=st.randoms(use_true_random=False),
    usage=st.booleans(),
)
def test_invariants_hold_every_turn_neutral(
    conversation: Conversation, policy: Policy, rng: random.Random, usage: bool
) -> None:
    """Text-only conversations keep every invariant, rendered for both providers, every turn."""
    run(conversation, policy, rng, usage)


_CHATTER = Conversation(
    "neutral",
    (
        {"role": "user", "content": "Task. CONSTRAINT-c0ffee: at most $10 under /data/c0ffee."},
        *({"role": ("assistant", "user")[n % 2], "content": "ok"} for n in range(39)),
    ),
    "CONSTRAINT-c0ffee: at most $10 under /data/c0ffee",
    pending=False,
)


_NOTED = Conversation(
    "neutral",
    (
        {
            "role": "user",
            "content": "0 Task: tidy the repository. CONSTRAINT-000000: never spend more than "
            "$100 and only write under /data/000000. Thanks!",
        },
        *({"role": ("assistant", "user")[n % 2], "content": ""} for n in range(9)),
        {"role": "user", "content": big_text(1000, 10)},
        {"role": "assistant", "content": "Let me look at the failing test first."},
        {"role": "user", "content": "Let me look at the failing test first."},
        {"role": "assistant", "content": big_text(1260, 13)},
        {"role": "user", "content": big_text(1000, 14)},
        *({"role": ("assistant", "user")[n % 2], "content": ""} for n in range(11)),
    ),
    "CONSTRAINT-000000: never spend more than $100 and only write under /data/000000",
    pending=False,
)
"""Found by the property run: a refused summary, then near the window the extractive stand-in
folds the task sentence as a note without its article ("0 Task: tidy repository")."""


@settings(max_examples=20, deadline=None)
@example(
    conversation=_NOTED,
    policy=Policy(
        context_window=2_000,
        trigger=("tokens", 1_079),
        keep=("messages", 1),
        keep_first=False,
        target=("tokens", 269),
        safety_margin=2.0,
    ),
    rng=random.Random(0),  # noqa: S311 - test data, not crypto
)
@example(
    conversation=_CHATTER,
    policy=Policy(context_window=2_000, trigger=("messages", 6), keep=("messages", 2)),
    rng=random.Random(0),  # noqa: S311 - test data, not crypto
)
@given(
    conversation=neutral_conversations(),
    policy=policies(),
    rng=st.randoms(use_true_random=False),
)
def test_refused_summaries_back_off(
    conversation: Conversation, policy: Policy, rng: random.Random
) -> None:
    """Requests overlap only after a refused summary, and then only once the segment has doubled.

    A summary larger than what it replaces is refused (stall ``not_smaller``) and nothing is
    folded; asking again every turn would pay for a refused call per turn (a compaction loop).
    """
    feeding = run(conversation, policy, rng, usage=False)
    counter = feeding.compactor.counter
    requests = feeding.fake.requests
    refused = feeding.outcomes.count(False)
    for earlier, later in itertools.pairwise(requests):
        if later.segment.start >= earlier.segment.end:
            continue  # the earlier request was folded: no overlap
        assert later.segment.start == earlier.segment.start, "overlap that is not a retry"
        size = [sum(counter.count_message(m) for _, m in r.segment) for r in (earlier, later)]
        assert size[1] >= 2 * size[0], f"retried at {size[1]} tokens after {size[0]}"
    assert len(requests) == len(feeding.accepted) - len(feeding.stand_ins) + refused


# -- the split, directly ------------------------------------------------------------------------


@DIRECT_SETTINGS
@given(conversation=conversations())
def test_is_safe_cut_matches_the_raw_message_oracle(conversation: Conversation) -> None:
    """is_safe_cut says yes exactly where the tail may start: not a result, not a stripped turn."""
    log = conversation.messages
    infos = ConversationState(log).infos
    thinking = thinking_before(log)
    for j in range(len(log)):
        assert is_safe_cut(infos, j) == oracle_safe_cut(log, j, thinking), f"at message {j}"


@DIRECT_SETTINGS
@given(conversation=conversations(), data=st.data())
def test_find_cut_never_splits_a_tool_round(
    conversation: Conversation, data: st.DataObject
) -> None:
    """A cut is never a tool result, never separates calls from results, and keeps the tail."""
    log = conversation.messages
    state = ConversationState(log)
    totals = state.running_totals(COUNTER)
    low = data.draw(st.integers(0, len(log) - 1), label="low")
    keep: tuple[Any, int] = data.draw(
        st.one_of(
            st.tuples(st.just("messages"), st.integers(1, len(log) + 2)),
            st.tuples(st.just("tokens"), st.integers(1, totals[-1] + 10)),
        ),
        label="keep",
    )
    cut = find_cut(state.infos, totals, low=low, keep=keep)
    thinking = thinking_before(log)
    if keep[0] == "messages":
        natural = len(log) - keep[1]
    else:
        natural = max(
            (j for j in range(len(log) + 1) if totals[-1] - totals[j] >= keep[1]), default=-1
        )
    natural = min(natural, len(log) - 1)
    if cut is None:
        assert not any(oracle_safe_cut(log, j, thinking) for j in range(low + 1, natural + 1))
        return
    assert low < cut <= natural
    assert not is_result(log[cut])
    assert oracle_safe_cut(log, cut, thinking)
    for k in range(cut, len(log)):
        if is_result(log[k]):
            assert call_index(log, k) >= cut, f"result {k} is kept but its call was folded"
    assert not any(oracle_safe_cut(log, j, thinking) for j in range(cut + 1, natural + 1)), (
        "a later safe cut was skipped: the tail grew more than needed"
    )
    if keep[0] == "messages":
        assert len(log) - cut >= keep[1]
    else:
        assert totals[-1] - totals[cut] >= keep[1]


# -- the token counter --------------------------------------------------------------------------


COUNTERS = st.sampled_from(
    (
        COUNTER,
        HeuristicCounter.for_model("claude-opus-4-7"),
        HeuristicCounter(scale=0.5, prose_chars_per_token=4.0, data_chars_per_token=2.0),
    )
)


@DIRECT_SETTINGS
@given(conversation=conversations(max_turns=3), text=st.text(), counter=COUNTERS)
def test_counter_is_never_negative(
    conversation: Conversation, text: str, counter: HeuristicCounter
) -> None:
    """HeuristicCounter counts every text and message as zero or more tokens."""
    assert counter.count_text(text) >= 0
    assert all(counter.count_message(m) >= 0 for m in conversation.messages)


@DIRECT_SETTINGS
@given(first=st.text(), second=st.text(), as_blocks=st.booleans(), counter=COUNTERS)
def test_counter_is_monotone_under_appending_text(
    first: str, second: str, as_blocks: bool, counter: HeuristicCounter
) -> None:
    """Appending text never lowers the count of a text or of a message holding it."""
    assert counter.count_text(first + second) >= counter.count_text(first)
    assert counter.count_text(first + second) >= counter.count_text(second)

    def message(text: str) -> dict[str, Any]:
        if as_blocks:
            return {"role": "user", "content": [{"type": "text", "text": text}]}
        return {"role": "user", "content": text}

    assert counter.count_message(message(first + second)) >= counter.count_message(message(first))


# -- the merge ----------------------------------------------------------------------------------

_IDS = st.sampled_from([f"{p}{n}" for p in ("D", "C", "F", "O", "R") for n in range(1, 6)])


@st.composite
def updates(draw: st.DrawFn, start: int, end: int) -> SummaryUpdate:
    """Arbitrary summarizer updates for the segment ``[start, end)``."""
    item = st.one_of(
        texts(30),
        st.builds(NewItem, text=texts(30), at=st.none() | st.integers(start, end - 1)),
    )
    add = draw(st.dictionaries(st.sampled_from(LIST_FIELDS), st.lists(item, max_size=4).map(tuple)))
    retire = draw(
        st.lists(st.builds(Retirement, id=_IDS, reason=st.sampled_from(("", " ", "done"))))
    )
    objective = draw(st.none() | texts(30))
    return SummaryUpdate(objective=objective, add=add, retire=tuple(retire))


@DIRECT_SETTINGS
@given(data=st.data(), rounds=st.integers(0, 4))
def test_merge_is_deterministic(data: st.DataObject, rounds: int) -> None:
    """The same prior and update always merge to equal summaries and reports; prior untouched."""
    prior = Summary()
    for number in range(1, rounds + 1):
        update = data.draw(updates(number * 10, number * 10 + 5), label=f"update {number}")
        prior, _ = merge(prior, update, source=(number * 10, number * 10 + 5), compaction=number)
    update = data.draw(updates(100, 110), label="update")
    before = prior.model_dump_json()
    first = merge(prior, update, source=(100, 110), compaction=rounds + 1)
    second = merge(prior, update, source=(100, 110), compaction=rounds + 1)
    assert first == second
    assert first[0].model_dump_json() == second[0].model_dump_json()
    assert prior.model_dump_json() == before


def check_views_slice_like_lists(state: ConversationState[Summary], index: slice | int) -> None:
    """log, infos and running_totals answer ``index`` as the lists they stand for would."""
    log, infos, totals = state.log, state.infos, state.running_totals(COUNTER)
    assert (len(log), len(infos), len(totals)) == (len(state), len(state), len(state) + 1)
    for view in (log, infos, totals):
        as_list = list(view)
        same = operator.eq if view is totals else operator.is_  # totals are ints in an array
        if isinstance(index, int):
            if -len(as_list) <= index < len(as_list):
                assert same(view[index], as_list[index])
            else:
                with pytest.raises(IndexError):
                    view[index]
            continue
        got = view[index]
        assert len(got) == len(as_list[index])
        assert all(same(a, b) for a, b in zip(got, as_list[index], strict=True))


def log_states(
    conversation: Conversation, length: int
) -> tuple[ConversationState[Summary], ConversationState[Summary]]:
    """An older state of ``length`` messages and the newer one grown from it (shared storage)."""
    messages = conversation.messages
    older: ConversationState[Summary] = ConversationState(messages[:length])
    older.running_totals(COUNTER)
    newer = older.extend(messages[length:])
    newer.running_totals(COUNTER)
    return older, newer


_BOUND = st.none() | st.integers(-25, 25)


@DIRECT_SETTINGS
@given(
    conversation=neutral_conversations(max_messages=20),
    data=st.data(),
    index=st.integers(-25, 25) | st.builds(slice, _BOUND, _BOUND, st.none() | st.integers(1, 3)),
)
def test_log_views_index_and_slice_like_lists(
    conversation: Conversation, data: st.DataObject, index: slice | int
) -> None:
    """Nothing lost through the views: indexing and forward slicing match the appended list."""
    length = data.draw(st.integers(1, len(conversation.messages)), label="older length")
    for state in log_states(conversation, length):
        check_views_slice_like_lists(state, index)


@settings(max_examples=60, deadline=None)
@example(
    conversation=Conversation(
        "neutral",
        ({"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}),
        "a",
        pending=False,
    ),
    index=slice(None, None, -1),
)
@given(
    conversation=neutral_conversations(max_messages=20),
    index=st.builds(slice, _BOUND, _BOUND, st.integers(-3, -1)),
)
def test_log_views_slice_backwards_like_lists(conversation: Conversation, index: slice) -> None:
    """Negative-step slices of log, infos and running_totals match the appended list."""
    for state in log_states(conversation, len(conversation.messages)):
        check_views_slice_like_lists(state, index)


def test_feed_reaches_compaction() -> None:
    """The generated feeds are not vacuous: a tool-heavy conversation compacts several times."""
    conversation = Conversation(
        "anthropic",
        tuple(
            [{"role": "user", "content": "Task. CONSTRAINT-abc123: keep $5 under /data/abc123."}]
            + [
                message
                for n in range(30)
                for message in (
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "bash", "input": {}}],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t",
                                "content": "x" * 900 + str(n),
                            }
                        ],
                    },
                )
            ]
        ),
        "CONSTRAINT-abc123: keep $5 under /data/abc123",
        pending=False,
    )
    policy = Policy(context_window=4_000, trigger=("fraction", 0.6), keep=("messages", 4))
    feeding = run(conversation, policy, random.Random(7), usage=False)  # noqa: S311 - test data, not crypto
    assert len(feeding.accepted) >= 3


_LABEL_WORDS = frozenset({"user", "assistant"})
"""A note's speaker label when messages carry no ``name`` (`progsum.judge._notes`)."""
_USER_LABEL = re.compile(r"^User(?: \(\d{1,2} [A-Z][a-z]+ \d{4}\))?: ")
"""The note label a restored user's fact starts with (the generated messages name no speaker)."""


def _words(text: str) -> list[str]:
    """Case-folded whitespace words without the punctuation around them."""
    return [w.strip(".,;:!?\"'()[]").casefold() for w in text.split()]


def _tool_leaves(log: Sequence[Any]) -> list[str]:
    """Every string in the log's messages, with OpenAI argument strings decoded as JSON too."""
    found: list[str] = []
    stack: list[Any] = list(log)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found.append(value)
            with contextlib.suppress(ValueError):
                stack.append(json.loads(value))
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return found


def test_stale_thinking_is_left_out_and_nothing_else() -> None:
    """After a fold, the request leaves out the thinking whose prefix changed, and only that.

    Found by CI's feed: a redacted thinking block in the kept tail after the first fold.
    """
    constraint = "CONSTRAINT-000000: never spend more than $100 and only write under /data/000000"
    big = "000000 worker[0] GET /api/v2/items 200 " * 50
    call = {"type": "tool_use", "id": "toolu_00", "name": "bash"}
    failed = [{"type": "tool_result", "tool_use_id": "toolu_00", "content": "", "is_error": True}]
    messages = (
        {
            "role": "user",
            "content": [{"type": "text", "text": f" Task: tidy the repository. {constraint}"}],
        },
        {
            "role": "assistant",
            "content": [{**call, "input": {"path": "/repo/gen_1.py", "content": big}}],
        },
        {"role": "user", "content": [*failed, {"type": "text", "text": ""}]},
        {"role": "user", "content": ""},
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "EqQBCkYIARgCKkB00000004redacted"},
                {**call, "input": {"path": "/repo/src/mod_4.py", "query": "", "limit": 4}},
            ],
        },
        {"role": "user", "content": [*failed, {"type": "text", "text": ""}]},
        {
            "role": "assistant",
            "content": [{**call, "input": {"path": "/repo/gen_6.py", "content": big}}],
        },
    )
    conversation = Conversation("anthropic", messages, constraint, pending=True)
    policy = Policy(
        context_window=2000,
        trigger=("fraction", 0.5),
        keep=("messages", 1),
        keep_first=False,
        safety_margin=1.0,
    )
    feeding = run(conversation, policy, random.Random(0), usage=False)  # noqa: S311 - test data, not crypto
    assert feeding.accepted, "the conversation folds"
    assert feeding.sent_last is not None
    sent = json.dumps(feeding.sent_last["messages"])
    assert "redacted_thinking" not in sent, "the block's prefix changed at the fold"
    assert "/repo/src/mod_4.py" in sent, "the rest of its message is sent"


def test_a_result_clipped_again_shows_its_newest_placeholder() -> None:
    """A result of the newest round, clipped again as the round grows, renders its newest mark.

    Found by CI's feed: two parallel calls whose second result arrives after the first was
    clipped; the view showed the newer clip, and the check expected the older one too.
    """
    constraint = "CONSTRAINT-000000: never spend more than $100 and only write under /data/000000"

    def call(salt: int, at: str) -> dict[str, Any]:
        arguments = {"path": f"/repo/gen_{salt}.py", "content": big_text(2_000)}
        function = {"name": "bash", "arguments": json.dumps(arguments)}
        return {"id": at, "type": "function", "function": function}

    messages = (
        {"role": "user", "content": f" Task: tidy the repository. {constraint}. Thanks!"},
        {"role": "assistant", "content": None, "tool_calls": [call(1, "call_0")]},
        {"role": "tool", "tool_call_id": "call_0", "content": ""},
        {"role": "assistant", "content": None, "tool_calls": [call(3, "call_0")]},
        {"role": "tool", "tool_call_id": "call_0", "content": ""},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call(5, "call_0"), call(6, "call_1")],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": big_text(5_000, 6)},
        {"role": "tool", "tool_call_id": "call_1", "content": ""},
    )
    conversation = Conversation("openai", messages, constraint, pending=False)
    policy = Policy(
        context_window=2000,
        trigger=("fraction", 0.3125),
        keep=("messages", 1),
        keep_first=False,
        target=("tokens", 140),
        safety_margin=1.0,
    )
    feeding = run(conversation, policy, random.Random(0), usage=False)  # noqa: S311 - test data, not crypto
    assert feeding.accepted, "the conversation folds"
