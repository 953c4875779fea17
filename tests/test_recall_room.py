"""Recall that uses the room it has: the block sized by the room below the window, and replies.

The block of a person's message takes what the request leaves below the window (its guard),
up to `Policy.recall_budget`, with no fixed count of excerpts; a recalled question brings the
reply that answers it. Sizes are checked with the engine's count and a count from scratch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy
from progsum.engine._recall import asks_for, block_limit
from progsum.recall._excerpt import Recall, block_text
from progsum.recall._terms import document
from progsum.summarizers import ExtractiveSummarizer
from tests.test_header_budget import long_fact_state

Message = dict[str, Any]

PETS = ("beagle", "poodle", "collie", "terrier", "spaniel", "husky", "boxer", "pug", "corgi")
SMALL_TALK = (
    "The weather was grey and rainy all week, so we stayed in and cooked soup most evenings.",
    "We watched an old film about sailors and then went for a long walk along the shore.",
    "The train was late again this morning and the platform was crowded with commuters.",
)


def engine(window: int = 4_000, **policy: Any) -> Compactor[Any]:
    """An offline compactor at ``window`` with the default policy and ``policy``'s changes."""
    return Compactor(
        policy=Policy(context_window=window, **policy), summarizer=ExtractiveSummarizer()
    )


def people(messages: Sequence[Message]) -> list[Message]:
    """``messages`` as a chat between two named people (`progsum.judge._conversation`)."""
    names = {"user": "Ana", "assistant": "Ben"}
    return [{**m, "name": names[m["role"]]} for m in messages]


def dog_chat(rounds: int = 90) -> list[Message]:
    """Nine dogs met early on, each in a message of its own, then small talk that folds them."""
    messages: list[Message] = [{"role": "user", "content": "Let us catch up."}]
    messages.append({"role": "assistant", "content": "Gladly, tell me everything."})
    for n in range(rounds):
        if n < len(PETS):
            said = f"At the park I met a {PETS[n]} dog called Rex{n}, friendly and calm."
        else:
            said = SMALL_TALK[n % 3]
        messages.append({"role": "user", "content": said})
        messages.append({"role": "assistant", "content": f"I see. {SMALL_TALK[(n + 1) % 3]}"})
    return people(messages)


def replayed(messages: Sequence[Message], compactor: Compactor[Any]) -> ConversationState[Any]:
    """The state after each message was appended and ``maybe_compact`` ran, as an agent does."""
    state: ConversationState[Any] = ConversationState()
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
    return state


def ask(compactor: Compactor[Any], state: ConversationState[Any], question: str) -> Any:
    """``state`` with ``question`` asked by Ana, after ``maybe_compact``."""
    return compactor.maybe_compact(
        state.append({"role": "user", "content": question, "name": "Ana"})
    )


def test_the_block_quotes_every_match_the_room_holds_with_no_fixed_count() -> None:
    """Nine folded messages match: all nine are quoted when the budget holds them."""
    compactor = engine(recall_budget=("fraction", 0.3))
    state = replayed(dog_chat(), compactor)
    assert all(not state.is_kept(2 + 2 * n) for n in range(len(PETS))), "the dogs are folded"
    asked = ask(compactor, state, "Which dog did I meet at the park?")
    block = asked.recall_block
    assert all(f"Rex{n}" in block for n in range(len(PETS))), block
    budget = compactor.policy.in_conversation("chat").recall_limit
    assert budget is not None
    assert compactor.counter.count_text(block) <= budget
    window = compactor.policy.input_window
    assert window is not None
    assert compactor.count(asked)[0] <= window
    counted = compactor.counter.count_text(asked.header) + sum(
        compactor.counter.count_message(m) for i, m in enumerate(asked.log) if asked.is_kept(i)
    )
    assert counted + compactor.counter.count_text(block) <= window  # a count from scratch


def test_a_small_budget_still_bounds_the_block() -> None:
    """The budget is the block's most: at 10% of a 4,000-token window not every match fits."""
    compactor = engine(recall_budget=("fraction", 0.1))
    asked = ask(compactor, replayed(dog_chat(), compactor), "Which dog did I meet at the park?")
    quoted = sum(f"Rex{n}" in asked.recall_block for n in range(len(PETS)))
    assert 1 <= quoted < len(PETS)
    assert compactor.counter.count_text(asked.recall_block) <= 360


def pizza_chat(rounds: int = 60) -> list[Message]:
    """Ana asks Ben a question whose answer shares no word with it, then small talk."""
    messages: list[Message] = [
        {"role": "user", "content": "Let us catch up."},
        {"role": "assistant", "content": "Gladly, tell me everything."},
        {"role": "user", "content": "What pizza topping do you order every single time?"},
        {"role": "assistant", "content": "Pepperoni, of course! Extra crispy."},
    ]
    for n in range(rounds):
        messages.append({"role": "user", "content": SMALL_TALK[n % 3]})
        messages.append({"role": "assistant", "content": f"I see. {SMALL_TALK[(n + 1) % 3]}"})
    return people(messages)


def test_a_recalled_question_brings_the_reply_that_answers_it() -> None:
    """A folded question's reply, sharing no word with the asking message, is quoted after it."""
    compactor = engine()
    state = replayed(pizza_chat(), compactor)
    assert not state.is_kept(2)
    assert not state.is_kept(3)
    asked = ask(compactor, state, "Remind me, which pizza topping does Ben always order?")
    recall = asked.recall
    assert recall is not None
    assert [e.index for e in recall.excerpts][:2] == [2, 3]
    assert "Pepperoni, of course! Extra crispy." in asked.recall_block
    block = block_text(Recall(recall.at, recall.cutoff, recall.excerpts), asked.log)
    assert block.index("pizza topping") < block.index("Pepperoni")
    assert document(asked.log[3]) == "Pepperoni, of course! Extra crispy."


def test_a_recalled_statement_brings_no_neighbour() -> None:
    """A recalled message that asks nothing is quoted alone: its neighbours are not its answer."""
    compactor = engine()
    state = replayed(dog_chat(), compactor)
    asked = ask(compactor, state, "Tell me about Rex3 again.")
    recall = asked.recall
    assert recall is not None
    assert [e.index for e in recall.excerpts] == [2 + 2 * 3]


def test_a_block_may_take_the_context_past_the_trigger_but_not_past_the_guard() -> None:
    """A block may take the context past the trigger (the next turn folds), never the guard."""
    compactor = engine(recall_budget=("fraction", 0.3))
    policy = compactor.policy.in_conversation("chat")
    state: ConversationState[Any] = ConversationState()
    past = 0
    for message in dog_chat(160):
        if message["role"] == "user" and state.cutoff:
            asked = ask(compactor, state, "Which dog did I meet at the park?")
            folded = len(asked.events) > len(state.events)
            tokens = compactor.count(asked)[0]
            assert tokens < policy.guard_limit
            if not folded and asked.recall_block and tokens >= policy.trigger_limit:
                past += 1
                assert compactor.maybe_compact(asked) is asked  # unchanged: a fixed point
                reply = {"role": "assistant", "content": "Rex, of course.", "name": "Ben"}
                after = compactor.maybe_compact(asked.append(reply))
                assert any(e.outcome == "compacted" for e in after.events[len(asked.events) :])
        state = compactor.maybe_compact(state.append(message))
    assert past, "no question took the context past the trigger"


def test_only_a_request_with_no_room_for_one_excerpt_folds_before_its_block() -> None:
    """The trigger holds room for a block only when the request lacks room for one excerpt."""
    compactor = engine(recall_budget=("fraction", 0.3), trigger=("fraction", 0.95))
    policy = compactor.policy.in_conversation("chat")
    state = replayed(dog_chat(), compactor)
    question = {"role": "user", "content": "Which dog did I meet at the park?", "name": "Ana"}
    seen: list[tuple[int, int]] = []
    for n in range(400):  # short turns that ask nothing, until the trigger folds
        decision = compactor.decide(state.append(question))
        seen.append((decision.tokens, decision.reserved))
        role = "user" if n % 2 else "assistant"
        said = {"role": role, "content": "Ok.", "name": "Ana" if n % 2 else "Ben"}
        grown = compactor.maybe_compact(state.append(said))
        if grown.cutoff != state.cutoff:
            break
        state = grown
    room = [t for t, held in seen if not held and t > policy.target_limit]
    held = [t for t, held in seen if held]
    assert room, "no request had room"
    assert held, "no request lacked it"
    assert min(held) > max(room)  # held only at the end, within an excerpt of the guard
    assert policy.guard_limit - min(held) < 150
    assert all(not held for t, held in seen if t <= policy.target_limit)


def test_a_message_far_below_the_best_match_is_not_quoted_however_much_room() -> None:
    """Messages that match only a weaker word of the question stay out of a roomy block."""
    messages: list[Message] = [{"role": "user", "content": "Let us catch up."}]
    messages.append({"role": "assistant", "content": "Gladly, tell me everything."})
    messages.append({"role": "user", "content": "My neighbour's beagle Rex barks at the park."})
    messages.append({"role": "assistant", "content": "Beagles do love to bark."})
    for n in range(80):
        said = f"The park was busy on day {n}." if n % 8 == 0 else SMALL_TALK[n % 3]
        messages.append({"role": "user", "content": said})
        messages.append({"role": "assistant", "content": f"I see. {SMALL_TALK[(n + 1) % 3]}"})
    compactor = engine(recall_budget=("fraction", 0.3))
    state = replayed(people(messages), compactor)
    assert not state.is_kept(2)
    asked = ask(compactor, state, "What does the beagle do at the park?")
    assert "Rex barks" in asked.recall_block
    assert "was busy on day" not in asked.recall_block


def test_a_recalled_question_never_brings_machine_text_as_its_reply() -> None:
    """Harness text in the user role after a recalled question is machine text: never quoted."""
    compactor = engine()
    state: ConversationState[Any] = ConversationState()
    messages = pizza_chat()
    messages[1] = {"role": "assistant", "content": "What pizza topping do you order every time?"}
    messages[2] = {"role": "user", "content": "Pepperoni, of course! Extra crispy."}
    messages[3] = {"role": "assistant", "content": "Noted.", "name": "Ben"}
    for n, message in enumerate(messages):
        state = compactor.maybe_compact(state.append(message, author="tool" if n == 2 else None))
    assert not state.is_kept(2)
    asked = ask(compactor, state, "Remind me, which pizza topping do I always order?")
    assert asked.recall is not None
    assert 1 in [e.index for e in asked.recall.excerpts]  # the question is recalled
    assert 2 not in [e.index for e in asked.recall.excerpts]
    assert "Pepperoni" not in asked.recall_block


# -- the block's size: the room, the trigger, the window -------------------------------------------


@pytest.mark.parametrize(
    "policy",
    [
        Policy(context_window=2_000),
        Policy(context_window=4_000),
        Policy(context_window=200_000, trigger=("tokens", 6_000)),
    ],
    ids=["2k", "4k", "200k with a 6k trigger"],
)
def test_the_block_takes_its_budget_within_the_room_below_its_ceiling(policy: Policy) -> None:
    """The block is its budget while the room below the ceiling holds it, else that room, else 0."""
    budget = policy.recall_limit
    assert budget is not None
    guard = policy.guard_limit - 1
    trigger = policy.trigger_limit - 1
    low = policy.target_limit
    assert block_limit(budget, low, guard) == budget
    assert block_limit(budget, guard - 100, guard) == min(budget, 100)
    assert block_limit(budget, guard, guard) == 0
    assert block_limit(budget, guard + 50, guard) == 0
    assert block_limit(budget, trigger - 40, trigger) == min(budget, 40)  # right after a fold
    assert block_limit(budget, guard - 120, guard, scale=1.2) == min(budget, 100)
    assert block_limit(budget, 10**9, None) == budget  # no window, no token trigger


@pytest.mark.parametrize("share", [0.1, 0.2, 0.3])
def test_a_forced_compaction_leaves_the_context_within_the_trigger_block_included(
    share: float,
) -> None:
    """A block chosen right after a fold fits below the trigger: the next turn does not fold again.

    Before, a 20% budget took this context to 1,685 counted tokens against a 1,620 trigger.
    """
    state, fake = long_fact_state(60, task_words=100)
    policy = Policy(
        context_window=2_000,
        keep=("messages", 2),
        header_budget=("tokens", 1_700),
        recall_budget=("fraction", share),
    )
    compactor = Compactor(policy=policy, summarizer=fake, reduction=None)
    done = compactor.compact(state, force=True)
    assert done.recall_block, "no block was chosen"
    assert compactor.count(done)[0] < policy.trigger_limit
    assert not compactor.decide(done).due


# -- a message that asks, and one that tells -------------------------------------------------------


def test_a_message_that_asks_nothing_gets_half_the_block_a_question_gets() -> None:
    """The same matches: a question's block fills the budget, a statement's takes half of it."""
    compactor = engine(recall_budget=("tokens", 320))
    state = replayed(dog_chat(), compactor)
    asked = ask(compactor, state, "Which dog did I meet at the park?")
    told = ask(compactor, state, "I met another friendly dog at the park today.")
    count = compactor.counter.count_text
    assert count(told.recall_block) <= 160 < count(asked.recall_block) <= 320
    assert "Rex" in told.recall_block, "a statement still recalls"


def test_a_request_to_the_assistant_asks_as_a_question_does() -> None:
    """With plain roles (a person and an assistant), a request gets the whole budget too."""
    compactor = engine(recall_budget=("tokens", 320))
    plain = [{"role": m["role"], "content": m["content"]} for m in dog_chat()]
    state = replayed(plain, compactor)
    count = compactor.counter.count_text

    def block(text: str) -> str:
        return compactor.maybe_compact(state.append({"role": "user", "content": text})).recall_block

    assert count(block("Remind me which dog I met at the park.")) > 160
    assert count(block("I met another friendly dog at the park today.")) <= 160


def test_whether_a_message_asks_is_judged_once_and_kept_on_the_log() -> None:
    """A message's reading is kept on the log: the same message asked again is not judged again."""
    compactor = engine(recall_budget=("tokens", 320))
    state = replayed(dog_chat(), compactor)
    question = state.append({"role": "user", "content": "Which dog did I meet?", "name": "Ana"})
    at = len(question) - 1
    assert asks_for(question, at)
    judged = question._store.asks
    assert judged is not None
    assert judged[1][at] != 0
    assert not asks_for(state.append(people([{"role": "user", "content": "I met a dog."}])[0]), at)
