"""Sentences by syntok: abbreviations, lists, code, markup, logs and fragments.

The module under test: progsum.judge._segment.
"""

from __future__ import annotations

import pytest

from progsum.judge._segment import is_machine_line, is_whole, pieces, sentences

SWE_NOTE = (
    "Note however that you cannot use any interactive session commands (e.g. python, vim) in "
    "this environment, but you can write scripts and run them. E.g. you can write a python "
    "script and then run it with `python <script_name>.py`."
)


def test_abbreviations_do_not_end_a_sentence() -> None:
    """Abbreviations (e.g., Dr., J.K., p.m., Jan.) stay inside their sentence."""
    assert sentences("I saw Dr. Smith today. He said J.K. Rowling lives nearby.") == (
        "I saw Dr. Smith today.",
        "He said J.K. Rowling lives nearby.",
    )
    assert sentences("The meeting is at 3 p.m. on Jan. 5. Please don't be late!") == (
        "The meeting is at 3 p.m. on Jan. 5.",
        "Please don't be late!",
    )


def test_the_swe_agent_note_is_never_cut_at_e_g() -> None:
    """The issue's "[C3] ... commands (e.g." fragment: the sentence is whole, or not at all."""
    found = sentences(SWE_NOTE)
    assert found[0].endswith("but you can write scripts and run them.")
    assert all(is_whole(sentence) for sentence in found)
    assert not any(sentence.endswith("(e.g.") for sentence in found)


def test_list_items_are_sentences_without_their_markers() -> None:
    """Numbered and bulleted list items are sentences of their own, the marker taken off."""
    text = "My options:\n1. Fly to Rome.\n2) Take the train to Milan.\n- Or stay home.\nWhich?"
    assert sentences(text) == (
        "Fly to Rome.",
        "Take the train to Milan.",
        "Or stay home.",
        "Which?",
    )


def test_code_blocks_tags_logs_and_traces_are_never_sentences() -> None:
    """Fenced code, markup tags, log lines and a stack trace give no sentence; prose around does."""
    text = (
        "Run this first.\n```python\nx = 1. y = 2.\nprint(x)\n```\n"
        "<task-notification>\n<task-id>b0be39e</task-id>\n</task-notification>\n"
        "2026-11-30 12:00:01 INFO server started.\n[ERROR] disk full.\n"
        'Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n'
        "ValueError: bad value.\nThen tell me the output."
    )
    assert sentences(text) == ("Run this first.", "Then tell me the output.")


@pytest.mark.parametrize(
    "line",
    [
        "    return x + 1",
        "$ pytest -q tests/",
        "def main() -> None:",
        "import os",
        "}",
        "config = {'a': [1, 2], 'b': (3, 4)}",
        "<status>completed</status>",
        "  at com.example.Main(Main.java:12)",
        "KeyError: 'name'",
    ],
)
def test_machine_lines(line: str) -> None:
    """Code, markup, log and trace lines are recognised as machine text."""
    assert is_machine_line(line)


@pytest.mark.parametrize(
    "line",
    [
        "I have 2 dogs and a cat.",
        "My budget is $3,000 (flights included).",
        "Let's meet at 10:30 on Friday.",
        "1 + 1 = 2",
    ],
)
def test_prose_lines(line: str) -> None:
    """Ordinary prose, with values and brackets, is not machine text."""
    assert not is_machine_line(line)


@pytest.mark.parametrize(
    "sentence",
    [
        "Run this:",
        "It uses (e.g.",
        'He said "go',
        "Call `make",
        "Stop [now",
        "i decided to learn spanish to",
        "I could teach you how to",
        "so I have to take over during the days to :)",
    ],
)
def test_fragments_are_not_whole(sentence: str) -> None:
    """Unbalanced brackets, quotes or backticks, a trailing colon or a cut-off end: a fragment."""
    assert not is_whole(sentence)


def test_pieces_keep_every_piece_for_the_ledger() -> None:
    """The ledger's split keeps code, tags and fragments: a value there is still the user's."""
    text = "Use /data/000000 only.\n```\nexport TOKEN=abc123\n```\n<id>W-1042</id>"
    assert "export TOKEN=abc123" in pieces(text)
    assert "<id>W-1042</id>" in pieces(text)
    assert "export TOKEN=abc123" not in sentences(text)


@pytest.mark.parametrize(
    "sentence",
    [
        "I think I'll be done in 2 days tops :)",
        "Got the job ;-) finally (at last).",
        "Oh no :( again.",
        "I will be done in two days =)",
        "Saw them live last night :))",
    ],
)
def test_a_smiley_leaves_no_bracket_open(sentence: str) -> None:
    """A standalone smiley's bracket pairs with nothing: the sentence is still whole."""
    assert is_whole(sentence)
    assert not is_whole(sentence + " (see")  # a real bracket left open still is not


def test_a_numbered_list_marker_is_no_sentence_or_piece() -> None:
    """A numbering between two items is no piece; a message that is only "4." is an answer."""
    assert sentences("1. Book the hotel. 2. Pay $300.") == ("Book the hotel.", "Pay $300.")
    assert pieces("1. Book the hotel. 2. Pay $300.") == ("Book the hotel.", "Pay $300.")
    assert pieces("0. AA") == ("AA",)
    assert pieces("4.") == ("4.",)
    assert pieces("I have 3. Yes") == ("I have 3.", "Yes")
