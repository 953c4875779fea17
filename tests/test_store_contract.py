"""One store contract: MemoryArchive, SQLite and PostgreSQL answer the same input the same way.

The same bad input raises the same error (a thread id that is blank, not a string, too long, or
holds a NUL or a lone surrogate; search text with a lone surrogate; a negative limit), the same
odd but valid input is stored and read back alike, and `search` folds case one way everywhere:
Unicode NFKC, then Python's ``str.casefold`` (so "Straße" finds "STRASSE", the "fi" ligature
finds "FILE", final sigma finds sigma). The expected answers below are written out by hand, not
computed by the store's own folding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from progsum import ConfigError, ConversationState
from progsum.state._events import CompactionEvent
from progsum.store._archive import MemoryArchive
from progsum.testing import FIXED_TIME
from tests.store_backends import BACKENDS, Store, make_backend

ALL = ["memory", *BACKENDS]

EVENT = CompactionEvent(
    number=1,
    outcome="compacted",
    at=FIXED_TIME,
    reason="a test fold",
    tokens_before=100,
    tokens_after=50,
    method="estimated",
    folded=(0, 1),
)
"""The compaction event the archive writes file their segments under."""


@pytest.fixture(params=ALL)
def archive(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store | MemoryArchive]:
    """An empty MemoryArchive, SQLite store or PostgreSQL store."""
    if request.param == "memory":
        yield MemoryArchive()
        return
    with make_backend(request, tmp_path).open() as store:
        yield store


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """An empty SQLite or PostgreSQL store."""
    with make_backend(request, tmp_path).open() as opened:
        yield opened


BAD_IDS = {
    "NUL": "support\x004821",
    "lone surrogate": "support-\ud83d",
    "too long": "t" * 501,
    "blank": "  ",
    "empty": "",
    "not a string": 4821,
}
"""Thread ids no store accepts, by what is wrong with them."""

GOOD_IDS = ["a\nb", "ß-🚀", "t" * 500, "ü" * 500, "🚀" * 500, "support 4821", "İ"]
"""Odd thread ids every store keeps: any text of at most 500 characters that UTF-8 can hold."""


def archive_calls(archive: Store | MemoryArchive, bad: Any) -> dict[str, Callable[[], object]]:
    """Every Archive method, called with thread id ``bad``."""
    return {
        "put": lambda: archive.put(bad, 0, [{"role": "user", "content": "hi"}], EVENT),
        "get": lambda: archive.get(bad),
        "search": lambda: archive.search(bad, "hi"),
        "events": lambda: archive.events(bad),
    }


@pytest.mark.parametrize("bad", list(BAD_IDS.values()), ids=list(BAD_IDS))
def test_every_backend_refuses_the_same_thread_ids(
    archive: Store | MemoryArchive, bad: object
) -> None:
    """Each Archive method of each backend raises ConfigError naming the id and a valid one."""
    for name, call in archive_calls(archive, bad).items():
        with pytest.raises(ConfigError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"thread_id={bad!r} "), (name, message)
        assert "e.g. 'support-4821'" in message, (name, message)


@pytest.mark.parametrize("reason", ["NUL", "lone surrogate", "too long"])
def test_saved_states_refuse_the_same_thread_ids(store: Store, reason: str) -> None:
    """save, load, update and export of a thread id no store can hold: ConfigError, nothing kept."""
    bad = BAD_IDS[reason]
    assert isinstance(bad, str)
    state = ConversationState([{"role": "user", "content": "hi"}], thread_id=bad)
    calls: dict[str, Callable[[], object]] = {
        "save": lambda: store.save(state, expected_version=None),
        "load": lambda: store.load(bad),
        "update": lambda: store.update(bad, lambda s: s),
        "export": lambda: store.export_markdown(bad),
    }
    for name, call in calls.items():
        with pytest.raises(ConfigError, match=r"^thread_id=") as caught:
            call()
        assert "e.g. 'support-4821'" in str(caught.value), name
    assert store.threads() == []


@pytest.mark.parametrize("reason", ["NUL", "lone surrogate", "too long"])
def test_the_refusal_says_what_is_wrong(archive: Store | MemoryArchive, reason: str) -> None:
    """The message names what no store can hold: the NUL, the surrogate, the length."""
    expected = {
        "NUL": r"holds a NUL character \(U\+0000\) at position 7",
        "lone surrogate": r"holds a lone surrogate \(U\+D83D\) at position 8",
        "too long": r"has 501 characters, more than the 500",
    }[reason]
    bad = BAD_IDS[reason]
    assert isinstance(bad, str)
    with pytest.raises(ConfigError, match=expected):
        archive.get(bad)


@pytest.mark.parametrize("thread_id", GOOD_IDS, ids=range(len(GOOD_IDS)))
def test_odd_thread_ids_are_kept_by_every_backend(
    archive: Store | MemoryArchive, thread_id: str
) -> None:
    """Newlines, emoji, 500 characters of four UTF-8 bytes: stored and read back everywhere."""
    message = {"role": "user", "content": "hi"}
    archive.put(thread_id, 0, [message], EVENT)
    assert [e.message for e in archive.get(thread_id)] == [message]
    assert [e.index for e in archive.search(thread_id, "HI")] == [0]
    if not isinstance(archive, MemoryArchive):
        state = ConversationState([message], thread_id=thread_id)
        assert archive.save(state, expected_version=None) == 1
        assert archive.load(thread_id).state.log[0] == message


def test_search_text_with_a_lone_surrogate_is_refused(archive: Store | MemoryArchive) -> None:
    """A lone surrogate cannot be stored, so no backend can find it: ConfigError everywhere."""
    archive.put("t", 0, [{"role": "user", "content": "hi"}], EVENT)
    with pytest.raises(ConfigError, match=r"text='cut \\ud83d' holds a lone surrogate"):
        archive.search("t", "cut \ud83d")


def test_search_limits(archive: Store | MemoryArchive) -> None:
    """limit=0 finds nothing; a negative limit is refused; a NUL in the text finds nothing."""
    archive.put("t", 0, [{"role": "user", "content": f"hi {n}"} for n in range(3)], EVENT)
    assert [e.index for e in archive.search("t", "hi", limit=2)] == [0, 1]
    assert archive.search("t", "hi", limit=0) == []
    with pytest.raises(ConfigError, match=r"limit=-1 must be 0 or more"):
        archive.search("t", "hi", limit=-1)
    assert archive.search("t", "hi\x00") == []  # JSON writes a NUL as \u0000


MESSAGES = [
    "Meet at Straße 12",
    "STRASSE 12 is closed",
    "the \ufb01le is ready",  # the fi ligature
    "the FILE was sent",
    "ΣΊΣΥΦΟΣ rolled the stone",
    "σίσυφος again",
    "İstanbul trip",
    "ISTANBUL flight",
    "E\u0301CLAIR (decomposed)",
    "\uff26\uff35\uff2c\uff2c width",  # fullwidth FULL
]
"""Archived texts (log indexes 0-9) that differ from the queries only in case or in form."""

FOLDED = {
    "STRASSE": [0, 1],
    "Straße": [0, 1],
    "\ufb01le": [2, 3],
    "FILE": [2, 3],
    "ΣΊΣΥΦΟΣ": [4, 5],
    "σίσυφος": [4, 5],
    "İstanbul": [6],  # casefold keeps the dot: i + U+0307
    "istanbul": [7],
    "\u00e9clair": [8],  # precomposed é finds the decomposed É
    "\uff46\uff55\uff4c\uff4c": [9],  # fullwidth full
}
"""What each query finds under NFKC, then ``str.casefold`` (written out by hand)."""


def test_search_folds_case_one_way_on_every_backend(archive: Store | MemoryArchive) -> None:
    """Every backend answers the case and compatibility variants of a query alike."""
    archive.put("t", 0, [{"role": "user", "content": text} for text in MESSAGES], EVENT)
    found = {query: [e.index for e in archive.search("t", query)] for query in FOLDED}
    assert found == FOLDED


def test_odd_message_text_round_trips_and_is_found(archive: Store | MemoryArchive) -> None:
    """A NUL, a lone surrogate and a backslash in a message: kept, found by the text around them."""
    message = {"role": "user", "content": "cut \ud83d here \x00 nul \\ back"}
    archive.put("t", 0, [message], EVENT)
    assert [e.message for e in archive.get("t")] == [message]
    assert [e.index for e in archive.search("t", "HERE")] == [0]
    assert [e.index for e in archive.search("t", "\\u0000 nul")] == [0]  # the JSON text
