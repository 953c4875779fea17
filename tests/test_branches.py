"""What a log has read is shared by its branches: a retry, a rollback or a fork reuses it.

Recall's index: each branch must search exactly as an index built from nothing over its own log
does, however the branches interleave their growth, and a branch indexes no message its parent
indexed below the fork point. The conversation's kind: each state reads it as `infer` over its
own messages, a branch reading at most a stride of them again. Counts, not time: how many
documents are read into an index, how many storages a search reads, how many messages are read
for the kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from progsum import Compactor, ConversationState
from progsum.judge._conversation import Structure, infer
from progsum.recall import _index as index_module
from progsum.recall._index import Index
from progsum.recall._shelf import SINGLES_BATCH
from progsum.recall._terms import query_terms
from progsum.state._log import READING_STRIDE
from tests.test_recall import chat, compactor

WORDS = st.sampled_from(["dog", "beagle", "lisbon", "river", "7", "nurse", "soup", "the", "a"])
TEXT = st.lists(WORDS, min_size=0, max_size=6).map(" ".join)
QUERIES = [query_terms(q) for q in ("dog", "beagle lisbon", "river 7 soup", "nurse dog river")]


@contextmanager
def counted() -> Iterator[Counter[str]]:
    """Count the documents read into any index (each is tokenised once when it is added)."""
    calls: Counter[str] = Counter()
    real = index_module.term_counts

    def counting(text: str) -> Counter[str]:
        calls["documents"] += 1
        return real(text)

    with mock.patch.object(index_module, "term_counts", counting):
        yield calls


def rebuilt(texts: list[str], upto: int) -> Index:
    """An index built from nothing over the first ``upto`` texts."""
    index = Index()
    for at in range(upto):
        index.add(at, texts[at])
    return index


Step = tuple[str, int, int, list[str]]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["grow", "index", "branch"]),
            st.integers(0, 7),
            st.integers(0, 40),
            st.lists(TEXT, min_size=1, max_size=6),
        ),
        min_size=1,
        max_size=25,
    ),
    st.sampled_from([2, 3, index_module.MAX_PARTS]),
    st.sampled_from([1, 2, SINGLES_BATCH]),
)
def test_every_branch_searches_as_an_index_of_its_own_log(
    steps: list[Step], parts: int, batch: int
) -> None:
    """Logs forked anywhere and grown in any interleaving: each searches as if built alone."""
    logs: list[list[str]] = [["start"]]
    indexes = [Index()]
    with (
        mock.patch.object(index_module, "MAX_PARTS", parts),
        mock.patch("progsum.recall._shelf.SINGLES_BATCH", batch),
    ):
        for action, which, at, texts in steps:
            n = which % len(logs)
            log, index = logs[n], indexes[n]
            if action == "grow":
                log.extend(texts)
            elif action == "index":  # the cutoff moves: index up to some point of the log
                stop = min(len(log), index.upto + at % 8)
                for position in range(index.upto, stop):
                    index.add(position, log[position])
            else:  # append to an older state: a fork of the log at `at`
                limit = min(at, len(log))
                logs.append([*log[:limit], *texts])
                indexes.append(index.branch(limit))
            for log, index in zip(logs, indexes, strict=True):
                upto = index.upto
                assert upto <= len(log)
                fresh = rebuilt(log, upto)
                assert len(index) == len(fresh)
                assert index.shelves() <= parts
                for query in QUERIES:
                    for ranges in (((0, upto),), ((1, max(1, upto // 2)), (upto // 2 + 1, upto))):
                        expected = fresh.search(query, ranges, limit=4)
                        assert index.search(query, ranges, limit=4) == expected


def test_a_branch_sees_none_of_its_parents_later_documents() -> None:
    """Documents the parent adds after the fork point are not the branch's: it indexes its own."""
    parent = Index()
    for at in range(10):
        parent.add(at, f"common word{at}")
    child = parent.branch(6)
    for at in range(10, 14):
        parent.add(at, "beagle")
    for at in range(6, 9):
        child.add(at, "lisbon")
    assert child.shelves() == 2  # the parent appended past the fork: the child has its own
    assert child.search(("beagle",), ((0, 20),), limit=5) == []
    assert [i for i, _ in child.search(("lisbon",), ((0, 20),), limit=5)] == [6, 7, 8]
    assert [i for i, _ in parent.search(("lisbon",), ((0, 20),), limit=5)] == []
    assert [i for i, _ in parent.search(("word7",), ((0, 20),), limit=5)] == [7]
    assert child.search(("word7",), ((0, 20),), limit=5) == []


def test_a_retry_appends_to_the_storage_its_abandoned_attempt_left() -> None:
    """When only the branch grows on, it keeps appending to the one storage: nothing copied."""
    parent = Index()
    for at in range(10):
        parent.add(at, f"common word{at}")
    child = parent.branch(10)
    grandchild = child.branch(10)
    for at in range(10, 20):
        grandchild.add(at, f"common word{at}")
    assert grandchild.shelves() == 1
    assert len(grandchild) == 20
    assert len(parent) == 10  # what it saw is unchanged
    assert [i for i, _ in grandchild.search(("word15",), ((0, 20),), limit=5)] == [15]


# -- the engine's log ------------------------------------------------------------------------


def grown() -> tuple[Compactor[Any], ConversationState[Any]]:
    """A chat folded several times, its recall index built by a question after the last fold."""
    engine = _engine()
    state: ConversationState[Any] = ConversationState()
    for message in chat(100):
        state = engine.maybe_compact(state.append(message))
    assert state.cutoff > 20, "the facts must be folded for the test to mean anything"
    state = engine.maybe_compact(state.append({"role": "user", "content": "What is my dog?"}))
    assert state.recall is not None
    assert state.recall.excerpts
    return engine, state.append({"role": "assistant", "content": "A beagle, Biscuit."})


def test_a_retry_reads_no_folded_message_into_the_index_again() -> None:
    """Appending to an older state (a retry, a rollback) recalls with the index already built.

    The branch recalls what a state loaded from JSON (an index built from nothing) recalls.
    """
    engine, state = grown()
    question = {"role": "user", "content": "Where does my sister live?"}
    state.append({"role": "user", "content": "Something else entirely."})  # the first attempt
    with counted() as calls:
        retried = engine.maybe_compact(state.append(question))
    assert calls["documents"] == 0
    assert retried.recall is not None
    assert retried.recall.excerpts
    loaded = ConversationState.from_json(state.to_json())
    with counted() as calls:
        expected = engine.maybe_compact(loaded.append(question))
    assert calls["documents"] > 20  # a loaded state reads every folded message once
    assert retried.recall == expected.recall
    assert retried.recall_block == expected.recall_block


def test_a_rollback_to_an_older_state_reads_nothing_again() -> None:
    """A rollback (appending to a state from before the last folds) shares the index too."""
    engine = _engine()
    states = list(_chain(engine))
    older = next(s for s in states if 10 < s.cutoff < states[-1].cutoff)
    question = {"role": "user", "content": "What is my dog called?"}
    with counted() as calls:
        rolled = engine.maybe_compact(older.append(question))
    expected = engine.maybe_compact(ConversationState.from_json(older.to_json()).append(question))
    assert calls["documents"] == 0
    assert rolled.recall == expected.recall


def _engine() -> Compactor[Any]:
    return compactor(4_000, keep=("messages", 6))


def _chain(engine: Compactor[Any]) -> Iterator[ConversationState[Any]]:
    """Each state of the `grown` chat, one a turn, all on one log with its index built."""
    state: ConversationState[Any] = ConversationState()
    states = []
    for message in chat(100):
        state = engine.maybe_compact(state.append(message))
        states.append(state)
    state = engine.maybe_compact(state.append({"role": "user", "content": "What is my dog?"}))
    assert state.recall is not None
    yield from states


# -- the conversation's kind ---------------------------------------------------------------


@contextmanager
def reads() -> Iterator[Counter[str]]:
    """Count the messages read for the conversation's kind (`Structure.read`)."""
    calls: Counter[str] = Counter()
    real = Structure.read

    def counting(self: Structure, messages: Any, infos: Any, length: int) -> Structure:
        calls["messages"] += max(0, length - self.upto) if length >= self.upto else length
        return real(self, messages, infos, length)

    with mock.patch.object(Structure, "read", counting):
        yield calls


def talk(n: int) -> dict[str, Any]:
    """Message ``n`` of a named chat; message 150 calls a tool (an agent's from there)."""
    if n == 150:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }
    if n == 151:
        return {"role": "tool", "tool_call_id": "c1", "content": "done"}
    role = "user" if n % 2 == 0 else "assistant"
    message: dict[str, Any] = {"role": role, "content": f"Line {n}."}
    if role == "assistant":
        message["name"] = "Ana"
    return message


def test_each_state_reads_its_kind_as_a_reading_from_nothing_would() -> None:
    """Forks, older states and newer ones of one log: the kind is `infer` over its own prefix."""
    state: ConversationState[Any] = ConversationState()
    states = []
    for n in range(200):
        state = state.append(talk(n))
        states.append(state)
        assert state.kind == infer(list(state.log), list(state.infos))
    for older in (states[5], states[149], states[60], states[199], states[31], states[32]):
        assert older.kind == infer(list(older.log), list(older.infos))
        forked = older.append({"role": "user", "content": "And then?"})
        assert forked.kind == infer(list(forked.log), list(forked.infos))


def test_a_branch_reads_at_most_a_stride_of_its_messages_again_and_a_retry_none() -> None:
    """The log keeps readings of its kind: a fork reads on from near its point, not from 0."""
    state: ConversationState[Any] = ConversationState()
    for n in range(140):
        state = state.append(talk(n))
        assert state.kind == ("chat" if n else "agent")
    attempt = state.append({"role": "user", "content": "First try."})
    assert attempt.kind == "chat"
    with reads() as read:
        retried = state.append({"role": "user", "content": "Second try."})
        assert retried.kind == "chat"
    assert read["messages"] == 1  # only the retried message
    older = next(s for s in _states(state) if len(s) == 77)
    with reads() as read:
        assert older.append({"role": "user", "content": "Back then."}).kind == "chat"
    assert read["messages"] <= READING_STRIDE + 1


def _states(newest: ConversationState[Any]) -> Iterator[ConversationState[Any]]:
    """Older states of ``newest``'s log: prefixes sharing its storage (as a chain's states do)."""
    for length in range(1, len(newest)):
        yield _prefix(newest, length)


def _prefix(state: ConversationState[Any], length: int) -> ConversationState[Any]:
    """The state of ``state``'s chain at ``length`` messages (nothing folded), sharing its log."""
    return state._replace(_length=length)
