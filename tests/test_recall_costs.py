"""What recall remembers between questions gives the answers it would give reading afresh.

A message's text (`progsum.recall._terms.document`) read directly for a plain message equals the
general reading; whether a recalled message asks a question is read once per log and judgement
context (`progsum.engine._recall`), and a state that reads it afresh recalls the same excerpts.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from progsum import Compactor, ConversationState, Policy
from progsum.judge._judgement import Context, Judgement
from progsum.judge._seam import default_judge
from progsum.messages._transcript import source_text
from progsum.recall._terms import document
from progsum.summarizers import ExtractiveSummarizer
from tests.test_recall_room import PETS, ask, dog_chat, pizza_chat, replayed

TEXTS = st.text(alphabet=st.sampled_from(["a", " ", "\n", "é", "?", "1", "<", "_"]), max_size=12)
PLAIN = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer", "tool"])},
    optional={
        "content": st.one_of(st.none(), TEXTS, st.lists(st.just({"type": "text", "text": "hi"}))),
        "name": TEXTS,
        "tool_call_id": st.just("call_1"),
        "tool_calls": st.just([]),
        "type": st.just("message"),
    },
)


@given(PLAIN)
def test_a_message_s_text_read_directly_is_the_general_reading(message: dict[str, Any]) -> None:
    """`document` of any message equals `source_text`, the reading every part goes through."""
    try:
        expected: object = source_text([message])
    except Exception as error:  # noqa: BLE001 - the same error either way
        expected = type(error)
    try:
        got: object = document(message)
    except Exception as error:  # noqa: BLE001 - likewise
        got = type(error)
    assert got == expected


def engine() -> Compactor[Any]:
    """An offline compactor with a small window, so that the chat folds."""
    return Compactor(policy=Policy(context_window=4_000), summarizer=ExtractiveSummarizer())


class Counting:
    """The shipped judge, counting the sentences it is asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def sentences(self, text: str) -> tuple[str, ...]:
        """The shipped judge's sentences."""
        return default_judge().sentences(text)

    def judge(self, sentence: str, context: Context) -> Judgement:
        """The shipped judge's verdict, counted."""
        self.asked.append(sentence)
        return default_judge().judge(sentence, context)


class Doubting(Counting):
    """A judge that reads no sentence as a question."""

    def judge(self, sentence: str, context: Context) -> Judgement:
        """The shipped judge's verdict, a question read as a fact."""
        found = super().judge(sentence, context)
        return Judgement("fact") if found.label == "question" else found


QUESTION = "Remind me, which pizza topping does Ben always order?"


def test_a_question_asked_again_recalls_the_same_and_judges_its_excerpts_once() -> None:
    """The same question on a branch recalls what a fresh log recalls, judging nothing again."""
    counting = Counting()
    compactor = Compactor(
        policy=Policy(context_window=4_000), summarizer=ExtractiveSummarizer(), judge=counting
    )
    state = replayed(pizza_chat(), compactor)

    def judged() -> int:
        return sum("pizza topping do you order" in s for s in counting.asked)

    before = judged()
    first = ask(compactor, state, QUESTION)
    once = judged() - before
    again = ask(compactor, state, QUESTION)  # the log forks: the branch shares what was read
    twice = judged() - before
    fresh = ask(compactor, ConversationState.from_json(state.to_json()), QUESTION)
    assert first.recall is not None
    assert [e.index for e in first.recall.excerpts][:2] == [2, 3]
    assert again.recall == first.recall == fresh.recall
    assert again.recall_block == first.recall_block == fresh.recall_block
    assert once == 1
    assert twice == 1
    assert judged() - before == 2  # the fresh log reads it once


def test_another_judge_is_asked_again() -> None:
    """A judge that reads no question brings no reply, after the shipped judge brought one."""
    state = replayed(pizza_chat(), engine())
    shipped = ask(engine(), state, QUESTION)
    doubting = Compactor(
        policy=Policy(context_window=4_000), summarizer=ExtractiveSummarizer(), judge=Doubting()
    )
    doubted = ask(doubting, state, QUESTION)
    assert shipped.recall is not None
    assert doubted.recall is not None
    assert 3 in [e.index for e in shipped.recall.excerpts]
    assert 3 not in [e.index for e in doubted.recall.excerpts]


def test_questions_between_folds_never_quote_a_message_a_block_in_view_quotes() -> None:
    """Each new block passes over what the earlier blocks since the fold quote; the newest shows."""
    compactor = engine()
    state = replayed(dog_chat(), compactor)
    questions = [f"Which dog at the park was the {pet}?" for pet in PETS]
    seen = 0
    for n, question in enumerate(questions + questions[:3]):
        state = ask(compactor, state, question)
        newest = state.recall
        assert newest is not None
        earlier = {e.index for r in state.recalls[:-1] for e in r.excerpts}
        assert earlier.isdisjoint(e.index for e in newest.excerpts)
        expected = next((text for at, text in state.quotes if at == newest.at), "")
        assert state.recall_block == expected
        seen += bool(newest.excerpts)
        reply = {"role": "assistant", "content": f"Let me check ({n}).", "name": "Ben"}
        state = compactor.maybe_compact(state.append(reply))
    assert seen >= 3  # blocks with excerpts, the later ones passing over the earlier ones'
