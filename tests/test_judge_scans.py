"""The shortcuts of the segmenter and the date stamps against the plain scans they stand for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from progsum.judge import _dates as dates
from progsum.judge import _segment as segment
from progsum.judge._lexicon import words

_PIECES = [
    ":)", ":-(", ";)", "=)", ":/", "<3", "^_^", ":D", "09:43", "https://x.io", "a=b", "x;", "(",
    ")", "[", "]", "{", "}", '"', "`", "<a>", "</b x>", "<3 >", "the", "to", "Fine.", "ok:",
    "\u00e9", "\u2014", "$", "#", "_", "\\", "/", "*", "~", "^", "&", "+", "|", "@",
]  # fmt: skip
_SPACES = ["", " ", " ", "  ", "\t", "\u00a0", "\u3000", "\n"]
_TEXT = st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(_SPACES)), max_size=16).map(
    lambda pairs: "".join(piece + space for piece, space in pairs)
)
_SYMBOLS = "{}[]()<>=;$|\\/_*#@`~^&+"


def _whole(sentence: str) -> bool:
    """`segment.is_whole` as a scan: every emoticon replaced, every count taken."""
    if ":" in sentence or ";" in sentence or "=" in sentence:
        sentence = segment.EMOTICON.sub(" ", sentence).rstrip()
    if sentence.endswith(":") or sentence.count("`") % 2 or sentence.count('"') % 2:
        return False
    if segment._TAG.search(sentence):
        return False
    if segment._last_word(sentence).lower() in words("sentences.dangling"):
        return False
    return all(sentence.count(a) == sentence.count(b) for a, b in ("()", "[]", "{}"))


@settings(max_examples=1_000, deadline=None)
@given(text=_TEXT)
def test_a_whole_sentence_is_judged_as_a_scan_of_it_would(text: str) -> None:
    """Emoticons looked for only where a token opens with one, brackets counted unrolled."""
    assert segment.is_whole(text) == _whole(text)


@settings(max_examples=1_000, deadline=None)
@given(text=_TEXT.filter(lambda text: "\n" not in text))
def test_a_line_of_symbols_is_counted_as_a_scan_of_its_characters_would(text: str) -> None:
    """The code symbols of a line counted in its UTF-8 bytes are its symbol characters."""
    stripped = text.strip()
    share = sum(c in _SYMBOLS for c in stripped) / len(stripped) if stripped else 0
    machine = (
        bool(segment._TAG.match(text.lstrip()))
        or bool(segment._code().match(text))
        or bool(segment._log().match(text))
        or stripped.endswith(("{", "}", ";"))
        or (len(stripped) >= 12 and share >= 0.2)
    )
    assert segment.is_machine_line(text) == machine


_STAMPED = st.lists(
    st.sampled_from(
        ["", " ", "\t", "\n", "\u00a0", "\ufeff", "[", "(", "{", "]", ")", "}", "9 June", "2023",
         "2023-06-09", "7:55 pm on", "Hey", "x"]
    ),
    max_size=8,
).map("".join)  # fmt: skip


@settings(max_examples=1_000, deadline=None)
@given(text=_STAMPED)
def test_a_date_stamp_is_looked_for_only_where_a_text_can_open_with_one(text: str) -> None:
    """A text not opening with a bracket or a space is given no day, as the stamp's regex gives."""
    found = dates._stamp(text[: dates._LOOKED_AT])
    if found is not None:
        later = text[found[1] : dates._OPENING].split("\n")[1:]
        if any(dates._stamp(line[: dates._LOOKED_AT]) is not None for line in later):
            found = None
    assert dates.leading_day(text) == (found[0] if found else None)
