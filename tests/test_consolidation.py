"""Consolidation: a summary over its header budget is condensed once, keeping what binds."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from progsum import Compactor, ConfigError, ConversationState, Policy, Summary, SummaryUpdate
from progsum.contract._consolidation import (
    drop_least_telling,
    in_order,
    least_telling,
    retire_parts,
    screen,
)
from progsum.contract._ledger import Entry, carrier_notes
from progsum.engine._consolidate import _quoted, consolidate
from progsum.engine._measure import counted
from progsum.judge._notes import split_note
from progsum.policy._tokens import HeuristicCounter
from progsum.summary._request import ConsolidationRequest, SummaryRequest
from progsum.summary._schema import Item
from progsum.summary._update import NewItem, Retirement
from progsum.testing import FunctionSummarizer, QueuedSummarizer
from tests.conftest import fixed_clock
from tests.conversations import trip_planning


def item(item_id: str, text: str, start: int) -> Item:
    """An item folded from message ``start``."""
    return Item(id=item_id, text=text, source=(start, start + 1))


PRIOR = Summary(
    constraints=(item("C1", "Budget is $3,000 in total.", 2),),
    established_facts=(
        item("F1", "Belém Tower costs €15 each.", 4),
        item("F2", "Belem Tower tickets: €15 per person.", 9),
        item("F3", "The 09:41 train goes to Sintra.", 6),
    ),
    open_threads=(item("O1", "Pick a hotel in Alfama.", 5),),
)


def test_screen_keeps_safe_merges_and_refuses_the_rest() -> None:
    """Binding, reasonless, unknown and value-losing retirements and new values are refused."""
    proposal = SummaryUpdate(
        add={"established_facts": ["Belém Tower: €15 per person.", "Sintra costs €99."]},
        retire=[
            Retirement(id="F1", reason="merged into one item"),
            Retirement(id="F2", reason="merged into one item"),
            Retirement(id="F3", reason="verbose"),  # 09:41 would be lost
            Retirement(id="C1", reason="condensed"),  # binding
            Retirement(id="O1"),  # no reason
            Retirement(id="X9", reason="?"),
        ],
    )
    screened, refused = screen(PRIOR, proposal)
    assert [r.id for r in screened.retire] == ["F1", "F2"]
    assert screened.add == {"established_facts": ("Belém Tower: €15 per person.",)}
    why = {r.id: r.why for r in refused}
    assert why["C1"] == "binding item; consolidation keeps it"
    assert why["F3"] == "its value '09:41' would be lost"
    assert why["O1"] == "no reason given"
    assert why["X9"] == "no such item"
    assert why["Sintra costs €99."] == "adds '€99', a value the summary lacks"


def test_drop_least_telling_takes_the_least_salient_non_binding_item() -> None:
    """By salience, then source position; never a binding item; None once only binding are left."""
    summary: Summary = PRIOR
    dropped = []
    while (result := drop_least_telling(summary, reason="over budget", compaction=3)) is not None:
        summary, item_id = result
        dropped.append(item_id)
    assert dropped == ["O1", "F3", "F1", "F2"]  # no value first; equal F1/F2: the older first
    assert [i.id for i in summary.constraints] == ["C1"]
    first = summary.retired[0]
    assert (first.item.id, first.reason, first.compaction) == ("O1", "over budget", 3)


def test_work_state_outlasts_prose_notes() -> None:
    """The working set (files read or changed, commands, errors) goes after every prose note.

    Only searches and fetched sources go before the notes; among the working set, files only
    read go first and changed files last.
    """
    trail = {"origin": "extracted", "author": "tool"}
    facts = (
        Item(id="F1", text="/srv/app/README.md: read (Read)", source=(1, 2), **trail),
        Item(id="F2", text='Grep "TODO" in src: 4 lines of results', source=(2, 3), **trail),
        Item(id="F3", text="Assistant: The export writes UTF-8 files.", source=(3, 4)),
        Item(id="F4", text="pytest -q: exit 1, 2 failed, 5 passed", source=(4, 5), **trail),
        Item(id="F5", text="/srv/app/export.py: modified (Edit)", source=(5, 6), **trail),
        Item(id="F6", text="The report command lives in cli.py.", source=(6, 7)),
    )
    summary = Summary(established_facts=facts)
    order = [item_id for item_id, _ in in_order(summary)]
    assert order[0] == "F2"
    assert set(order[1:3]) == {"F3", "F6"}  # the prose notes, by salience
    assert order[3:] == ["F1", "F4", "F5"]


def chatty(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A summarizer that records a binding rule once and three long facts per segment."""
    start = request.segment.start
    name = "".join(chr(97 + int(d)) for d in str(start))  # letters: a fake may invent no value
    facts = [
        f"Fact {name}{'xyz'[n]}: the guide said a lot about the old tram line." for n in range(3)
    ]
    rules = ["Never book flights that leave before 9am."] if start < 5 else []
    return SummaryUpdate(add={"established_facts": facts, "constraints": rules})


class Condensing:
    """A summarizer that can consolidate: it merges every fact into one line."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.requests: list[ConsolidationRequest[Any]] = []

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Summarize like `chatty`."""
        return chatty(request)

    def consolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
        """Retire every fact and add one line carrying their words (or fail, if told to)."""
        self.requests.append(request)
        if self.fail:
            raise TimeoutError("the model did not answer")
        facts = request.summary.established_facts
        merged = "Facts: " + " ".join(f.text.split(":")[0] for f in facts) + " (old tram)."
        return SummaryUpdate(
            add={"established_facts": [merged]},
            retire=[Retirement(id=f.id, reason="merged into one line") for f in facts],
        )


BUDGET = Policy(
    context_window=20_000,
    trigger=("tokens", 1_500),
    keep=("messages", 2),
    header_budget=("tokens", 250),
)


def run(summarizer: object, turns: int = 30) -> ConversationState[Summary]:
    """Feed a trip chat turn by turn through a compactor with a 250-token header budget."""
    compactor = Compactor(policy=BUDGET, summarizer=summarizer, clock=fixed_clock)  # type: ignore[arg-type]
    state: ConversationState[Summary] = ConversationState()
    for message in trip_planning(turns):
        state = compactor.maybe_compact(state.append(message))
    return state


def test_without_a_consolidating_model_the_least_telling_facts_go_first() -> None:
    """Each compaction that pushes the header over budget is followed by one consolidation.

    Its reason says what goes: the least telling items, which need not be the oldest.
    """
    state = run(FunctionSummarizer(chatty))
    outcomes = [e.outcome for e in state.events]
    assert "consolidated" in outcomes
    for k, outcome in enumerate(outcomes):
        if outcome == "consolidated":
            assert outcomes[k - 1] == "compacted"  # once, right after a compaction: no loop
    event = next(e for e in state.events if e.outcome == "consolidated")
    assert event.merge is not None
    assert event.merge.dropped
    assert "no model consolidation" in event.reason
    assert f"{len(event.merge.dropped)} least telling item(s) dropped or shortened" in event.reason
    assert "oldest" not in event.reason
    assert state.summary is not None
    assert [c.text for c in state.summary.constraints] == [
        "Never book flights that leave before 9am.",
        "The total budget is $3,000 for two people.",  # left out by the fake: the ledger kept it
    ]
    tombstones = {t.item.id: t for t in state.summary.retired}
    assert all(
        tombstones[i].reason.endswith("the least salient non-binding items go first")
        for i in event.merge.dropped
    )
    compactor = Compactor(policy=BUDGET, summarizer=FunctionSummarizer(chatty))
    assert counted(compactor.config, state, state.header_tokens(compactor.counter)) <= 250


def test_a_consolidating_model_condenses_under_the_same_guards() -> None:
    """The model's proposal is screened and merged; binding items stay."""
    model = Condensing()
    state = run(model)
    assert model.requests
    request = model.requests[0]
    assert request.tokens > request.budget == 250
    event = next(e for e in state.events if e.outcome == "consolidated")
    assert event.merge is not None
    assert event.merge.added
    assert "the summarizer condensed it" in event.reason
    assert not event.degraded
    assert state.summary is not None
    assert any(f.text.startswith("Facts: ") for f in state.summary.established_facts) or any(
        t.item.text.startswith("Facts: ") for t in state.summary.retired
    )
    assert state.summary.constraints  # binding items are never retired by consolidation


def test_a_failing_consolidation_degrades_to_dropping_the_least_telling() -> None:
    """A consolidation error never reaches the agent: the event is degraded and says why."""
    state = run(Condensing(fail=True))
    event = next(e for e in state.events if e.outcome == "consolidated")
    assert event.degraded
    assert event.degraded_reason == "TimeoutError: the model did not answer"
    assert event.merge is not None
    assert event.merge.dropped


def test_binding_items_alone_over_budget_are_reported_not_looped() -> None:
    """Only binding items: nothing to drop, one event saying so, no retry before the next fold."""
    rules = [f"Never spend more than ${n},000 on item {n}." for n in range(1, 30)]
    said = [
        {"role": "user", "content": " ".join(rules)},
        {"role": "assistant", "content": "Noted."},
    ]
    fake = QueuedSummarizer(
        SummaryUpdate(add={"constraints": [NewItem(text=rule, at=3) for rule in rules]})
    )
    compactor = Compactor(policy=BUDGET, summarizer=fake, clock=fixed_clock)
    messages = [*trip_planning(12)[:3], *said, *trip_planning(12)[3:]]
    state = compactor.compact(ConversationState(messages), force=True)
    assert [e.outcome for e in state.events] == ["compacted", "consolidated"]
    assert "binding items alone exceed the budget" in state.events[-1].reason
    assert state.summary is not None
    assert len(state.summary.constraints) == len(rules) + 1  # and the guard's trip rule
    assert compactor.maybe_compact(state) is state


def _orders_state(*, recall: bool) -> tuple[list[str], list[str], ConversationState[Any]]:
    """24 order ids stated in one user sentence, then 24 facts that each carry one."""
    orders = [f"W-{n:04d}X" for n in range(1, 25)]
    said = [
        {"role": "user", "content": "My order ids are " + ", ".join(orders) + "."},
        {"role": "assistant", "content": "Noted."},
    ]
    facts = [
        f"Order {o} was placed in the spring and is still waiting in the queue." for o in orders
    ]
    fake = QueuedSummarizer(
        SummaryUpdate(add={"established_facts": [NewItem(text=f, at=3) for f in facts]})
    )
    policy = BUDGET if recall else dataclasses.replace(BUDGET, recall_budget=None)
    compactor = Compactor(policy=policy, summarizer=fake, clock=fixed_clock)
    messages = [*trip_planning(12)[:3], *said, *trip_planning(12)[3:]]
    return orders, facts, compactor.compact(ConversationState(messages), force=True)


def test_a_header_the_value_ledger_keeps_over_budget_says_so() -> None:
    """Without recall, the last carriers of the user's values stay; the event names them."""
    _, facts, state = _orders_state(recall=False)
    event = state.events[-1]
    assert event.outcome == "consolidated"
    assert "24 last carrier(s) of values the user stated" in event.reason
    assert state.summary is not None
    assert [f.text for f in state.summary.established_facts] == facts  # none dropped


def test_values_recall_returns_leave_the_header_and_the_ledger() -> None:
    """With recall, "my order ids" recalls the sentence: its values may leave the header.

    The header is over budget and the context over the compaction's target, so the carriers
    go; the event names the values, and the ledger lets them go.
    """
    orders, facts, state = _orders_state(recall=True)
    event = state.events[-1]
    assert event.outcome == "consolidated"
    assert event.merge is not None
    assert event.merge.archived_values
    assert set(event.merge.archived_values) <= set(orders)
    assert "left for the archive" in event.reason
    assert state.summary is not None
    assert len(state.summary.established_facts) < len(facts)
    assert not {e.value for e in state.ledger} & set(event.merge.archived_values)


def test_async_consolidation_awaits_aconsolidate() -> None:
    """The async engine awaits a summarizer's aconsolidate."""

    class AsyncCondensing(Condensing):
        async def aconsolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
            return self.consolidate(request)

    model = AsyncCondensing()
    compactor = Compactor(policy=BUDGET, summarizer=model, clock=fixed_clock)

    async def feed() -> ConversationState[Summary]:
        state: ConversationState[Summary] = ConversationState()
        for message in trip_planning(30):
            state = await compactor.amaybe_compact(state.append(message))
        return state

    state = asyncio.run(feed())
    assert model.requests
    assert any(e.outcome == "consolidated" for e in state.events)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"header_budget": ("messages", 5)}, "header_budget=\\('messages', 5\\) must be one of"),
        ({"header_budget": ("fraction", 1.5)}, "must be a fraction between 0 and 1"),
        (
            {"trigger": ("messages", 20), "header_budget": ("fraction", 0.1)},
            "needs the model's context window",
        ),
    ],
)
def test_bad_header_budgets_name_the_value(kwargs: dict[str, Any], message: str) -> None:
    """A header budget in messages, a bad fraction, or a fraction without a window."""
    with pytest.raises(ConfigError, match=message):
        Policy(**({"context_window": 10_000} if "trigger" not in kwargs else {}) | kwargs)


def test_the_default_budget_is_15_percent_of_the_input_window() -> None:
    """15% of the input window by default; the floor without a window; none when turned off."""
    assert Policy(context_window=100_000).header_limit == 13_771  # 15% of (100,000 - 8,192)
    assert Policy(trigger=("messages", 20)).header_limit == 500  # no window, no token trigger
    assert Policy(context_window=100_000, header_budget=None).header_limit is None


def test_small_windows_get_the_floor_within_30_percent() -> None:
    """A toy window's header gets 500 tokens, at most 30% of its input; from 4k, 15% is more."""
    assert Policy(context_window=2_000).header_limit == 500  # 15% of 1,800 would be 270
    assert Policy(context_window=1_000).header_limit == 270  # 30% of the 900-token input
    assert Policy(context_window=4_000).header_limit == 540  # 15% of 3,600
    assert Policy(context_window=2_000, header_budget=("tokens", 300)).header_limit == 300


def note(item_id: str, text: str, start: int, *, end: int | None = None) -> Item:
    """A note the offline summarizer copied from messages ``start`` to ``end``."""
    return Item(id=item_id, text=text, source=(start, end or start + 1), origin="extracted")


def test_a_joined_note_is_worth_its_notes_per_character() -> None:
    """Five short facts under one label outweigh one long clause; salience's caps made them equal.

    Whole-text salience counts at most three names and four new words, so a joined note of five
    facts scored like a one-clause note twice its length, and the tie went to age (the older, the
    five facts, went first).
    """
    facts = "Speaker 1: has jeep; works in marketing; doesn't eat meat; is from Maine; plays drums"
    ramble = (
        "Speaker 2: heard from Tom and Ana at Starbucks couple of days ago that they were "
        "planning on selling their camper, and I thought you might be interested in buying it"
    )
    summary = Summary(established_facts=(note("F1", facts, 2, end=9), note("F2", ramble, 12)))
    result = drop_least_telling(summary, reason="over budget", compaction=4)
    assert result is not None
    assert result[1] == "F2"
    assert [i.id for i in result[0].established_facts] == ["F1"]


def test_the_offline_notes_go_before_the_models_items() -> None:
    """In a mixed header the stand-in's notes leave before the model's items; kept ones stay."""
    notes = (note("F4", "User: loves Lisbon; walks everywhere", 7), note("F5", "tram: €3", 8))
    summary = PRIOR.model_copy(update={"established_facts": (*PRIOR.established_facts, *notes)})
    dropped = []
    while result := drop_least_telling(summary, reason="over", compaction=2, keep={"F5"}):
        summary, item_id = result
        dropped.append(item_id)
    # F4 loses a note (its other note lives on as F6), then F6 goes; the model's items by salience
    assert dropped == ["F4", "F6", "O1", "F3", "F1", "F2"]
    assert [i.id for i in summary.established_facts] == ["F5"]
    assert [i.id for i in summary.constraints] == ["C1"]


def test_a_joined_note_loses_its_least_telling_note_and_the_rest_lives_on() -> None:
    """One note of a speaker's joined note goes, not the whole note: the others keep their facts.

    The changed item is retired whole as a tombstone; its other notes come back under a new id
    at the same place, so no item's text ever changes under its id.
    """
    joined = "Speaker 1: has jeep; works in marketing; went to the store and it was fine I guess"
    summary = Summary(
        constraints=(item("C1", "Budget is $3,000 in total.", 2),),
        established_facts=(note("F1", joined, 3, end=9), note("F2", "Speaker 2: owns boat", 10)),
    )
    result = drop_least_telling(summary, reason="over budget", compaction=5)
    assert result is not None
    shortened, item_id = result
    assert item_id == "F1"
    assert [(i.id, i.text) for i in shortened.established_facts] == [
        ("F3", "Speaker 1: has jeep; works in marketing"),
        ("F2", "Speaker 2: owns boat"),
    ]
    assert shortened.established_facts[0].source == (3, 9)
    tomb = shortened.retired[-1]
    assert (tomb.item.id, tomb.item.text, tomb.compaction) == ("F1", joined, 5)
    assert tomb.reason == "over budget; its other notes stay as F3"
    assert shortened.constraints == summary.constraints


def test_parts_cut_from_one_note_retire_it_once() -> None:
    """Two notes cut from one item in one consolidation make one tombstone and one new item."""
    summary = Summary(established_facts=(note("F1", "Ann: is nurse; has cat; likes tea", 0),))
    cut = {"F1": frozenset({0, 2})}
    shortened, renamed = retire_parts(summary, cut, reason="over", compaction=1)
    assert renamed == {"F1": "F2"}
    assert [i.text for i in shortened.established_facts] == ["Ann: has cat"]
    assert [t.item.text for t in shortened.retired] == ["Ann: is nurse; has cat; likes tea"]
    assert least_telling(shortened) == ("F2", None)  # a note alone goes whole


def test_a_quoted_sentence_goes_only_whole() -> None:
    """An item named in ``whole`` (a sentence as it was said) is never cut at its "; "."""
    said = "User: I like tea; never book flights before 9am"
    summary = Summary(established_facts=(note("F1", said, 0),))
    assert least_telling(summary, whole={"F1"}) == ("F1", None)
    assert least_telling(summary)[1] is not None  # type: ignore[index]


def test_an_item_that_quotes_its_message_is_cut_only_whole() -> None:
    """A sentence restored as it was said keeps its "; ": only the stand-in's notes are cut."""
    said = "I like tea; never book flights before 9am."
    state: ConversationState[Summary] = ConversationState(
        [{"role": "user", "content": said}, {"role": "assistant", "content": "Noted."}]
    )
    quoted = Item(id="F1", text=f"User: {said}", source=(0, 1), origin="extracted", cites=(0,))
    terse = Item(
        id="F2",
        text="User: likes tea; hates early flights",
        source=(0, 1),
        origin="extracted",
        cites=(0,),
    )
    summary = Summary(established_facts=(quoted, terse))
    assert _quoted(state, summary) == {"F1"}


def test_a_chat_over_its_header_budget_shortens_notes_and_loses_none_silently() -> None:
    """End to end: an offline chat's consolidations cut single notes out of joined ones.

    Every shortened note holds some of its tombstone's notes under the same label and the id its
    tombstone names; the event says items were dropped or shortened.
    """
    places = ("Leeds", "Porto", "Lyon", "Oslo", "Cork", "Bern", "Riga", "Graz", "Turin")
    hobbies = ("pottery", "chess", "rowing", "baking", "cycling", "knitting", "sailing", "judo")
    policy = Policy(context_window=20_000, trigger=("tokens", 600), header_budget=("tokens", 160))
    compactor = Compactor(policy=policy, conversation="chat", clock=fixed_clock)
    state: ConversationState[Summary] = ConversationState()
    for turn in range(48):
        who, role = ("Ann", "user") if turn % 2 == 0 else ("Bob", "assistant")
        place, hobby = places[turn % len(places)], hobbies[(turn // 3) % len(hobbies)]
        said = f"I moved to {place} for work. I took up {hobby} there with my cousin."
        state = compactor.maybe_compact(state.append({"role": role, "name": who, "content": said}))
    assert state.summary is not None
    shortened = [t for t in state.summary.retired if "its other notes stay as" in t.reason]
    assert shortened, [t.reason for t in state.summary.retired]
    ever = {i.id: i for i in state.summary.established_facts}
    ever.update((t.item.id, t.item) for t in state.summary.retired)
    for tomb in shortened:
        new_id = tomb.reason.rsplit(" ", 1)[-1]
        label, notes = split_note(tomb.item.text)
        new_label, kept = split_note(ever[new_id].text)
        assert new_label == label
        assert kept
        assert set(kept) < set(notes)
    consolidated = [e for e in state.events if e.outcome == "consolidated"]
    assert consolidated
    assert "dropped or shortened" in consolidated[-1].reason


@dataclasses.dataclass
class _TallyCounter:
    """The default counter, counting the texts it is asked about; ``bump`` tokens at ``bumped``."""

    texts: int = 0
    bumped: frozenset[int] = frozenset()
    bump: int = 0
    bumps: int = 0

    def count_message(self, message: Any) -> int:
        return HeuristicCounter().count_message(message)

    def count_text(self, text: str) -> int:
        self.texts += 1
        tokens = HeuristicCounter().count_text(text)
        if tokens not in self.bumped:
            return tokens
        self.bumps += 1
        return tokens + self.bump


def _crowded(counter: _TallyCounter) -> tuple[Compactor, ConversationState[Summary], Any]:
    """A chat whose header holds 40 joined notes of 5 notes each, far over a 300-token budget."""
    hobbies = ("pottery", "chess", "rowing", "baking", "cycling", "knitting", "sailing", "judo")
    notes = [
        note(
            f"F{k + 1}",
            f"Speaker {k % 2 + 1}: "
            + "; ".join(f"took up {hobbies[(k + j) % 8]} in town {k * 5 + j}" for j in range(5)),
            k,
        )
        for k in range(40)
    ]
    policy = Policy(context_window=20_000, header_budget=("tokens", 300))
    compactor = Compactor(policy=policy, conversation="chat", counter=counter, clock=fixed_clock)
    log = [{"role": "user", "content": f"Message {k}."} for k in range(41)]
    summary = Summary(established_facts=tuple(notes))
    state: ConversationState[Summary] = ConversationState(log).record(None, summary=summary)
    tokens = counted(compactor.config, state, state.header_tokens(counter))
    request = ConsolidationRequest(summary=summary, schema=Summary, budget=300, tokens=tokens)
    return compactor, state, request


def _one_at_a_time(compactor: Compactor, state: ConversationState[Summary], budget: int) -> Summary:
    """The reference: cut the parts in `in_order`'s order, counting the header after each one."""
    assert state.summary is not None
    base, summary, cut = state.summary, state.summary, dict[str, Any]()
    for item_id, part in in_order(base):
        probe = state.record(None, summary=summary)
        if counted(compactor.config, probe, probe.header_tokens(compactor.counter)) <= budget:
            break
        cut[item_id] = None if part is None else (cut.get(item_id) or frozenset()) | {part}
        summary, _ = retire_parts(base, cut, reason="r", compaction=1)
    return summary


def test_the_drop_loop_counts_the_header_a_few_times_not_once_per_cut() -> None:
    """About a hundred notes must go; the header is rendered and counted some 20 times, not 100.

    The result is the reference's: the shortest prefix of `in_order` whose header fits.
    """
    counter = _TallyCounter()
    compactor, state, request = _crowded(counter)
    reference = _one_at_a_time(compactor, state, 300)
    assert state.summary is not None
    before = sum(len(split_note(i.text)[1]) for i in state.summary.established_facts)
    gone = before - sum(len(split_note(i.text)[1]) for i in reference.established_facts)
    assert gone > 90
    counter.texts = 0
    after = consolidate(compactor.config, state, request, None, None)
    assert after.summary is not None
    assert [(i.id, i.text) for i in after.summary.established_facts] == [
        (i.id, i.text) for i in reference.established_facts
    ]
    assert counter.texts <= 30, counter.texts


def test_a_counter_that_grows_as_text_goes_still_gets_a_header_that_fits() -> None:
    """A counter need not count less when text is removed: the header still ends within budget.

    This one counts 60 tokens more for a header of 250 to 289, so a longer header can fit where
    a shorter one does not; every note the cut removed is on a tombstone.
    """
    counter = _TallyCounter(bumped=frozenset(range(250, 290)), bump=60)
    compactor, state, request = _crowded(counter)
    after = consolidate(compactor.config, state, request, None, None)
    assert after.summary is not None
    header = counted(compactor.config, after, after.header_tokens(counter))
    assert header <= 300
    ever = {n for t in after.summary.retired for n in split_note(t.item.text)[1]}
    live = {n for i in after.summary.established_facts for n in split_note(i.text)[1]}
    for item in state.summary.established_facts:  # type: ignore[union-attr]
        assert set(split_note(item.text)[1]) <= ever | live
    assert counter.bumps  # the search met a header the counter counts up


def test_the_last_carrier_of_a_value_keeps_only_the_notes_that_carry_it() -> None:
    """The ledger keeps the value, not the whole joined note around it.

    The note that states "417 stamps" stays; the speaker's other notes compete like any note.
    """
    joined = "Ann: has 417 stamps; likes tea; went to the store and it was fine I guess; owns boat"
    summary = Summary(
        established_facts=(note("F1", joined, 3), note("F2", "Bob: is nurse", 5)),
    )
    ledger = [Entry("417", 3, "I have 417 stamps.", rule=False)]
    assert carrier_notes(summary, ledger) == {"F1": frozenset({0})}
    holding = carrier_notes(summary, ledger)
    parts = list(in_order(summary, holding=holding))
    assert ("F1", 0) not in parts
    assert ("F1", None) not in parts
    assert {("F1", 1), ("F1", 2), ("F1", 3), ("F2", None)} == set(parts)
    assert list(in_order(summary, keep=holding)) == [("F2", None)]  # without `holding`: whole


def test_a_value_read_only_across_notes_keeps_every_note() -> None:
    """When no single note carries a value its item alone carries, nothing of the item goes.

    Here the year is in the label the notes share, so no note holds it on its own.
    """
    text = "Caroline (8 May 2023): went hiking; bought boots"
    summary = Summary(established_facts=(note("F1", text, 3),))
    ledger = [Entry("2023", 3, "It was May 2023.", rule=False)]
    holding = carrier_notes(summary, ledger)
    assert holding == {"F1": frozenset({0, 1})}
    assert list(in_order(summary, holding=holding)) == []


def test_a_header_over_budget_cuts_around_the_values_the_ledger_keeps() -> None:
    """End to end: a joined note that alone carries stated values loses its other notes.

    Before, the ledger froze the whole note, and notes of other speakers went in its place.
    """
    counter = _TallyCounter()
    compactor, state, request = _crowded(counter)
    assert state.summary is not None
    first = state.summary.established_facts[0]
    said = [n.rsplit(" ", 1)[-1] for n in split_note(first.text)[1][:2]]  # "0", "1"
    ledger = tuple(Entry(v, 0, f"Town {v}.", rule=False) for v in ("417", "9021"))
    notes = (f"lives in flat 417 of town {said[0]}", f"has code 9021 for town {said[1]}")
    label, rest = split_note(first.text)
    carrier = first.model_copy(update={"text": f"{label}: " + "; ".join((*notes, *rest))})
    summary = state.summary.model_copy(
        update={"established_facts": (carrier, *state.summary.established_facts[1:])}
    )
    state = state.record(None, summary=summary, ledger=ledger)
    request = dataclasses.replace(request, summary=summary)
    after = consolidate(compactor.config, state, request, None, None)
    assert after.summary is not None
    header = counted(compactor.config, after, after.header_tokens(counter))
    assert header <= request.budget
    texts = [i.text for i in after.summary.established_facts]
    kept = next(t for t in texts if "417" in t)
    assert all(n in kept for n in notes)
    assert len(split_note(kept)[1]) < len(split_note(carrier.text)[1])  # its other notes went
