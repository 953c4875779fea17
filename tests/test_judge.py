"""The text-judgement seam: its gates on the held-back corpus and the failures it was built for.

The gates read the shipped model on the held-back split of ``tests/data/judge/`` (the figures and
the confusion matrix are in docs/judge.md; ``python bench/judge.py`` prints them).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from progsum import Compactor, ConversationState, Policy, SummaryUpdate
from progsum.errors import ConfigError
from progsum.judge import _seam as seam
from progsum.judge._conversation import infer
from progsum.judge._features import last_sentence
from progsum.judge._judgement import LABELS, Context, Judgement
from progsum.judge._linear import MODEL_PATH, LinearJudge
from progsum.judge._machine import strip_blocks
from progsum.judge._provenance import user_prose
from progsum.summarizers import ExtractiveSummarizer
from progsum.testing import FunctionSummarizer, QueuedSummarizer, summary_request

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import judge as gate  # bench/judge.py: the gate's figures
import judge_corpus as corpus  # bench/judge_corpus.py: the rows as the gate reads them

CORPUS = Path(__file__).resolve().parent / "data" / "judge"


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    """The gate's figures on the held-back split, once for the module."""
    return gate.figures(gate.held_back())


# -- the corpus ------------------------------------------------------------------------------------


def _rows() -> list[dict[str, Any]]:
    """Every labelled row of the corpus."""
    rows = []
    for name in ("corpus.jsonl", "written.jsonl"):
        rows += [json.loads(line) for line in (CORPUS / name).read_text().splitlines() if line]
    return rows


def test_the_corpus_is_labelled_split_by_conversation_and_large_enough() -> None:
    """2,000+ data sentences in context, every label known, no conversation on both sides."""
    rows = _rows()
    data = [r for r in rows if r["source"] != "written"]
    assert len(data) >= 2_000
    assert {r["label"] for r in rows} <= set(LABELS)
    assert all((r["modality"] is not None) == (r["label"] == "rule") for r in rows)
    sides: dict[str, set[str]] = {}
    for r in rows:
        sides.setdefault(r["conversation"], set()).add(r["split"])
    assert all(len(s) == 1 for s in sides.values())
    assert {r["kind"] for r in data} == {"agent", "chat"}
    assert all("previous" in r and "author" in r and "reply" in r for r in rows)


def test_the_shipped_model_is_the_one_trained_on_these_features() -> None:
    """The shipped weights were trained on this corpus's train split, and stay small."""
    judge = LinearJudge()
    assert judge.meta["train_rows"] == sum(r["split"] == "train" for r in _rows())
    assert MODEL_PATH.stat().st_size < 2_000_000


# -- the gates on the held-back split ------------------------------------------------------------


def test_rules_are_found_precisely_on_held_back_conversations(figures: dict[str, Any]) -> None:
    """The rule gate: precision 0.95 and recall 0.85 on conversations never trained on."""
    assert figures["rule_precision"] >= gate.GATES["rule_precision"]
    assert figures["rule_recall"] >= gate.GATES["rule_recall"]


def test_pleasantries_never_become_items_on_held_back_conversations(
    figures: dict[str, Any],
) -> None:
    """The chatter gate: 95 % of held-back pleasantries become no item."""
    assert figures["chatter_kept_out"] >= gate.GATES["chatter_kept_out"]


def test_the_gate_judges_what_the_pipeline_judges() -> None:
    """The gate reads a row as the pipeline does.

    A row's opening date stamp is stripped, as the pipeline strips it before judging; a sentence
    judged an item label without a content word becomes no item, as in the pipeline.
    """
    row = {"text": "[10:45 am on 6 June, 2023] Morning Hana!", "previous": "[9 June 2023] Hi!"}
    assert corpus.sentence(row) == "Morning Hana!"
    assert corpus.context({**row, "author": "user", "kind": "chat"}).previous == "Hi!"
    assert not gate.becomes_item("question", ":?")
    assert not gate.becomes_item("fact", "I'm in.")
    assert not gate.becomes_item("chatter", "Hey Melanie, how was the trip to Oslo?")
    assert gate.becomes_item("question", "How was the trip to Oslo?")
    assert not gate.becomes_item("question", "Did you sleep well?", answered=True)
    assert gate.becomes_item("fact", "I slept well.", answered=True)  # only a question is answered


@pytest.mark.parametrize(
    ("reply", "open_thread"),
    [
        ("Not really, the neighbours had a party until two.", False),
        ("Haha yes!", True),  # chatter answers nothing
        (None, True),
    ],
)
def test_the_gate_reads_an_answer_as_the_extractive_summarizer_does(
    reply: str | None, open_thread: bool
) -> None:
    """A question is an item only while unanswered: the gate's reading and the pipeline agree.

    The pipeline is the extractive summarizer over a segment holding the question and the reply;
    the gate reads the row's ``reply`` with `bench/judge.py`'s `answered`.
    """
    question = "Did you sleep well last night?"
    messages: list[dict[str, str]] = [{"role": "user", "content": question}]
    if reply is not None:
        messages.append({"role": "assistant", "content": reply})
    update = ExtractiveSummarizer(max_share=1.0).summarize(summary_request(messages))
    threads = [getattr(item, "text", item) for item in update.add.get("open_threads", ())]
    assert (question in threads) is open_thread
    row = {"role": "user", "kind": "chat", "reply": reply}
    assert gate.answered(row, LinearJudge()) is not open_thread


def test_no_question_or_prohibition_is_read_as_a_revision(figures: dict[str, Any]) -> None:
    """No held-back question or prohibition reopens anything."""
    assert figures["reopens"] == 0


# -- the failures the seam was built for --------------------------------------------------------


_FRIENDS = [
    "Don't give up, buddy!",
    "No prob, Jon!",
    "Must have taken a lot of work.",
    "You need to visit Albania it is amazing!",
    "Mental health's a priority, so make sure you take care of yourself.",
]


@pytest.mark.parametrize("sentence", _FRIENDS)
def test_in_a_two_person_chat_nothing_binds(sentence: str) -> None:
    """A chat has no assistant: no remark in it is a rule, a decision or a revision."""
    authors: tuple[Literal["user", "assistant"], ...] = ("user", "assistant")
    for author in authors:
        verdict = seam.judge(sentence, Context(author, kind="chat"))
        assert not verdict.binding, (sentence, verdict)


def test_a_chat_compactor_keeps_no_rule_from_friends() -> None:
    """Two people's advice to each other, folded, leaves no constraint and no decision."""
    turns = []
    for n, sentence in enumerate(_FRIENDS * 3):
        turns.append({"role": "user" if n % 2 else "assistant", "content": f"{sentence} " * 3})
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 2)),
        summarizer=ExtractiveSummarizer(),
        conversation="chat",
    )
    state = compactor.compact(ConversationState(turns), force=True)
    assert state.summary is not None
    assert not state.summary.constraints
    assert not state.summary.decisions


@pytest.mark.parametrize(
    "text",
    [
        "Is the $3,000 budget still fine now?",
        "Don't change the $3,000 budget, it is final.",
        "Never ignore the $3,000 budget.",
    ],
)
def test_questions_negations_and_reaffirmations_never_reopen(text: str) -> None:
    """The issue's three user messages that were read as reopening the budget."""
    assert not seam.reopens(text, Context("user"))


@pytest.mark.parametrize(
    "tag",
    [
        "user-memory-input",
        "environment_context",
        "attached_files",
        "persisted-output",
        "system\u2011reminder",
        "some-tag-nobody-listed",
    ],
)
def test_any_tag_delimited_block_in_user_text_is_machine_text(tag: str) -> None:
    """Whatever the tag's name (look-alikes too), its block never becomes the user's prose."""
    message = {
        "role": "user",
        "content": f"Fix the login bug.\n<{tag}>\nNever push to main.\n</{tag}>",
    }
    assert "Never push" not in user_prose(message)
    request = summary_request([message])
    assert [s.text for s in request.extraction.prohibitions] == []


def test_fullwidth_brackets_and_an_unclosed_block_are_machine_text_too() -> None:
    """Look-alike brackets close a block; a block cut short takes the rest; inline tags alone."""
    assert "Never" not in strip_blocks("\uff1cnotes\uff1eNever push.\uff1c/notes\uff1e ok")
    assert strip_blocks("Do it.\n<environment_context>\nNever push to main.").strip() == "Do it."
    assert strip_blocks("I use <div> a lot, I <3 it.").split() == [
        "I",
        "use",
        "a",
        "lot,",
        "I",
        "<3",
        "it.",
    ]


def _wrapped(rule: str) -> list[dict[str, Any]]:
    """An app's conversation: what the person typed is wrapped in ``<user_query>``."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Tidy the repository."}]
    messages.append(
        {
            "role": "user",
            "content": f"<user_query>\n{rule}\n</user_query>\n<environment_context>\n"
            "Always use tabs.\n</environment_context>",
        }
    )
    for n in range(8):
        messages.append({"role": "assistant", "content": f"Step {'abcdefgh'[n]}: " + "read " * 40})
        messages.append({"role": "user", "content": "<user_query>Go on.</user_query>"})
    return messages


def test_the_caller_marks_which_tags_hold_the_persons_prose() -> None:
    """``prose_tags`` names the blocks that are the user's own text; the others stay machine."""
    rule = "Never push to main."
    compactors = {
        "default": Compactor(
            policy=Policy(context_window=1_500), summarizer=ExtractiveSummarizer()
        ),
        "marked": Compactor(
            policy=Policy(context_window=1_500),
            summarizer=ExtractiveSummarizer(),
            prose_tags=["User_Query"],  # compared folded, as tag names are
        ),
    }
    found = {}
    for name, compactor in compactors.items():
        state = compactor.compact(ConversationState(_wrapped(rule)), force=True)
        assert state.summary is not None
        found[name] = [item.text for item in state.summary.constraints]
    assert rule not in found["default"]  # an unknown tag is machine text
    assert rule in found["marked"]
    assert not any("tabs" in text for text in found["marked"])  # other tags stay machine text
    with seam.using(None, prose_tags=("user_query",)):
        assert user_prose(_wrapped(rule)[1]) == rule
    assert user_prose(_wrapped(rule)[1]) == ""


@pytest.mark.parametrize("bad", ["", "user query", "<user_query>", 7])
def test_a_prose_tag_that_names_no_tag_is_a_config_error(bad: object) -> None:
    """The error names the value and says what a tag name is."""
    with pytest.raises(ConfigError, match="prose_tags"):
        Compactor(policy=Policy(context_window=1_500), prose_tags=[bad])  # type: ignore[list-item]


def _text(item: object) -> str:
    """An item's text, new or plain."""
    return item if isinstance(item, str) else str(getattr(item, "text", item))


def test_unanswered_user_questions_are_open_threads() -> None:
    """When every user turn is a question and nothing answers them, they are the open threads."""
    turns = [
        {"role": "user", "content": "Which neighbourhood in Lisbon is quietest at night?"},
        {"role": "assistant", "content": "Good question!"},
        {"role": "user", "content": "And how far is it from the airport by metro?"},
    ]
    request = summary_request(turns)
    update = ExtractiveSummarizer().summarize(request)
    assert [_text(t) for t in update.add.get("open_threads", ())] == [
        "Which neighbourhood in Lisbon is quietest at night?",
        "And how far is it from the airport by metro?",
    ]


def test_every_note_says_who_and_when() -> None:
    """A third-person fact from a named, dated message says who said it and when."""
    turns = [
        {
            "role": "user",
            "content": "The red paint costs $40 at the corner shop.",
            "name": "Melanie",
            "timestamp": "2023-06-09",
        },
    ]
    update = ExtractiveSummarizer(max_share=1.0).summarize(summary_request(turns))
    (fact,) = [_text(t) for t in update.add["established_facts"]]
    assert fact.startswith("Melanie (9 June 2023):")


# -- the seam as an extension point -------------------------------------------------------------


class _Everything:
    """A judge that reads every sentence as a prohibition (to see that the pipeline asks it)."""

    def sentences(self, text: str) -> tuple[str, ...]:
        return tuple(line.strip() for line in text.splitlines() if line.strip())

    def judge(self, sentence: str, context: Context) -> Judgement:  # noqa: ARG002 - all alike
        if context.author != "user":
            return Judgement("remark")
        return Judgement("rule", "must_not")


def test_a_users_judge_decides_for_the_whole_pipeline() -> None:
    """`Compactor(judge=...)`: the contract and the guards ask that judge, only in its runs."""
    turns = [{"role": "user", "content": "Paint the fence green\nwith two coats " + "x " * 300}] * 6
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 2)),
        summarizer=QueuedSummarizer(SummaryUpdate()),
        judge=_Everything(),
    )
    state = compactor.compact(ConversationState(turns), force=True)
    assert state.summary is not None
    assert any("Paint the fence green" in i.text for i in state.summary.constraints)
    assert seam.current() is seam.default_judge()  # the compactor's judge was only lent


def test_a_bad_judge_or_conversation_kind_is_a_config_error() -> None:
    """Errors name the bad value and the fix."""
    with pytest.raises(ConfigError, match="not a progsum Judge"), seam.using(object()):  # type: ignore[arg-type]
        pass
    with pytest.raises(ConfigError, match="conversation='group'"):
        Compactor(policy=Policy(context_window=2_000), conversation="group")  # type: ignore[arg-type]


def test_a_model_file_for_other_features_is_refused(tmp_path: Path) -> None:
    """A model trained on another feature version is refused, saying how to retrain."""
    bad = tmp_path / "model.json"
    bad.write_text(json.dumps({"feature_version": 0}))
    with pytest.raises(ConfigError, match="retrain it"):
        LinearJudge(bad)


def test_the_conversation_kind_is_read_once_per_message_and_follows_the_state() -> None:
    """Named speakers and no tool make a chat; a tool call later makes an agent conversation.

    Each state of one chain reads only the messages after what the chain read before, and an
    older state still answers for its own messages.
    """
    chat = ConversationState(
        [
            {"role": "user", "name": "Ana", "content": "My dog is a beagle."},
            {"role": "assistant", "name": "Ben", "content": "Mine is a poodle!"},
        ]
    )
    assert chat.kind == infer(chat.log, chat.infos) == "chat"
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    agent = chat.append({"role": "assistant", "content": None, "tool_calls": [call]})
    assert agent.kind == infer(agent.log, agent.infos) == "agent"
    assert chat.kind == "chat"
    unnamed = ConversationState([{"role": "user", "content": "Plan my trip."}])
    assert unnamed.kind == "agent"
    assert unnamed.append({"role": "assistant", "name": "Ben", "content": "Sure."}).kind == "chat"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab .!?\n\t"), max_size=40))
def test_the_previous_messages_last_sentence_is_the_regex_reading(text: str) -> None:
    r"""`last_sentence` reads what ``[^.!?]*[.!?]*\s*$`` matched first, with no backtracking."""
    stripped = text.strip()
    match = re.search(r"[^.!?]*[.!?]*\s*$", stripped)
    assert match is not None
    assert last_sentence(stripped) == match.group(0)


class _Recording:
    """A judge that reads every sentence as a remark and notes each context it was asked in."""

    def __init__(self) -> None:
        self.asked: dict[str, set[str]] = {}

    def sentences(self, text: str) -> tuple[str, ...]:
        return tuple(line.strip() for line in text.splitlines() if line.strip())

    def judge(self, sentence: str, context: Context) -> Judgement:
        self.asked.setdefault(sentence, set()).add(context.previous)
        return Judgement("remark")


def _empty_updates() -> FunctionSummarizer:
    return FunctionSummarizer(lambda _: SummaryUpdate())


@pytest.mark.parametrize("summarizer", ["extractive", "model"])
def test_a_segments_first_message_is_judged_after_the_message_before_it(summarizer: str) -> None:
    """The judge reads a folded segment's first message in the context of the prose before it.

    That is the context the judge was trained with (the previous message of the conversation),
    for the first message of every segment as for the rest: never an empty one, which reads as
    the opening of a conversation.
    """
    judge = _Recording()
    chosen = ExtractiveSummarizer() if summarizer == "extractive" else _empty_updates()
    compactor = Compactor(
        policy=Policy(context_window=2_000, keep=("messages", 2)),
        summarizer=chosen,
        judge=judge,
    )
    state = ConversationState([{"role": "user", "content": "Plan a week in Lisbon."}])
    starts = []
    for n in range(1, 12):
        role = "assistant" if n % 2 else "user"
        state = state.append({"role": role, "content": f"Line {n}.\nfiller " + "x " * 120})
        if n in (5, 11):
            starts.append(state.cutoff or 1)
            state = compactor.compact(state, force=True)
    assert starts[1] > 1, starts  # the second segment starts after the first one
    for start in starts:
        before = state.log[start - 1]["content"]
        assert judge.asked[f"Line {start}."] == {before}, (start, judge.asked)
