"""bench/judge_languages.py: its loaders, its mapping of the sources' labels, and its counting.

The fixtures are written here, in each source's format (xSID's ``.conll``, X-RiSAWOZ's dialogue
JSON), with sentences of our own: nothing is copied from the data.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import judge_languages as jl

from progsum.judge import Context, Judgement

pytestmark = pytest.mark.bench  # outside the default run: python -m pytest -m bench


def _conll(items: list[tuple[str, str, str, list[tuple[str, str]]]]) -> str:
    """An xSID file: per item its text, English text, intent and (token, BIO tag) lines."""
    blocks = []
    for n, (text, english, intent, tokens) in enumerate(items, 1):
        lines = [
            f"# id = {n}",
            f"# text-en = {english}",
            f"# text = {text}",
            f"# intent = {intent}",
        ]
        lines += [f"{i}\t{token}\t{intent}\t{tag}" for i, (token, tag) in enumerate(tokens, 1)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


_ALARM = (
    "Weck mich um sieben",
    "Wake me at seven",
    "alarm/set_alarm",
    [("Weck", "O"), ("mich", "O"), ("um", "B-datetime"), ("sieben", "I-datetime")],
)
_TODO = (
    "Erinnere mich an den Müll",
    "Remind me about the bins",
    "reminder/set_reminder",
    [
        ("Erinnere", "O"),
        ("mich", "O"),
        ("an", "O"),
        ("den", "B-reminder/todo"),
        ("Müll", "I-reminder/todo"),
    ],
)
_WEATHER = (
    "Regnet es morgen ?",
    "Will it rain tomorrow ?",
    "weather/find",
    [("Regnet", "O"), ("es", "O"), ("morgen", "B-datetime"), ("?", "O")],
)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data folder: seven German xSID requests and one French X-RiSAWOZ dialogue."""
    (tmp_path / "xsid").mkdir()
    items = [_TODO, _ALARM, _WEATHER, _ALARM, _TODO, _ALARM, _WEATHER]
    (tmp_path / "xsid" / "de.test.conll").write_text(_conll(items), encoding="utf-8")
    (tmp_path / "x-risawoz").mkdir()
    turns = [
        (
            "Bonjour. Je cherche un hôtel pas cher à Lyon.",
            [["Inform", "Hotel", "pricerange", "bon marché"], ["Greeting", "Hotel", "", ""]],
            {"Hotel-pricerange": {"pas cher": [[27, 35]]}},
        ),
        ("Quel est son numéro ?", [["Request", "Hotel", "phone", ""]], {}),
        (
            "Il me faut une chambre double.",
            [["Inform", "Hotel", "room type", "chambre double"]],
            {"Hotel-room type": {"chambre double": [[15, 29]]}},
        ),
        (
            "A-t-il une chambre double ?",
            [["Inform", "Hotel", "room type", "chambre double"], ["Request", "Hotel", "price", ""]],
            {},
        ),
        ("Merci, au revoir.", [["Bye", "General", "", ""]], {}),
    ]
    dialogue = {
        "dialogue_id": "d1",
        "dialogue": [
            {
                "user_utterance": [text, spans],
                "user_actions": acts,
                "system_utterance": [f"Réponse {n}. " + "Voici les détails. " * 30, {}],
            }
            for n, (text, acts, spans) in enumerate(turns)
        ],
    }
    (tmp_path / "x-risawoz" / "fr_fewshot.json").write_text(
        json.dumps([dialogue]), encoding="utf-8"
    )
    return tmp_path


class _Marker:
    """A judge reading a user's sentence with "sieben" or "chambre" as a rule, all else chatter."""

    def sentences(self, text: str) -> tuple[str, ...]:
        return tuple(s.strip() for s in text.replace(". ", ".\n").splitlines() if s.strip())

    def judge(self, sentence: str, context: Context) -> Judgement:
        if context.author == "user" and ("sieben" in sentence or "chambre" in sentence):
            return Judgement("rule", "requirement")
        return Judgement("chatter")


def test_a_missing_data_folder_stops_with_the_path_and_what_to_pass(tmp_path: Path) -> None:
    """A folder holding neither source exits with one message naming the path and the fix."""
    with pytest.raises(SystemExit) as stopped:
        jl.load(tmp_path, _Marker())
    message = str(stopped.value.code)
    assert str(tmp_path / "xsid") in message
    assert "pass the folder that holds xsid/ and x-risawoz/" in message


def test_xsid_requests_are_mapped_by_intent_and_slot() -> None:
    """A requirement's value makes a rule; the request for the work alone or a question does not."""
    assert jl.xsid_label("alarm/set_alarm", ["datetime"]) == "rule"
    assert jl.xsid_label("BookRestaurant", ["party_size_number", "restaurant_name"]) == "rule"
    assert jl.xsid_label("reminder/set_reminder", ["reminder/todo"]) == "not_rule"
    assert jl.xsid_label("weather/find", ["datetime", "location"]) == "not_rule"
    assert jl.xsid_label("alarm/cancel_alarm", ["datetime"]) == "not_rule"


def test_xsid_is_read_into_conversations_with_its_english_beside(data: Path) -> None:
    """Seven requests make one conversation; ``english`` reads their originals, labelled alike."""
    (conversation,) = jl.xsid(data / "xsid", "de")
    (english,) = jl.xsid(data / "xsid", "de", english=True)
    assert len(conversation.messages) == 14
    assert [r.label for r in conversation.rows] == [r.label for r in english.rows]
    assert [r.label for r in conversation.rows].count("rule") == 3
    assert conversation.rows[1].text == "Weck mich um sieben"
    assert conversation.rows[1].english == "Wake me at seven"
    assert english.rows[1].text == "Wake me at seven"
    assert conversation.rows[2].text == "Regnet es morgen?"  # xSID's space before "?" removed


def test_japanese_is_read_without_the_spaces_between_its_tokens() -> None:
    """Japanese tokens are joined as written; a space between two Latin words stays."""
    assert jl._unspaced("明日 の 7 時 に Taylor Swift を 再生") == "明日の7時にTaylor Swiftを再生"


def test_x_risawoz_sentences_are_mapped_by_the_turns_acts(data: Path) -> None:
    """A sentence holding an Informed value is a rule; one of a turn informing nothing is not."""
    (conversation,) = jl.risawoz(data / "x-risawoz", "fr", _Marker())
    labels = {r.text: r.label for r in conversation.rows}
    assert labels == {
        "Bonjour.": "unsure",
        "Je cherche un hôtel pas cher à Lyon.": "rule",
        "Quel est son numéro ?": "not_rule",
        "Il me faut une chambre double.": "rule",
        "A-t-il une chambre double ?": "unsure",
        "Merci, au revoir.": "not_rule",
    }
    assert (
        jl.risawoz_label("Vendredi.", [["Inform", "Weather", "date", "vendredi"]], ["Vendredi"])
        == "unsure"
    )


def test_the_figures_count_the_judges_labels_and_what_one_fold_keeps(data: Path) -> None:
    """Judged rule, binding and kept shares are counted over the rule rows the fold folded."""
    result, rows = jl.figures(data, _Marker())
    de = result["xsid/de"]
    assert de["rule_rows"] == 3
    assert de["judged_rule"] == 1.0
    assert de["not_rule_rows"] == 4
    assert de["not_rule_judged_rule"] == 0.0
    # The first request stays as the task message and the last in the tail: the three alarms
    # between them are folded, and a rule the judge reads binds in the header.
    assert de["folded_rule_rows"] == 3
    assert de["binds"] == 1.0
    assert de["lost"] == 0
    fr = result["x-risawoz/fr"]
    assert fr["rule_rows"] == 2
    assert fr["judged_rule"] == 0.5  # "pas cher" holds no marker: the judge says chatter
    assert len(rows["xsid/de"]) == 7
    assert "no data for ja" in jl.table(result)


def test_a_fold_says_whether_a_row_binds_is_kept_or_lost() -> None:
    """A binding item holding the row's words binds it; any other item keeps it; none loses it."""
    row = jl.Row("xsid", "de", "c", 2, "Weck mich um sieben", "rule", "")
    folding = jl.Fold(
        binding=("weck mich um sieben",), header=("weck mich um sieben",), folded=frozenset({2})
    )
    assert folding.outcome(row) == "binds"
    assert jl.Fold((), ("user weck mich um sieben",), frozenset({2})).outcome(row) == "kept"
    assert jl.Fold((), ("something else",), frozenset({2})).outcome(row) == "lost"
    assert jl.Fold((), (), frozenset({4})).outcome(row) is None


def test_a_question_about_a_named_object_is_no_rule() -> None:
    """A yes/no question about the object the turn names asks; it sets no requirement."""
    acts = [["Inform", "Hotel", "name", "Lakeside"], ["Inform", "Hotel", "room type", "family"]]
    assert jl.risawoz_label("Does the Lakeside have family rooms?", acts, ["family"]) == "unsure"
    assert jl.risawoz_label("Could you find one with family rooms?", acts[1:], ["family"]) == "rule"


def test_crosswoz_is_read_from_the_shared_data_folder(data: Path, tmp_path: Path) -> None:
    """CrossWOZ's user turns are mapped as X-RiSAWOZ's; a missing set names its file."""
    shared = tmp_path / "shared"
    (shared / "crosswoz").mkdir(parents=True)
    dialogue = {
        "messages": [
            {
                "role": "usr",
                "content": "帮我找一家评分4分以上的餐馆。",
                "dialog_act": [
                    ["Inform", "餐馆", "评分", "4分以上"],
                    ["Request", "餐馆", "名称", ""],
                ],
            },
            {"role": "sys", "content": "推荐您去小馆。", "dialog_act": []},
            {
                "role": "usr",
                "content": "谢谢再见。",
                "dialog_act": [["General", "bye", "none", "none"]],
            },
        ]
    }
    with zipfile.ZipFile(shared / "crosswoz" / "test.json.zip", "w") as archive:
        archive.writestr("test.json", json.dumps({"7": dialogue}, ensure_ascii=False))
    (conversation,) = jl.crosswoz(shared, _Marker())
    assert [(r.text, r.label) for r in conversation.rows] == [
        ("帮我找一家评分4分以上的餐馆。", "rule"),
        ("谢谢再见。", "not_rule"),
    ]
    assert [m["role"] for m in conversation.messages] == ["user", "assistant", "user"]
    assert ("crosswoz", "zh") in jl.load(data, _Marker(), shared)
    with pytest.raises(SystemExit, match=r"crosswoz/test\.json\.zip"):
        jl.load(data, _Marker(), tmp_path / "nowhere")
