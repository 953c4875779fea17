"""A header budget always exists, whatever budget or window is given; overflow names the part."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy
from progsum.cli._options import budget_policy
from progsum.cli.main import main
from progsum.policy._policy import MIN_DEFAULT_HEADER, default_header_limit
from progsum.policy._tokens import HeuristicCounter
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._request import SummaryRequest
from progsum.summary._update import SummaryUpdate
from progsum.testing import FunctionSummarizer, QueuedSummarizer
from tests.conversations import spelled

PEOPLE = ("Priya", "Tomas", "Aiko", "Marcus", "Lena", "Omar", "Greta", "Ravi", "Sofia", "Jonas")
PLACES = ("north entrance", "rooftop garden", "east wing", "loading dock", "glass atrium")
THINGS = ("the oak desks", "the spare monitors", "the visitor badges", "the green chairs")
VERBS = ("moved", "stored", "repainted", "inspected", "cleaned", "replaced")


def write(tmp_path: Path, messages: list[dict[str, Any]], name: str) -> Path:
    """``messages`` as a conversation file for the CLI."""
    path = tmp_path / name
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def office_move(facts: int) -> list[dict[str, Any]]:
    """A long chat of first-person facts without exact values: every one a droppable note."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Help me keep track of the office move."}
    ]
    combos = itertools.islice(itertools.product(PEOPLE, PLACES, THINGS, VERBS), facts)
    for person, place, thing, verb in combos:
        messages.append(
            {
                "role": "user",
                "content": f"I keep {thing} of {person} in the {place} since we {verb} them.",
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": f"Understood: {thing} near the {place}, {verb} by {person}.",
            }
        )
    return messages


def lockers(
    count: int,
    said: str = "I keep locker {code} for the move crew.",
    reply: str = "Noted, locker {code} is yours.",
) -> list[dict[str, Any]]:
    """A chat in which the user states ``count`` locker codes (exact values), one a message."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Help me keep track of the office move."}
    ]
    for n in range(count):
        code = f"LK-{1000 + n * 7}"
        messages.append({"role": "user", "content": said.format(code=code)})
        messages.append({"role": "assistant", "content": reply.format(code=code)})
    return messages


def compact(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """``progsum compact`` in-process, offline: the exit status and stderr."""
    status = main(["compact", *argv, "--summarizer", "extractive"])
    return status, capsys.readouterr().err


# -- every policy has a header budget ------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "limit"),
    [
        (budget_policy(8_000, keep=8), 1_333),
        (budget_policy(8_000, keep=8, model="claude-sonnet-5-5"), 1_333),
        (budget_policy(2_000, keep=8), MIN_DEFAULT_HEADER),
        (budget_policy(400, keep=4), 270),
        (Policy(trigger=("tokens", 8_000)), 1_333),
        (Policy(trigger=("messages", 40)), MIN_DEFAULT_HEADER),
        (Policy(model="claude-sonnet-5-5", trigger=("tokens", 8_000)), 1_333),
        (Policy(context_window=200_000), 28_771),
        (Policy(context_window=2_000), MIN_DEFAULT_HEADER),
        (Policy(context_window=1_000), 270),
        (budget_policy(8_000, keep=8, header_budget=3_000), 3_000),
        (Policy(context_window=200_000, header_budget=("fraction", 0.3)), 57_542),
    ],
    ids=[
        "budget-8000",
        "budget-8000-with-model",
        "budget-2000",
        "budget-400",
        "token-trigger-no-window",
        "message-trigger-no-window",
        "model-and-token-trigger",
        "window-200k",
        "window-2000",
        "window-1000",
        "user-tokens",
        "user-fraction",
    ],
)
def test_every_policy_has_a_header_budget(policy: Policy, limit: int) -> None:
    """The default derives a budget from the window or the token budget; the user's is kept."""
    assert policy.header_limit == limit


def test_a_token_budget_bounds_the_header_as_a_window_does() -> None:
    """A budget of N tokens gives the header what a window whose default trigger is N gives."""
    for budget in (8_000, 20_000, 65_000):
        implied = Policy(context_window=round(budget / 0.9), reserve_output=0)
        assert Policy(trigger=("tokens", budget)).header_limit == pytest.approx(
            implied.header_limit, abs=1
        )
        assert default_header_limit(None, ("tokens", budget)) < budget // 4


def test_only_an_explicit_none_turns_the_budget_off() -> None:
    """``header_budget=None`` is the user's choice of no budget; nothing else gives none."""
    assert Policy(context_window=100_000, header_budget=None).header_limit is None
    assert Policy(trigger=("messages", 20), header_budget=None).header_limit is None


# -- the failure: --budget built a header bigger than the window -----------------------------------


def test_compact_with_a_budget_keeps_the_header_within_its_budget(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``compact --budget`` on a long chat: the header is consolidated to its budget, exit 0.

    Without a header budget the same run built a 6,040-token header in a 3,600-token input
    window and exited 3.
    """
    path = write(tmp_path, office_move(400), "move.json")
    saved = tmp_path / "state.json"
    status, err = compact(capsys, str(path), "--budget", "2000", "--save", str(saved))
    assert status == 0, err
    assert "consolidated the summary over its header budget" in err
    assert "OVER THE WINDOW" not in err
    state = ConversationState.from_json(saved.read_text(encoding="utf-8"))
    limit = budget_policy(2_000, keep=8).in_conversation("agent", tools=False).header_limit
    assert limit is not None
    assert 0 < state.header_tokens(HeuristicCounter.for_model(None)) <= limit


# -- the over-window reason names the part that is over -------------------------------------------


def crew_rules(count: int) -> list[dict[str, Any]]:
    """A chat in which the user gives ``count`` rules, each about its own locker code."""
    return lockers(
        count, "Never give locker {code} to the cleaners.", "Understood, {code} stays with you."
    )


def test_a_header_over_the_window_is_named_as_the_part_over() -> None:
    """Binding items with no budget of their own hold the header over the window: it is named.

    With ``binding_budget=None`` nothing bounds the rules the user gives; they are never
    dropped, so the reason names the header and what it keeps.
    """
    policy = Policy(context_window=2_000, binding_budget=None)
    compactor = Compactor(policy=policy, summarizer=ExtractiveSummarizer())
    state: ConversationState[Any] = ConversationState()
    for message in crew_rules(120):
        state = compactor.maybe_compact(state.append(message))
    line = compactor.overflow(state)
    assert line is not None
    assert "the header is what is over" in line
    assert "over its budget of 500" in line
    assert "binding items" in line
    assert "alone exceed the window" not in line


def test_values_that_do_not_fit_leave_the_header_for_the_archive(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Locker codes the header has no room for leave for the archive; the window holds.

    ``compact --budget 2000`` on 300 stated codes used to end with the header over the window
    (exit 3): the value ledger kept the sentence of every code.
    """
    path = write(tmp_path, lockers(300), "lockers.json")
    saved = tmp_path / "state.json"
    status, err = compact(capsys, str(path), "--budget", "2000", "--save", str(saved))
    assert status == 0, err
    assert "OVER THE WINDOW" not in err
    state = ConversationState.from_json(saved.read_text(encoding="utf-8"))
    left = {v for e in state.events if e.merge is not None for v in e.merge.archived_values}
    assert left
    assert not left & {e.value for e in state.ledger}
    assert not [v for v in left if v in state.header]


def test_a_header_within_a_generous_budget_is_named_with_that_budget(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A user's header budget above the trigger: the report names the header and the budget."""
    path = write(tmp_path, lockers(30), "lockers.json")
    status, err = compact(capsys, str(path), "--budget", "400", "--header-budget", "600")
    assert status == 0, err
    line = next(line for line in err.splitlines() if line.startswith("still over the budget"))
    assert "the header is what is over" in line
    assert "its budget is 600: lower --header-budget, or raise --budget" in line


def test_the_first_message_and_newest_round_are_still_named_when_they_are_over(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A thinking turn bigger than the window is blamed on them, not on the header."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Do the task."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "long plan " * 2_000, "signature": "s"},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
    ]
    status, err = compact(capsys, str(write(tmp_path, messages, "over.json")), "--budget", "1000")
    assert status == 3
    assert "alone exceed the window" in err
    assert "the header is what is over" not in err


def long_fact_state(
    facts: int, task_words: int = 4
) -> tuple[ConversationState[Any], QueuedSummarizer]:
    """A chat of long steps and a summarizer that answers with ``facts`` facts.

    The task (the kept first message) has about ``task_words`` words.
    """
    task = "Plan the office move: " + " ".join(["carefully"] * task_words)
    state = ConversationState([{"role": "user", "content": task}])
    for n in range(40):
        step = f"Step {n}: packing the desks, " + "labelling every box and its shelf, " * 20
        state = state.append({"role": "assistant", "content": step})
        state = state.append({"role": "user", "content": f"Fine, continue with step {n + 1}."})
    names = itertools.islice(itertools.product(PEOPLE, PLACES, VERBS), facts)
    texts = [
        f"The crate {person} {verb} in the {place} holds the blue binders of the design team, "
        "the signed floor plans of the new building and the keys to the east wing cabinets."
        for person, place, verb in names
    ]
    return state, QueuedSummarizer(SummaryUpdate(add={"established_facts": texts}))


def test_a_header_without_budget_over_the_window_says_to_give_one() -> None:
    """``header_budget=None``: the reason names the header and suggests a budget."""
    state, fake = long_fact_state(80)
    policy = Policy(context_window=2_000, keep=("messages", 2), header_budget=None)
    compactor = Compactor(policy=policy, summarizer=fake, reduction=None)
    done = compactor.compact(state, force=True)
    reason = compactor.overflow(done)
    assert reason is not None
    assert "the header is what is over" in reason
    assert "the policy gives it no budget (header_budget=None)" in reason
    assert "header_budget=('tokens', " in reason


def test_a_header_budget_larger_than_the_room_gives_way_to_the_window() -> None:
    """A user's budget the window cannot hold: the window outranks it, and the event says so.

    The header was brought within its 1,700-token budget and the context left over the window;
    now the header gives way until the context is back at the trigger.
    """
    state, fake = long_fact_state(60, task_words=100)
    policy = Policy(context_window=2_000, keep=("messages", 2), header_budget=("tokens", 1_700))
    compactor = Compactor(policy=policy, summarizer=fake, reduction=None)
    done = compactor.compact(state, force=True)
    event = done.events[-1]
    assert event.outcome == "consolidated"
    assert "the window leaves it beside the kept first message and the newest tool round" in (
        event.reason
    )
    assert compactor.overflow(done) is None
    assert compactor.count(done)[0] <= policy.trigger_limit


# -- a chat between people: half the room for the header ------------------------------------------


def test_a_chat_gets_half_the_room_for_its_header_by_default() -> None:
    """With the default budget a chat's header may take half the input window; an agent's 15%."""
    policy = Policy(context_window=8_000)
    room = policy.input_window
    assert room is not None
    assert policy.in_conversation("agent") is policy
    assert policy.header_limit == room * 15 // 100
    assert policy.in_conversation("chat").header_limit == room // 2
    budgeted = Policy(trigger=("tokens", 9_000))  # the room a token budget implies
    assert budgeted.in_conversation("chat").header_limit == default_header_limit(
        None, ("tokens", 9_000), share=0.5
    )
    assert budgeted.in_conversation("chat").header_limit == 5_000


@pytest.mark.parametrize(
    "budget", [("tokens", 900), ("fraction", 0.2), None], ids=["tokens", "fraction", "none"]
)
def test_a_header_budget_the_caller_gives_holds_in_a_chat_too(budget: Any) -> None:
    """Only the default differs by conversation: a budget the caller gives is the chat's too."""
    policy = Policy(context_window=8_000, header_budget=budget)
    assert policy.in_conversation("chat").header_limit == policy.header_limit
    quiet = Policy(context_window=8_000, header_budget=budget, recall_budget=None)
    assert quiet.in_conversation("chat") is quiet


def test_a_policy_makes_its_chat_policy_once() -> None:
    """``in_conversation('chat')`` gives the same object each time, and a chat's is itself."""
    policy = Policy(context_window=8_000)
    chat = policy.in_conversation("chat")
    assert policy.in_conversation("chat") is chat
    assert chat.in_conversation("chat") is chat
    assert chat == policy  # the same settings: only what they resolve to differs by kind
    assert dataclasses.asdict(chat)["_header"] == chat.header_limit  # no policy in a policy


def _chat(turns: int) -> list[dict[str, Any]]:
    """Two people talking (named speakers, no tools), every message a new fact without a value."""
    names = {"user": "Ana", "assistant": "Ben"}
    return [
        {
            "role": role,
            "name": names[role],
            "content": f"Parcel {spelled(n)} holds lanterns for the {spelled(n)} dock. "
            + "It rained all day. " * 6,
        }
        for n in range(turns)
        for role in [("user", "assistant")[n % 2]]
    ]


def _keeps_every_fact(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A summarizer that keeps the first sentence of every message as a fact."""
    facts = [m["content"].split(". ")[0] + "." for _, m in request.segment]
    return SummaryUpdate(add={"established_facts": facts})


def test_a_chat_folds_into_a_header_up_to_its_budget_and_an_agent_into_its_own() -> None:
    """The engine runs a chat under the chat budget: its header outgrows an agent's, and fits."""
    headers = {}
    for kind in ("chat", "agent"):
        policy = Policy(context_window=4_000)
        compactor = Compactor(
            policy=policy,
            summarizer=FunctionSummarizer(_keeps_every_fact),
            conversation=kind,
        )
        state = ConversationState([{"role": "user", "content": "Track the parcels with me."}])
        for message in _chat(160):
            state = compactor.maybe_compact(state.append(message))
        tokens = state.header_tokens(HeuristicCounter())
        limit = policy.in_conversation(kind).header_limit
        assert limit is not None
        assert tokens <= limit, (kind, tokens, limit)
        headers[kind] = tokens
    agent_limit = Policy(context_window=4_000).header_limit
    assert agent_limit is not None
    assert headers["chat"] > agent_limit >= headers["agent"], headers


def test_a_conversation_without_tool_calls_gets_the_chats_header_room() -> None:
    """An agent's conversation that has called no tool runs under the chat's header budget."""
    policy = Policy(context_window=8_000)
    room = policy.input_window
    assert room is not None
    untooled = policy.in_conversation("agent", tools=False)
    assert untooled is policy.in_conversation("chat")
    assert untooled.header_limit == room // 2
    assert policy.in_conversation("agent", tools=True) is policy
    budgeted = Policy(context_window=8_000, header_budget=("fraction", 0.2))
    assert budgeted.in_conversation("agent", tools=False).header_limit == budgeted.header_limit


def test_a_plain_user_and_assistant_chat_folds_into_the_chats_header() -> None:
    """Plain roles and no tool: the header outgrows an agent's budget; told "agent", it does not."""
    plain = [{k: v for k, v in m.items() if k != "name"} for m in _chat(160)]
    headers = {}
    for kind in (None, "agent"):
        compactor = Compactor(
            policy=Policy(context_window=4_000),
            summarizer=FunctionSummarizer(_keeps_every_fact),
            conversation=kind,
        )
        state = ConversationState([{"role": "user", "content": "Track the parcels with me."}])
        for message in plain:
            state = compactor.maybe_compact(state.append(message))
        assert state.kind == "agent"
        headers[kind] = state.header_tokens(HeuristicCounter())
    agent_limit = Policy(context_window=4_000).header_limit
    assert agent_limit is not None
    assert headers[None] > agent_limit >= headers["agent"], headers


def _coding_session(files: int) -> list[dict[str, Any]]:
    """A coding agent reading and editing ``files`` files, each read returning a long listing."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Port the app to the new API."}]
    for n in range(files):
        path = f"/srv/app/src/module_{n:02d}/handlers_{n:02d}.py"
        listing = "\n".join(
            f"{k:>4}  def handler_{k}(request): return call_{k}(request)" for k in range(40)
        )
        for tool, args, result in (
            ("Read", {"file_path": path}, listing),
            ("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "updated"),
        ):
            call_id = f"{tool}{n}"
            messages.append(
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": args}],
                }
            )
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}],
                }
            )
    return messages


def test_an_agents_header_grows_to_hold_its_working_set() -> None:
    """Every file an agent changed stays named, the header past the default budget, within its cap.

    The default budget of a 4,000-token window holds the changed files of a long session only
    when the work state claims its room first (`Policy.in_conversation`).
    """
    compactor: Compactor[Any] = Compactor(
        policy=Policy(context_window=4_000),
        summarizer=FunctionSummarizer(lambda _: SummaryUpdate()),
    )
    state: ConversationState[Any] = ConversationState()
    messages = _coding_session(30)
    for message in messages:
        state = compactor.maybe_compact(state.append(message))
    base = compactor.policy.header_limit or 0
    header = state.header_tokens(compactor.counter)
    input_window = compactor.policy.input_window or 0
    assert header * compactor.policy.safety_margin > base
    assert header <= input_window * 0.35
    folded = {
        f"handlers_{n:02d}.py"
        for n in range(30)
        if f"handlers_{n:02d}.py" in str(messages[: state.cutoff])
    }
    assert folded
    assert all(name in state.header for name in folded)
