"""Issue 12's failures of the offline summarizer: fragments, tags, who and when, small budgets.

A chat's notes are terse, joined per speaker and day (the tests using ``in_a_chat``); an agent's
are the speaker's whole sentences (tests/test_extractive.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest

from progsum import BaseSummary, Compactor, ConversationState, Items, Policy, Summary, summary_field
from progsum.judge import _seam as seam
from progsum.judge._judgement import Context, Judgement
from progsum.judge._notes import SEPARATOR, joined, note, split_note, stamp, terse
from progsum.judge._provenance import classify
from progsum.messages._formats import inspect
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summary._merge import live_items
from progsum.summary._schema import Item
from progsum.summary._update import NewItem, SummaryUpdate
from progsum.testing import summary_request

Message = dict[str, Any]

SWE_NOTE = (
    "Note however that you cannot use any interactive session commands (e.g. python, vim) in "
    "this environment, but you can write scripts and run them. E.g. you can write a python "
    "script and then run it with `python <script_name>.py`."
)
TASK_NOTIFICATION = (
    "<task-notification>\n<task-id>b0be39e</task-id>\n<status>completed</status>\n"
    '<summary>Background command "Force recompile ash deps" completed (exit code 0)</summary>\n'
    "</task-notification>"
)
_TAG = re.compile(r"</?[a-z][\w-]*>")


@pytest.fixture
def in_a_chat() -> Iterator[None]:
    """Read every sentence as said in a chat, where the offline summarizer writes terse notes."""
    with seam.using(None, conversation="chat"):
        yield


def texts(update: SummaryUpdate) -> list[str]:
    """Every proposed item's text, all fields."""
    return [
        item.text if isinstance(item, NewItem) else item
        for items in update.add.values()
        for item in items
    ]


def balanced(text: str) -> bool:
    """An independent check of a whole note: brackets and backticks balanced, no trailing colon."""
    pairs = all(text.count(a) == text.count(b) for a, b in ("()", "[]", "{}"))
    return pairs and text.count("`") % 2 == 0 and not text.endswith(":")


class _AllRules:
    """A judge that reads every sentence of the person as a rule: items come from every one."""

    def sentences(self, text: str) -> tuple[str, ...]:
        return seam.default_judge().sentences(text)

    def judge(self, sentence: str, context: Context) -> Judgement:  # noqa: ARG002 - all alike
        return Judgement("rule", "must") if context.author == "user" else Judgement("remark")


class _AllFacts(_AllRules):
    """A judge that reads every sentence as a fact."""

    def judge(self, sentence: str, context: Context) -> Judgement:  # noqa: ARG002 - all alike
        return Judgement("fact")


def test_the_swe_agent_note_never_becomes_a_fragment_item() -> None:
    """The "[C3] ... commands (e.g." fragment: items are whole sentences or nothing."""
    with seam.using(_AllRules()):
        update = ExtractiveSummarizer(max_share=1.0).summarize(
            summary_request([{"role": "user", "content": SWE_NOTE}])
        )
    found = texts(update)
    assert found, "the whole first sentence is an item"
    assert all(balanced(text) for text in found), found
    assert not any(text.rstrip().endswith("(e.g.") for text in found)


def test_a_task_notification_tag_never_becomes_an_item() -> None:
    """The "[F3] <task-id>b0be39e</task-id>" tag: markup lines yield no item."""
    messages = [
        {"role": "user", "content": TASK_NOTIFICATION},
        {"role": "assistant", "content": "The recompile finished; I found 3 stale modules."},
    ]
    found = texts(ExtractiveSummarizer(max_share=1.0).summarize(summary_request(messages)))
    assert not any(_TAG.search(text) for text in found), found
    assert "Assistant: The recompile finished; I found 3 stale modules." in found


def test_the_task_notification_trailer_is_harness_text_not_a_fact() -> None:
    """Claude Code's "Read the output file to retrieve the result: PATH" line is machine text."""
    trailer = (
        "Read the output file to retrieve the result: "
        "/tmp/claude-1000/-home-USER-projects-app/tasks/b0be39e.output"
    )
    message = {"role": "user", "content": f"{TASK_NOTIFICATION}\n{trailer}"}
    assert classify(message, inspect(message, 0, None)) == "tool"
    typed = {"role": "user", "content": f"{TASK_NOTIFICATION}\nRead the output file and fix it."}
    assert classify(typed, inspect(typed, 0, None)) == "user", (
        "only the harness's own wording is machine"
    )
    found = texts(
        ExtractiveSummarizer(max_share=1.0).summarize(
            summary_request([message, {"role": "assistant", "content": "The build passed."}])
        )
    )
    assert not any("output file" in text for text in found), found


@pytest.mark.usefixtures("in_a_chat")
def test_i_went_yesterday_says_who_and_when() -> None:
    """A first-person fact names its speaker and its message's day, values verbatim."""
    messages = [
        {
            "role": "user",
            "name": "Caroline",
            "timestamp": "2023-05-08T13:56:00",
            "content": "I went to an LGBTQ support group yesterday with 12 people.",
        },
    ]
    found = texts(ExtractiveSummarizer(max_share=1.0).summarize(summary_request(messages)))
    assert "Caroline (8 May 2023): went to LGBTQ support group yesterday with 12 people" in found


def test_the_dated_note_passes_the_engine_contract() -> None:
    """The engine keeps the note: its day's values count as shown by the message (stamp)."""
    messages: list[Message] = [{"role": "user", "content": "Let's plan the week."}]
    for n in range(10):
        messages.append(
            {
                "role": "user",
                "name": "Caroline",
                "timestamp": f"2023-05-{n + 10:02d}",
                "content": f"I went to the pottery class number {n + 1} with my sister Ana.",
            }
        )
        messages.append({"role": "assistant", "content": "Sounds lovely, tell me more! " * 8})
    compactor = Compactor(
        policy=Policy(context_window=4_000, keep=("messages", 2)),
        summarizer=ExtractiveSummarizer(),
        conversation="chat",
    )
    state = compactor.compact(ConversationState(messages), force=True)
    assert state.summary is not None
    facts = [item.text for item in state.summary.established_facts]
    assert "Caroline (10 May 2023): went to pottery class number 1 with my sister Ana" in facts
    assert not any("Sounds lovely" in text for text in facts)  # a pleasantry is never an item


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I'm a nurse.", "Caroline: is a nurse."),
        ("I love hiking.", "Caroline: loves hiking."),
        ("I don't eat meat.", "Caroline: doesn't eat meat."),
        ("I really enjoy walking.", "Caroline: really enjoys walking."),
        ("I have 2 dogs.", "Caroline: has 2 dogs."),
        ("I watch movies.", "Caroline: watches movies."),
        ("My dog is Rex.", "Caroline: My dog is Rex."),
        ("The red paint costs $40.", "Caroline: The red paint costs $40."),
    ],
)
def test_first_person_is_resolved_to_the_speaker(sentence: str, expected: str) -> None:
    """A leading "I" becomes the speaker and its verb agrees; a third-person fact says who too."""
    assert note(sentence, who="Caroline") == expected


def test_stamp_names_the_speaker_and_the_day() -> None:
    """What a message says about itself: ``name`` and the day of ``timestamp``."""
    assert stamp({"role": "user", "name": "Frank", "timestamp": "2023-04-27"}) == (
        "Frank 27 April 2023"
    )
    assert stamp({"role": "user", "content": "hi"}) == ""
    assert note("I ran 5 km.", who="Frank", day=date(2023, 4, 27)) == (
        "Frank (27 April 2023): ran 5 km."
    )


def test_a_persona_preference_is_not_made_binding() -> None:
    """The user describing their tastes in a chat is a fact, never a binding constraint."""
    messages = [
        {"role": "user", "content": "Let's chat."},
        {"role": "user", "content": "I don't eat meat but I do like some grilled veggies."},
        {"role": "assistant", "content": "Nice, that sounds great, haha! " * 20},
        {"role": "user", "content": "Thanks, have a good one!"},
    ]
    compactor = Compactor(
        policy=Policy(context_window=4_000, keep=("messages", 1)),
        summarizer=ExtractiveSummarizer(),
    )
    state = compactor.compact(ConversationState(messages), force=True)
    assert state.summary is not None
    assert state.summary.constraints == ()
    assert "User: I don't eat meat but I do like some grilled veggies." in [
        item.text for item in state.summary.established_facts
    ]


def test_the_default_header_budget_keeps_facts_on_a_small_chat() -> None:
    """At a 2k window with the default header budget the final header still holds facts.

    Before, drop-oldest emptied the facts field while binding items took the budget; now the
    least salient go first and facts with names and values stay.
    """
    chat: list[Message] = [{"role": "user", "content": "Hi! Let's chat about our week."}]
    for n in range(40):
        chat.append({"role": "user", "content": f"I visited Porto on day {n + 1} with Ines."})
        chat.append({"role": "assistant", "content": "That sounds like fun, haha."})
        chat.append({"role": "user", "content": "Yeah it was nice, I guess."})
    compactor = Compactor(policy=Policy(context_window=2_000, keep=("messages", 4)))
    state: ConversationState[Any] = ConversationState()
    for message in chat:
        state = compactor.maybe_compact(state.append(message))
    assert state.summary is not None
    facts = live_items(state.summary)["established_facts"]
    assert len(facts) >= 3
    assert all("Porto" in item.text for item in facts)
    assert state.estimate(compactor.counter) <= (compactor.policy.input_window or 0)


class PersonalSummary(BaseSummary):
    """A personal-assistant schema declared in the test, fed by declared extractors."""

    profile: Items = summary_field(
        label="About the user",
        description="What the user says about themselves.",
        extract=("profile",),
    )
    preferences: Items = summary_field(
        label="Likes and dislikes",
        description="What the user likes or dislikes.",
        extract=("preferences",),
    )
    people: Items = summary_field(
        label="People", description="People the user names.", extract=("people",)
    )
    important_dates: Items = summary_field(
        label="Dates", description="Dated events.", extract=("dates",)
    )
    notes: Items = summary_field(
        label="Other facts", description="Other facts.", extract=("facts",)
    )


@pytest.mark.usefixtures("in_a_chat")
def test_declared_extractors_route_before_field_names() -> None:
    """Fields declaring extract kinds get them; the name rules only fill what nobody declared."""
    messages = [
        {"role": "user", "name": "Ava", "content": "I work as a nurse in Leeds."},
        {"role": "user", "name": "Ava", "content": "I love jazz and cycling."},
        {"role": "user", "name": "Ava", "content": "My sister Mia lives in Oslo."},
        {"role": "user", "name": "Ava", "content": "My birthday is on March 3."},
        {"role": "assistant", "content": "The concert costs $40."},
    ]
    update = ExtractiveSummarizer(max_share=1.0).summarize(
        summary_request(messages, schema=PersonalSummary)
    )
    got = {
        name: [item.text if isinstance(item, NewItem) else item for item in items]
        for name, items in update.add.items()
    }
    assert got == {
        "profile": ["Ava: works as nurse in Leeds"],
        "preferences": ["Ava: loves jazz and cycling"],
        "people": ["Ava: My sister Mia lives in Oslo"],
        "important_dates": ["Ava: My birthday is on March 3"],
        "notes": ["Assistant: The concert costs $40"],
    }


_VALUE_TOKEN = re.compile(r"\S*\d\S*")


def value_tokens(text: str) -> list[str]:
    """An independent reading of values: every whitespace token holding a digit, unpunctuated."""
    return sorted(token.strip(".,;!?") for token in _VALUE_TOKEN.findall(text))


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Well, I think I have a jeep, haha.", "I have jeep"),
        (
            "Oh yeah, I work in marketing and I really love it so much!",
            "I work in marketing and I love it",
        ),
        ("Haha I just ran 5 km in the park :)", "I ran 5 km in park"),
        (
            "To be honest, my flight UA881 leaves at 9:40 on the 3rd.",
            "my flight UA881 leaves at 9:40 on 3rd",
        ),
        ("I have a lot of dogs, lol.", "I have a lot of dogs"),
        ("I think so.", "I think so."),
        ("The Beatles are my favourite band.", "The Beatles are my favourite band"),
        ("I got a new job :))", "I got new job"),
        ("We moved to Leeds in 2019 :|", "We moved to Leeds in 2019"),
        ("Not sure about that band :/", "Not sure about that band"),
        ("See http://example.com :/ or ask", "See http://example.com or ask"),
    ],
)
def test_terse_drops_fillers_hedges_and_articles_but_no_value(sentence: str, expected: str) -> None:
    """A note is telegraphic: fillers, hedges, articles and end marks go; values and names stay."""
    got = terse(sentence)
    assert got == expected
    assert value_tokens(got) == value_tokens(sentence)


@pytest.mark.usefixtures("in_a_chat")
def test_one_speakers_notes_of_one_update_share_one_label() -> None:
    """Three facts by Speaker 1 in one segment are one note: one id and one label, not three."""
    messages = [
        {"role": "user", "name": "Speaker 1", "content": "Well, I have a jeep."},
        {"role": "assistant", "name": "Speaker 2", "content": "Nice, I drive a Honda Civic."},
        {"role": "user", "name": "Speaker 1", "content": "I work in marketing. I live in Leeds."},
    ]
    with seam.using(_AllFacts()):  # the labels are the point here, not which sentence is a fact
        found = texts(ExtractiveSummarizer(max_share=1.0).summarize(summary_request(messages)))
    assert found == [
        "Speaker 1: has jeep; works in marketing; lives in Leeds",
        "Speaker 2: drives Honda Civic",
    ]


@pytest.mark.usefixtures("in_a_chat")
def test_the_same_fact_of_another_speaker_is_noted_and_a_restatement_is_not() -> None:
    """A note restates a prior one only when its speaker said it: Bob's job is news after Ann's."""
    prior = Summary(
        established_facts=(Item(id="F1", text="Ann: is nurse", source=(0, 1), origin="extracted"),)
    )
    messages = [
        {"role": "user", "name": "Ann", "content": "I am a nurse."},
        {"role": "assistant", "name": "Bob", "content": "I am a nurse too."},
    ]
    with seam.using(_AllFacts()):
        found = texts(
            ExtractiveSummarizer(max_share=1.0).summarize(
                summary_request(messages, prior=prior, start=1)
            )
        )
    assert found == ["Bob: is nurse too"]


@pytest.mark.parametrize(
    ("label", "bodies"),
    [
        ("Speaker 1", ["has jeep", "works in marketing", "lives in Leeds"]),
        ("Caroline (8 May 2023)", ["went to LGBTQ support group"]),
        ("(8 May 2023)", ["The red paint costs $40", "the shop closes at 6pm"]),
        ("", ["The 09:41 train goes to Sintra", "it is full on Sundays"]),
        ("", ["Is Sintra far? Yes: an hour by train."]),
    ],
)
def test_split_note_reads_back_what_joined_wrote(label: str, bodies: list[str]) -> None:
    """A joined note splits into its label and notes; an answer's "Yes:" is no speaker label."""
    assert split_note(joined(label, SEPARATOR.join(bodies))) == (label, bodies)


@pytest.mark.usefixtures("in_a_chat")
def test_the_summarizers_joined_notes_split_back_into_their_notes() -> None:
    """What the extractive summarizer writes is what the consolidation's `split_note` reads."""
    messages = [
        {"role": "user", "name": "Speaker 1", "content": "I have a jeep. I work in marketing."},
    ]
    (found,) = texts(ExtractiveSummarizer(max_share=1.0).summarize(summary_request(messages)))
    assert split_note(found) == ("Speaker 1", ["has jeep", "works in marketing"])


@pytest.mark.parametrize(
    "sentence",
    [
        "Then my boss decided to also sell online so we have been busy since.",
        "What was the major that you decided on in those two countries.",
        "They chose the blue house in the end.",
    ],
)
def test_someone_elses_decision_in_a_chat_is_not_binding(sentence: str) -> None:
    """A decision cue about a third party, or asked about, is told, not decided here."""
    messages = [{"role": "user", "content": sentence}, {"role": "assistant", "content": "Oh!"}]
    update = ExtractiveSummarizer(max_share=1.0).summarize(summary_request(messages))
    assert "decisions" not in update.add, update.add


def test_we_decided_is_still_a_decision() -> None:
    """The speakers' own decision stays binding."""
    messages = [
        {"role": "user", "content": "We decided to book the 9am ferry to Lisbon."},
        {"role": "assistant", "content": "Great."},
    ]
    update = ExtractiveSummarizer(max_share=1.0).summarize(summary_request(messages))
    assert texts(SummaryUpdate(add={"d": update.add["decisions"]})) == [
        "We decided to book the 9am ferry to Lisbon."
    ]


@pytest.mark.parametrize(
    ("sentence", "binding"),
    [
        ("I might have to commission a piece from you too.", False),
        ("They like to keep the classes to no more than 12 or 15.", False),
        ("I'll have to look around some more for a desk.", False),
        ("We must stay under $3,000 for the whole trip.", True),
    ],
)
def test_a_hedged_or_third_party_obligation_is_a_fact_not_a_rule(
    sentence: str, *, binding: bool
) -> None:
    """Hedged, planned or third-party obligations are remarks; "We must stay under" is a rule."""
    messages = [{"role": "user", "content": sentence}, {"role": "assistant", "content": "Okay."}]
    update = ExtractiveSummarizer(max_share=1.0).summarize(summary_request(messages))
    assert ("constraints" in update.add) is binding, update.add


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        (
            'I just finished "Gone with the Wind", a really long book.',
            'I finished "Gone with the Wind", long book',
        ),
        (
            "We saw \u201cThe Lord of the Rings\u201d again.",
            "We saw \u201cThe Lord of the Rings\u201d again",
        ),
        ('He said "I am so very tired" and left.', 'He said "I am so very tired" and left'),
        (
            'I like "Journey to the West" and the "Dream of the Red Chamber"',
            'I like "Journey to the West" and "Dream of the Red Chamber"',
        ),
    ],
)
def test_terse_leaves_quoted_words_as_they_are(sentence: str, expected: str) -> None:
    """A quoted title or saying is a name: no article or softener inside quotes is dropped."""
    assert terse(sentence) == expected


def test_a_terse_note_ending_on_a_function_word_keeps_its_full_stop() -> None:
    """A note that ends on "of" keeps its full stop, or it would read as cut off."""
    got = terse("We are getting a cat, they seem easier to take care of.")
    assert got.endswith("take care of.")
    assert not re.search(r"\b(?:of|to|with|the|a|for)$", got)
