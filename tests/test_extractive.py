"""The extractive summarizer: rules per field, dedupe, bounds, schemas, determinism, engine run."""

from __future__ import annotations

import asyncio
import copy
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from progsum import (
    BaseSummary,
    Compactor,
    ConfigError,
    ConversationState,
    Items,
    Policy,
    Summarizer,
    Summary,
    SummaryUpdate,
    render_anthropic,
    summary_field,
)
from progsum.judge._judgement import Context, Kind
from progsum.judge._notes import split_note
from progsum.judge._seam import judge, using
from progsum.summarizers import ExtractiveSummarizer as LazilyImported
from progsum.summarizers.extractive._kinds import fact_weight
from progsum.summarizers.extractive._routing import routes
from progsum.summarizers.extractive._selection import Known, Said
from progsum.summarizers.extractive._summarizer import (
    DEFAULT_CHAT_MAX_SHARE,
    DEFAULT_MAX_SHARE,
    ExtractiveSummarizer,
)
from progsum.summary._merge import merge
from progsum.summary._request import AsyncSummarizer
from progsum.summary._schema import Item, spec_of
from progsum.summary._update import NewItem, Retirement
from progsum.testing import summary_request

Message = dict[str, Any]

RULE = "Do not remove the load-bearing wall between the kitchen and the dining room."
BUDGET = "The budget is $18,000 including appliances."
TOPICS = ("cabinets", "countertops", "flooring", "lighting", "sink", "backsplash")


def user(text: str) -> Message:
    """A user message."""
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    """An assistant message."""
    return {"role": "assistant", "content": text}


def texts(update: SummaryUpdate, field: str) -> list[str]:
    """The texts proposed for ``field``."""
    return [item.text if isinstance(item, NewItem) else item for item in update.add.get(field, ())]


UNCAPPED = ExtractiveSummarizer(max_share=1.0)
"""No share limit, so a test of one rule on a tiny segment sees every sentence the rule keeps."""


def summarize(*messages: Message, **options: Any) -> SummaryUpdate:
    """Run an ExtractiveSummarizer (uncapped unless ``options`` say otherwise) over ``messages``."""
    summarizer = ExtractiveSummarizer(**{"max_share": 1.0, **options})
    return summarizer.summarize(summary_request(list(messages)))


def renovation(rounds: int = 8) -> list[Message]:
    """A homeowner and an assistant planning a kitchen renovation; the rules come early."""
    messages = [
        user("Help me plan a kitchen renovation for our 1920s house."),
        assistant("Glad to. What budget and rules should I work with?"),
        user(f"{BUDGET} {RULE} Work can only happen on weekdays."),
        assistant("Understood: $18,000 in total, the wall stays, weekdays only."),
    ]
    for n in range(rounds):
        topic = TOPICS[n % len(TOPICS)]
        messages.append(user(f"What are my options for {topic}?"))
        messages.append(
            assistant(
                f"For {topic} you could pick a cheaper line at ${900 + 100 * n} or a premium line "
                f"at ${2_400 + 150 * n}. The premium line lasts longer, and installers in your "
                "area quote about two days of work, which fits a weekday schedule."
            )
        )
        messages.append(user(f"Let's go with the cheaper line for {topic}."))
        messages.append(assistant(f"Noted, the budget {topic} it is."))
    return messages


# -- one rule per field --------------------------------------------------------------------------


def test_user_prohibitions_and_obligations_become_constraints() -> None:
    """The user's rules and limits go to constraints, verbatim, from the message that said them."""
    update = summarize(
        user("Plan the move."),
        assistant("Sure."),
        user(f"{RULE} Work can only happen on weekdays. The living room is blue."),
    )
    assert texts(update, "constraints") == [RULE, "Work can only happen on weekdays."]
    assert [item.at for item in update.add["constraints"] if isinstance(item, NewItem)] == [2, 2]


def test_assistant_rules_are_not_constraints() -> None:
    """Only the user binds: an assistant's "you must not" is not a constraint."""
    update = summarize(user("Any tips?"), assistant("You must not skip the permit for the wall."))
    assert texts(update, "constraints") == []


def test_decisions_go_to_decisions_and_results_to_facts() -> None:
    """A choice the user makes is a decision; the assistant reporting what it did is none."""
    update = summarize(
        user("Let's go with the oak cabinets from Nordholm."),
        assistant("Confirmed the installer for the 12th of May."),
    )
    assert texts(update, "decisions") == ["Let's go with the oak cabinets from Nordholm."]


def test_ruled_out_options_become_rejected() -> None:
    """Ruled-out options go to rejected, with the reason they carry."""
    update = summarize(
        user("Marble is too expensive for a rental flat."),
        assistant(
            "The induction hob won't work with your 16A circuit, so gas it is instead of it."
        ),
    )
    assert texts(update, "rejected")[0] == "Marble is too expensive for a rental flat."


def test_values_first_person_statements_and_results_become_facts() -> None:
    """Exact values, "I have/work/live ..." and the assistant's reported results are facts.

    In a chat they are terse notes, a speaker's notes of one update joined.
    """
    with using(None, conversation="chat"):
        update = summarize(
            user("I work from home on Tuesdays. My partner is a chef."),
            assistant("The quote came back at $4,200. I found two installers nearby."),
            user("Nice."),
            assistant("The permit request was submitted successfully."),
        )
    assert texts(update, "established_facts") == [
        "User: works from home on Tuesdays; My partner is chef",
        (
            "Assistant: The quote came back at $4,200; found two installers nearby; The permit "
            "request was submitted successfully"
        ),
    ]


def test_tool_calls_and_results_are_not_read() -> None:
    """In an OpenAI-format segment only prose counts: tool arguments and results yield nothing."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"note": "Never refund W-1."}'},
    }
    update = summarize(
        user("Find my order."),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Order W-12345 costs $80."},
        assistant("I found order W-12345."),
    )
    assert dict(update.add) == {
        "established_facts": (
            NewItem(text="Assistant: I found order W-12345.", at=3, origin="extracted"),
        ),
        "open_threads": (NewItem(text="Find my order.", at=0, origin="extracted"),),
    }


@pytest.mark.parametrize(
    "sentence",
    [
        pytest.param("I think so.", id="hedge"),
        pytest.param("I'm sure you'll love it!", id="pleasantry"),
        pytest.param("Sounds good!", id="reaction"),
        pytest.param("Go ahead.", id="bare-decision-cue"),
        pytest.param("2.", id="list-number"),
        pytest.param("Good morning, John Zhang.", id="greeting-with-a-name"),
        pytest.param("Hello, AI companion!", id="greeting-the-assistant"),
        pytest.param("We can keep in touch and share with each other.", id="rapport"),
        pytest.param("It's my honor to be able to accompany and assist you.", id="honour"),
        pytest.param("I look forward to our next interaction!", id="next-time"),
        pytest.param("I will keep your words in mind in the future.", id="advice-noted"),
        pytest.param("I'll take your advice to heart and try my best.", id="advice-to-heart"),
        pytest.param(
            "I'm sorry, as an AI companion, I can't go for a walk in the park in person.",
            id="ai-disclaimer",
        ),
    ],
)
def test_hedges_and_pleasantries_are_not_kept(sentence: str) -> None:
    """A sentence that states nothing on its own yields no item, from either speaker."""
    assert summarize(user(sentence), assistant(sentence)).add == {}


@pytest.mark.parametrize(
    "sentence",
    [
        "As an AI, I can't taste food, but I can recommend Chinese stir-fried green beans.",
        "My sister and I keep in touch by email every Sunday.",
        "I'll keep the Lisbon hotel in mind for 12 May.",
    ],
)
def test_sentences_that_only_sound_like_rapport_are_kept(sentence: str) -> None:
    """Advice after a disclaimer, a fact about a third person, a value: each is a fact."""
    assert texts(summarize(user(sentence)), "established_facts")


@pytest.mark.parametrize(
    "sentence",
    [
        "The signed documents are here for you at the front desk.",
        "My brother will accompany you to the clinic.",
        "It was my pleasure to meet Dr. Li at the conference.",
        "I look forward to the next release of the Stripe SDK.",
        "Take note of that warning about the Frankfurt server.",
    ],
)
def test_rapport_words_in_a_statement_are_no_pleasantry(sentence: str) -> None:
    """Words of courtesy inside a statement ("here for you", "my pleasure to") are no rapport."""
    assert judge(sentence, Context("user")).item


def test_only_unanswered_questions_become_open_threads() -> None:
    """A question the other speaker replied to is dropped; the one left hanging is open."""
    update = summarize(
        user("Which tiles are cheapest?"),
        assistant("The Calda tiles, at $21 a box."),
        user("Thanks. Can you also check the delivery date?"),
    )
    assert texts(update, "open_threads") == ["Can you also check the delivery date?"]


def test_assistant_narration_is_never_an_open_thread() -> None:
    """What the assistant says it will do next is its narration, not the user's open work.

    The same intention from the user is a request, and stays open.
    """
    intention = "Let me check the failing test in tests/test_sync.py next."
    update = summarize(
        user("Fix the flaky sync test."),
        assistant(f"{intention} Then I will run the whole suite."),
    )
    threads = texts(update, "open_threads")
    assert intention not in threads
    assert not any("whole suite" in t for t in threads)
    assert "Fix the flaky sync test." in threads
    asked = summarize(user("Run the whole suite next."), assistant("The suite has 412 tests."))
    assert "Run the whole suite next." in texts(asked, "open_threads")


def test_a_tool_result_answers_no_question() -> None:
    """A tool result in the user role is no answer: the assistant's question stays open."""
    asked = "Should I also book the hotel near the station?"
    update = summarize(
        user("Find me a flight to Porto on Friday."),
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"I'll search the flights first. {asked}"},
                {"type": "tool_use", "id": "t1", "name": "search_flights", "input": {"to": "OPO"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "TP1942 departs 09:10."}
            ],
        },
    )
    assert asked in texts(update, "open_threads")


@pytest.mark.parametrize(
    "sentence",
    ["Hi, I need help with my booking.", "Hello world was the first program I wrote."],
)
def test_a_greeting_in_front_of_a_statement_is_no_pleasantry(sentence: str) -> None:
    """Only a greeting with at most a name or a form of address is one (names are capitalised)."""
    assert judge(sentence, Context("user")).item


def test_a_greeting_is_no_answer_to_the_question_before_it() -> None:
    """A new day that opens with a greeting leaves the last question open, not answered by it."""
    update = summarize(
        assistant("What kind of weather do you like?"), user("Good morning, John Zhang.")
    )
    assert texts(update, "established_facts") == []


def test_a_bare_choice_answering_a_question_is_a_decision() -> None:
    """The user's answer to the assistant's "which one?" is the choice made, a decision."""
    update = summarize(assistant("Which finish do you want?"), user("Matte black, please."))
    assert texts(update, "decisions") == ["Matte black, please."]


def test_fact_weight_ranks_values_then_the_user_then_first_person() -> None:
    """Exact values weigh most, then a user's sentence, then a first-person one; chat is no fact."""
    assert fact_weight("The quote is $4,200.", "assistant") == 2
    assert fact_weight("I have two dogs.", "user") == 2
    assert fact_weight("I have two dogs.", "assistant") == 1
    assert fact_weight("My partner is a chef.", "assistant") == 1
    assert fact_weight("The shop opens late.", "assistant") == 0


# -- dedupe and bounds ---------------------------------------------------------------------------


def test_sentences_already_in_the_prior_summary_are_not_repeated() -> None:
    """A live prior item (compared like merge does) or a restatement of it is not proposed again."""
    prior, _ = merge(
        Summary(),
        SummaryUpdate(
            add={"constraints": [RULE], "established_facts": ["I work from home on Tuesdays."]}
        ),
        source=(0, 4),
        compaction=1,
    )
    request = summary_request(
        [
            user(RULE.upper().rstrip(".")),
            user("I work from home on Tuesdays!"),
            user("I work from home."),
            user("I have a cat named Miso."),
        ],
        prior=prior,
        start=4,
    )
    update = ExtractiveSummarizer().summarize(request)
    assert texts(update, "constraints") == []
    assert texts(update, "established_facts") == ["User: I have a cat named Miso."]


def test_each_field_is_bounded_keeping_the_heaviest_in_log_order() -> None:
    """Over the bound, sentences with exact values win; the chosen ones keep their log order."""
    update = summarize(
        assistant("I have tried the red paint."),
        assistant("I have tried the white paint."),
        assistant("The red paint costs $40."),
        assistant("I have tried the grey paint."),
        assistant("The grey paint costs $35."),
        max_per_field=2,
    )
    assert texts(update, "established_facts") == [
        "Assistant: The red paint costs $40.",
        "Assistant: The grey paint costs $35.",
    ]


def test_non_binding_items_fit_the_share_but_binding_ones_always_stay() -> None:
    """max_share caps what facts may take of the segment's prose; constraints are never cut."""
    filler = "Another long day of comparing kitchens in the showroom with the children."
    messages = [
        user(f"{RULE} I have a long story about my oven and my neighbour's cat."),
        *[assistant(filler.replace("Another", f"Day {n}: another")) for n in range(4)],
    ]
    tight = summarize(*messages, max_share=0.1)
    loose = summarize(*messages, max_share=1.0)
    assert texts(tight, "constraints") == texts(loose, "constraints") == [RULE]
    assert len(texts(tight, "established_facts")) < len(texts(loose, "established_facts"))


@pytest.mark.parametrize(
    ("options", "named"),
    [
        pytest.param({"max_per_field": 0}, "max_per_field=0", id="bound-zero"),
        pytest.param({"max_per_field": True}, "max_per_field=True", id="bound-bool"),
        pytest.param({"max_share": 0}, "max_share=0", id="share-zero"),
        pytest.param({"max_share": 1.5}, "max_share=1.5", id="share-above-one"),
    ],
)
def test_bad_options_are_refused_naming_the_value_and_the_fix(
    options: dict[str, Any], named: str
) -> None:
    """Invalid options raise ConfigError naming the value and a valid example."""
    with pytest.raises(ConfigError, match=r"; use e\.g\. ") as error:
        ExtractiveSummarizer(**options)
    assert named in str(error.value)


# -- retirement ----------------------------------------------------------------------------------


def test_a_prior_question_is_retired_once_both_speakers_have_spoken_after_it() -> None:
    """The question that ended the last segment is retired, with a reason, once its reply is in."""
    prior, _ = merge(
        Summary(),
        SummaryUpdate(
            add={
                "open_threads": [
                    NewItem(text="Which tiles are cheapest?", at=3),
                    "Book the electrician.",
                ]
            }
        ),
        source=(0, 4),
        compaction=1,
    )
    answered = [assistant("The Calda tiles."), user("Great.")]
    update = ExtractiveSummarizer().summarize(summary_request(answered, prior=prior, start=4))
    assert update.retire == (
        Retirement(id="O1", reason="answered: both speakers wrote after it (messages 4-5)"),
    )
    one_speaker = [assistant("Still checking the tiles.")]
    assert (
        ExtractiveSummarizer().summarize(summary_request(one_speaker, prior=prior, start=4)).retire
        == ()
    )


# -- schemas -------------------------------------------------------------------------------------


class RenovationSummary(Summary):
    """The default schema plus a field no rule matches."""

    rooms: Items = summary_field("Rooms", "Rooms in scope.", id_prefix="RM")


class SupportSummary(BaseSummary):
    """A domain schema with its own field names."""

    policies: Items = summary_field("Policies", "What the customer insists on.", binding=True)
    customer_facts: Items = summary_field("Customer facts", "Ids, amounts, dates.", id_prefix="CF")
    pending_questions: Items = summary_field(
        "Pending", "Asked and not yet answered.", id_prefix="Q"
    )
    blockers: Items = summary_field("Blockers", "Open questions that block the refund.")
    notes: Items = summary_field("Notes", "Anything else.")


def test_routes_of_the_default_schema() -> None:
    """Each kind goes to the default field that declares it; answers go with the facts."""
    assert dict(routes(spec_of(Summary))) == {
        "constraints": "constraints",
        "decisions": "decisions",
        "questions": "open_threads",
        "facts": "established_facts",
        "answers": "established_facts",
        "rejected": "rejected",
    }


def test_a_subclass_keeps_the_default_rules_and_leaves_unmatched_fields_empty() -> None:
    """A Summary subclass is summarized like Summary; its extra field with no rule gets nothing."""
    messages = [user(f"{RULE} I have a gas hob."), assistant("Noted.")]
    update = UNCAPPED.summarize(summary_request(messages, schema=RenovationSummary))
    assert texts(update, "constraints") == [RULE]
    assert texts(update, "established_facts") == ["User: I have a gas hob."]
    assert "rooms" not in update.add


def test_a_domain_schema_is_routed_by_field_names_and_descriptions() -> None:
    """Binding policies take rules, *facts take facts, pending takes questions; the rest nothing."""
    assert dict(routes(spec_of(SupportSummary))) == {
        "constraints": "policies",
        "facts": "customer_facts",
        "questions": "pending_questions",
    }
    messages = [
        user("Never call me before noon. My order is W-12345."),
        assistant("Thanks. Can you confirm the delivery address?"),
    ]
    update = UNCAPPED.summarize(summary_request(messages, schema=SupportSummary))
    assert dict(update.add) == {
        "policies": (NewItem(text="Never call me before noon.", at=0, origin="extracted"),),
        "customer_facts": (NewItem(text="User: My order is W-12345.", at=0, origin="extracted"),),
        "pending_questions": (
            NewItem(text="Can you confirm the delivery address?", at=1, origin="extracted"),
        ),
    }


def test_a_field_is_matched_on_its_description_when_its_name_says_nothing() -> None:
    """Without a name match, the first kind named in the description decides."""

    class Triage(BaseSummary):
        """A schema whose field names carry no rule words."""

        blockers: Items = summary_field("Blockers", "Open questions that block the release.")

    assert dict(routes(spec_of(Triage))) == {"questions": "blockers"}


# -- protocol, determinism, async ----------------------------------------------------------------


def test_it_is_a_summarizer_sync_and_async_and_lazily_importable() -> None:
    """It meets both protocols and is the class progsum.summarizers exports."""
    assert isinstance(ExtractiveSummarizer(), Summarizer)
    assert isinstance(ExtractiveSummarizer(), AsyncSummarizer)
    assert LazilyImported is ExtractiveSummarizer


def test_same_request_gives_an_equal_update_with_no_usage() -> None:
    """Deterministic: two runs over equal requests agree; no model means no usage, no objective."""
    messages = renovation(3)
    first = ExtractiveSummarizer().summarize(summary_request(messages))
    second = ExtractiveSummarizer().summarize(summary_request(messages))
    assert first == second
    assert first.usage is None
    assert first.objective is None
    assert first.add


def test_async_twin_returns_the_same_update() -> None:
    """The async twin gives exactly what summarize gives."""
    request = summary_request(renovation(3))
    summarizer = ExtractiveSummarizer()
    assert asyncio.run(summarizer.asummarize(request)) == summarizer.summarize(request)


# -- through the engine --------------------------------------------------------------------------


def test_rules_and_budget_from_early_turns_survive_many_compactions() -> None:
    """Driven turn by turn, the early prohibition and budget stay in the header, verbatim.

    An agent's conversation, told so: its header budget is what brings the consolidation.
    """
    compactor = Compactor(
        policy=Policy(trigger=("fraction", 0.65), context_window=2_000, keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
        conversation="agent",
    )
    state: ConversationState[Summary] = ConversationState()
    for message in renovation(12):
        state = compactor.maybe_compact(state.append(message))
    compacted = [event for event in state.events if event.outcome == "compacted"]
    assert len(compacted) >= 2
    consolidated = [event for event in state.events if event.outcome == "consolidated"]
    assert consolidated  # a 2,000-token window gives the header ~270 tokens: binding items stay
    assert state.cutoff > 20
    system, _ = render_anthropic(state)
    header = system[-1]["text"]
    assert f"] {RULE}" in header
    assert "$18,000" in header
    summary = state.summary
    assert summary is not None
    assert [item.text for item in summary.constraints][:2] == [BUDGET, RULE]
    assert all(item.source == (2, 3) for item in summary.constraints[:2])
    assert [item.text for item in summary.decisions] == [
        f"Let's go with the cheaper line for {topic}." for topic in TOPICS
    ]  # once each, though the chat repeats them, and not hidden by the options listed as facts


_SAID_TEXTS = st.lists(
    st.lists(
        st.sampled_from(["hotel", "kyoto", "breakfast", "guests", "train", "$3,000", "3"])
    ).map(" ".join),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(
    prior=st.lists(st.tuples(st.sampled_from(["facts", "decisions"]), _SAID_TEXTS), max_size=4),
    asked=st.tuples(st.sampled_from(["facts", "decisions"]), st.lists(st.text(max_size=3))),
)
def test_the_index_of_what_was_said_finds_exactly_the_restatements(
    prior: list[tuple[str, list[str]]], asked: tuple[str, list[str]]
) -> None:
    """`Known.restated` answers as a scan of everything said would (`Said.restates`)."""
    said = [Said.of(field, text) for field, texts in prior for text in texts]
    known = Known(said)
    field, words = asked
    for text in [*(t for _, texts in prior for t in texts), " ".join(words), "hotel kyoto"]:
        probe = Said.of(field, text)
        assert known.restated(probe) == any(probe.restates(old) for old in said)


_FIELDS = st.sampled_from(["facts", "decisions"])


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(st.tuples(st.booleans(), _FIELDS, _SAID_TEXTS, st.integers(0, 20))),
    asked=st.tuples(_FIELDS, st.lists(st.text(max_size=3))),
)
def test_the_index_forgets_exactly_what_it_is_told_to_forget(
    steps: list[tuple[bool, str, list[str], int]], asked: tuple[str, list[str]]
) -> None:
    """After adds and removals, `Known.restated` answers as a scan of what it still holds would."""
    known = Known()
    held: list[Said] = []
    for add, field, texts, at in steps:
        if add or not held:
            for text in texts:
                held.append(Said.of(field, text))
                known.add(held[-1])
        else:
            known.remove(held.pop(at % len(held)))
    field, words = asked
    probes = [*(s.key[0] for s in held), " ".join(words), "hotel kyoto", "kyoto hotel 3"]
    for text in probes:
        probe = Said.of(field, text)
        assert known.restated(probe) == any(probe.restates(old) for old in held)
    with pytest.raises(KeyError):
        known.remove(Said.of("facts", "never said before here"))


def test_an_index_over_another_answers_for_both_and_changes_only_itself() -> None:
    """`Known(over=base)` finds what either holds; adding to it leaves ``base`` as it was."""
    base = Known([Said.of("facts", "hotel kyoto breakfast")])
    top = Known(over=base)
    top.add(Said.of("decisions", "train guests"))
    assert top.restated(Said.of("facts", "kyoto hotel"))
    assert top.restated(Said.of("decisions", "guests"))
    assert not base.restated(Said.of("decisions", "guests"))
    assert not top.restated(Said.of("facts", "guests"))


_POOL = (
    RULE,
    BUDGET,
    "Work can only happen on weekdays.",
    "Let's go with the cheaper line for cabinets.",
    "Let's go with the cheaper line for sink.",
    "For cabinets you could pick a cheaper line at $900 or a premium line at $2,400.",
    "The premium line lasts longer.",
    "Help me plan a kitchen renovation for our 1920s house.",
    "installers in your area quote about two days of work",
)
_PRIORS = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["constraints", "decisions", "established_facts"]),
                  st.sampled_from(_POOL)),
        max_size=8,
    ),
    min_size=1,
    max_size=5,
)  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(priors=_PRIORS)
def test_a_summarizer_that_read_other_summaries_proposes_what_a_fresh_one_does(
    priors: list[list[tuple[str, str]]],
) -> None:
    """Reused over priors that gain, lose and swap items, it updates as a new summarizer would."""
    reused = ExtractiveSummarizer()
    messages = renovation(2)
    for items in priors:
        fields: dict[str, list[Item]] = {}
        for n, (field, text) in enumerate(items):
            fields.setdefault(field, []).append(Item(id=f"X{n}", text=text, source=(0, 1)))
        prior = Summary(**{field: tuple(listed) for field, listed in fields.items()})
        request = summary_request(messages, prior=prior, start=len(messages))
        assert reused.summarize(request) == ExtractiveSummarizer().summarize(request)


def test_copies_and_pickles_of_a_summarizer_that_read_a_summary_work() -> None:
    """What a summarizer remembers of the last prior summary is not copied: copies start afresh."""
    used = ExtractiveSummarizer(max_per_field=3)
    prior = Summary(established_facts=(Item(id="F1", text=BUDGET, source=(0, 1)),))
    request = summary_request(renovation(1), prior=prior, start=20)
    update = used.summarize(request)
    for copied in (copy.copy(used), copy.deepcopy(used), pickle.loads(pickle.dumps(used))):  # noqa: S301 - our own bytes
        assert copied == used
        assert copied.summarize(request) == update


def test_in_a_chat_the_notes_may_take_more_of_the_segment_by_default() -> None:
    """A chat's facts are its point: by default a fold notes up to 60% of a chat's prose.

    In an agent's conversation the default stays 35%; a share the caller gives holds in both.
    Six facts and nothing else: 60% holds three of their notes, 35% two, the whole prose six.
    """
    said = [
        "I work as a plumber on the side.",
        "My sister Ana lives in Porto with her two kids.",
        "I play bass clarinet in a band.",
        "I grew up on a farm in Kansas.",
        "I keep bees in the back garden.",
        "My favourite food is grilled chicken.",
    ]
    messages = [
        {"role": "user" if k % 2 == 0 else "assistant", "name": who, "content": text}
        for k, (who, text) in enumerate(zip(["Ann", "Bob"] * 3, said, strict=True))
    ]
    request = summary_request(messages)

    def noted(summarizer: ExtractiveSummarizer, kind: Kind) -> int:
        with using(None, conversation=kind):
            update = summarizer.summarize(request)
        return sum(len(split_note(t)[1]) for t in texts(update, "established_facts"))

    default = ExtractiveSummarizer()
    every = ExtractiveSummarizer(max_share=1.0)
    assert noted(default, "agent") < noted(default, "chat") < noted(every, "chat") == len(said)
    given = ExtractiveSummarizer(max_share=0.35)
    assert noted(given, "chat") >= noted(default, "agent")  # terse notes are shorter
    assert default.max_share is None
    assert default.share_in("chat") == DEFAULT_CHAT_MAX_SHARE == 0.6
    assert default.share_in("agent") == DEFAULT_MAX_SHARE == given.share_in("chat")


def test_an_agents_notes_are_whole_sentences_and_a_chats_stay_terse() -> None:
    """In an agent's conversation a fact is the speaker's whole sentence, one per item.

    Articles and fillers stay and values stay in their sentence; a chat between people keeps
    its terse notes, joined per speaker and day.
    """
    said = [
        user("Honestly, the staging server runs PostgreSQL 15.4 at db.internal:5432."),
        assistant("The nightly export writes about 12,000 rows to /data/out.csv."),
    ]
    with using(None, conversation="agent"):
        agent = texts(summarize(*said), "established_facts")
    assert agent == [
        "User: Honestly, the staging server runs PostgreSQL 15.4 at db.internal:5432.",
        "Assistant: The nightly export writes about 12,000 rows to /data/out.csv.",
    ]
    with using(None, conversation="chat"):
        chat = texts(summarize(*said), "established_facts")
    assert chat != agent
    assert "Honestly" not in chat[0]  # a chat's notes drop fillers
