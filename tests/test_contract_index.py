"""The contract's index of a fold against scans of every message, and the value reading shared."""

from __future__ import annotations

import re
from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from progsum.contract._support import Said, Shown, states, words
from progsum.judge._values import (
    _unit,
    carried,
    exact_values,
    stated_values,
    value_key,
    value_keys,
)

_TOKENS = [
    "5-day", "5", "days", "day", "3", "nights", "night", "3-night", "2027-05-08", "2027-05-8",
    "HX-01911", "HX-0191", "HX-01911);", "(ref", "$3,000", "$3", "$3,000.", "TP1234", "TP123",
    "12", "Rua", "Augusta", "-5", "5-", "x@y.com", "a/b.txt", "./run.sh", "10.5", "1,000", "km",
    "hours", "hotel", "quiet", "river", "book", "May", "2027", "\u201c$3\u201d", "v1.2.3", "_id",
]  # fmt: skip
_SPACES = [" ", " ", " ", "\n", "\t", "  ", "\u00a0", "\u2028", " \n "]

_TEXT = st.lists(st.tuples(st.sampled_from(_TOKENS), st.sampled_from(_SPACES)), max_size=14).map(
    lambda pairs: "".join(token + space for token, space in pairs)
)
_MESSAGE = st.tuples(
    st.sampled_from(["user", "assistant", "tool"]),
    _TEXT,
    st.sampled_from([None, "Caroline", "Speaker 2"]),
    st.sampled_from([None, date(2027, 5, 8), date(2023, 6, 9)]),
)


def _said(messages: list[tuple[str, str, str | None, date | None]]) -> list[Said]:
    found = []
    for at, (author, text, name, day) in enumerate(messages):
        role = "assistant" if author == "assistant" else "user"
        message = {"role": role, "content": text, **({"name": name} if name else {})}
        found.append(Said(at, author, message, day))  # type: ignore[arg-type]
    return found


def _values(texts: list[str]) -> list[str]:
    """Values to ask about: those the texts state, their keys, and every token alone."""
    found = [*_TOKENS, "5 day", "3 night", "3 nights", "5 days", ""]
    for text in texts:
        found += [*stated_values(text), *value_keys(text)]
    return found


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(_MESSAGE, max_size=8))
def test_a_message_shows_a_value_exactly_when_its_keys_carry_it(
    messages: list[tuple[str, str, str | None, date | None]],
) -> None:
    """The substring test before a message's values are read never decides: the keys do."""
    said = _said(messages)
    for value in _values([text for _, text, _, _ in messages]):
        for s in said:
            assert s.shows_value(value) == carried(value, s.known)
            assert s.states_value(value) == carried(value, s.keys)


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(_MESSAGE, max_size=8), cited=st.sets(st.integers(0, 7)))
def test_the_index_of_a_fold_answers_as_a_scan_of_its_messages(
    messages: list[tuple[str, str, str | None, date | None]], cited: set[int]
) -> None:
    """`Shown.shows` and `Shown.stating` give what asking every message would, in order."""
    said = _said(messages)
    shown = Shown(said)
    texts = [text for _, text, _, _ in messages]
    among = [s for s in said if s.at in cited] or said
    for value in _values(texts):
        assert shown.shows(value) == any(s.shows_value(value) for s in said)
        assert shown.showing(value) == tuple(
            s for s in said if s.shows_value(value) or _anchored(value, s)
        )
    for text in texts:
        item_keys = stated_values(text)
        item_words = words(text)
        for subset in (said, among):
            assert shown.stating(item_keys, item_words, subset) == [
                s for s in subset if states(item_keys, item_words, s)
            ]


def _anchored(value: str, said: Said) -> bool:
    """Whether the message holds the part of ``value`` every carrier of it holds (a scan)."""
    whole = not re.search(r"\s", value) and value_key(value) == value
    anchor = value if whole else re.split(r"[\s-]", value, maxsplit=1)[0]
    return anchor in said.shown or anchor in said.stamp


_TRIM = "\"'`()[]{}<>,;:!?*\u201c\u201d\u2018\u2019"
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _scanned(text: str) -> tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]:
    """`exact_values`, `value_keys` and `stated_values` as one scan of every token reads them."""
    tokens = text.split()
    exact: dict[str, None] = {}
    keys: set[str] = set()
    stated: dict[str, None] = {}
    for i, raw in enumerate(tokens):
        token = raw.lstrip(_TRIM).rstrip(_TRIM + ".")
        if not token or not exact_values(f" {token} "):
            continue
        exact.setdefault(token)
        keys.update((token, value_key(token)))
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        unit = _unit(following) if following and _NUMBER.fullmatch(token) else None
        if unit is None:
            stated.setdefault(token)
        else:
            keys.add(f"{token} {unit}")
            stated.setdefault(f"{token} {following.strip(_TRIM + '.')}")
    return tuple(exact), frozenset(keys), tuple(stated)


@settings(max_examples=500, deadline=None)
@given(text=_TEXT)
def test_the_three_value_readings_share_one_reading_of_the_tokens(text: str) -> None:
    """Each value reading gives what a scan of every whitespace-separated token gives."""
    assert (exact_values(text), value_keys(text), stated_values(text)) == _scanned(text)
