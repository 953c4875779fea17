"""A save whose answer is lost: the store finds out whether it committed, and a retry is a no-op.

A TCP proxy on 127.0.0.1 (tests/postgres.py's `AnswerLosingProxy`) stands between the store and
the test server and cuts the connection at the COMMIT: after the server committed, before the
answer reaches the client; or before the COMMIT reaches the server. The store must then tell
"committed" (the save returns), "not committed" and "unknown, retry is safe" apart, and the retry
the error asks for must never store a turn twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from progsum import ConversationState, Summary
from progsum.errors import ArchiveError, ConflictError
from progsum.store._outcome import KEEP, PRUNE_EVERY
from progsum.store._postgres import PostgresStore
from tests.postgres import AnswerLosingProxy, PostgresServer

CUTS = 20
"""Saves whose answer the proxy loses in the update loop (as in the fault run of issue 27)."""


@pytest.fixture
def proxy(postgres_server: PostgresServer) -> Iterator[AnswerLosingProxy]:
    """The answer-losing proxy in front of the test server."""
    found = AnswerLosingProxy(postgres_server)
    yield found
    found.close()


@pytest.fixture
def proxied(proxy: AnswerLosingProxy, postgres_url: str) -> Iterator[PostgresStore]:
    """A store on the test database, reached through the proxy, with a thread of one message."""
    store = PostgresStore(proxy.url(postgres_url), max_size=2, timeout=5)
    store.save(ConversationState([turn_text("start")], thread_id="t"), expected_version=None)
    yield store
    store.close()


def turn_text(tag: str) -> dict[str, Any]:
    """A user message naming ``tag``."""
    return {"role": "user", "content": f"turn {tag}"}


def turn(state: ConversationState[Summary], tag: str) -> ConversationState[Summary]:
    """One turn: a user message and the assistant's reply, both naming ``tag``."""
    return state.extend([turn_text(tag), {"role": "assistant", "content": f"reply {tag}"}])


def contents(store: PostgresStore, thread_id: str = "t") -> list[str]:
    """The thread's messages' contents, as stored."""
    return [m["content"] for m in store.load(thread_id).state.log]


def update_retrying(store: PostgresStore, tag: str) -> int:
    """``store.update`` with the retry every failed save asks for; return the failures."""
    failures = 0
    while True:
        try:
            store.update("t", partial(turn, tag=tag))
        except ArchiveError:
            failures += 1
            if failures > 5:  # the proxy cuts once per arming
                raise
        else:
            return failures


def test_a_lost_answer_to_a_commit_is_found_committed_and_not_retried(
    proxied: PostgresStore, proxy: AnswerLosingProxy, caplog: pytest.LogCaptureFixture
) -> None:
    """20 updates whose COMMIT answer is lost: each returns (it committed), no turn twice."""
    expected = ["turn start"]
    raised = 0
    with caplog.at_level(logging.WARNING, logger="progsum.store"):
        for n in range(CUTS):
            cut = proxy.lose_commit_answer()
            raised += update_retrying(proxied, str(n))
            assert cut.is_set()
            expected += [f"turn {n}", f"reply {n}"]
    assert proxy.cuts == CUTS
    stored = proxied.load("t")
    assert (stored.version, len(contents(proxied))) == (1 + CUTS, len(expected))
    assert contents(proxied) == expected
    assert raised == 0
    found = [r.getMessage() for r in caplog.records if "was lost" in r.getMessage()]
    assert len(found) == CUTS
    assert found[0] == (
        "the answer to the COMMIT of the save of thread 't' (version 1 to 2) was lost; the "
        "database says it committed, so the save returns version 2"
    )


def test_a_retried_save_that_committed_is_a_no_op(
    proxied: PostgresStore, proxy: AnswerLosingProxy
) -> None:
    """save() again with the same state and version after it committed: the same version back."""
    stored = proxied.load("t")
    new = turn(stored.state, "a")
    proxy.lose_commit_answer()
    assert proxied.save(new, expected_version=1) == 2
    assert proxied.save(new, expected_version=1) == 2  # the caller's retry: recognised
    assert contents(proxied) == ["turn start", "turn a", "reply a"]
    with pytest.raises(ConflictError):  # another state on the same version is still a conflict
        proxied.save(turn(stored.state, "b"), expected_version=1)
    assert proxied.save(turn(new, "b"), expected_version=2) == 3
    assert proxied.save(new, expected_version=1) == 2  # still recognised after a later save


def test_a_commit_that_never_reached_the_server_says_not_committed(
    proxied: PostgresStore, proxy: AnswerLosingProxy
) -> None:
    """The connection cut before the COMMIT: an error saying so, nothing stored, retry once."""
    proxy.drop_commit()
    with pytest.raises(ArchiveError) as caught:
        proxied.update("t", partial(turn, tag="a"))
    message = str(caught.value)
    assert message.startswith("could not save thread 't' in PostgreSQL database ")
    assert "; it was not committed (the database says so), so nothing was changed: retry" in message
    assert contents(proxied) == ["turn start"]
    proxied.update("t", partial(turn, tag="a"))
    assert contents(proxied) == ["turn start", "turn a", "reply a"]


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "not-committed"])
def test_an_unknown_outcome_says_retry_is_safe_and_the_retry_is(
    proxied: PostgresStore, proxy: AnswerLosingProxy, committed: bool
) -> None:
    """The database unreachable after the cut: "unknown, retry is safe"; the retry stores once."""
    proxied.timeout = 1  # how long the store tries to find out
    if committed:
        proxy.lose_commit_answer(then_refuse=True)
    else:
        proxy.drop_commit(then_refuse=True)
    with pytest.raises(ArchiveError) as caught:
        proxied.update("t", partial(turn, tag="a"))
    message = str(caught.value)
    assert message.startswith("could not save thread 't' in PostgreSQL database ")
    assert message.endswith(
        "; the answer to its COMMIT was lost and whether it committed is unknown (the database "
        "could not be asked within 1 s); retry is safe: the store recognises the save by its "
        "versions (1 to 2), so retrying this update or this save is a no-op if it committed"
    )
    proxy.refusing = False
    proxied.timeout = 10  # the pool reconnects with a backoff of a second or more
    proxied.update("t", partial(turn, tag="a"))  # the retry
    assert contents(proxied) == ["turn start", "turn a", "reply a"]
    assert proxied.load("t").version == 2
    proxied.update("t", partial(turn, tag="b"))  # the next update is applied again
    assert contents(proxied)[-2:] == ["turn b", "reply b"]


def test_a_retry_after_the_ledger_forgot_the_save_finds_its_messages_and_stores_once(
    proxied: PostgresStore, proxy: AnswerLosingProxy, postgres_url: str
) -> None:
    """A save whose outcome was unknown, then more than `KEEP` saves by another writer.

    Those saves prune the save's ledger row, so the ledger cannot answer the retry any more;
    the log can: the save's messages stand where it wrote them, so it committed, and the
    retry returns instead of storing the turn a second time.
    """
    proxied.timeout = 1
    proxy.lose_commit_answer(then_refuse=True)
    with pytest.raises(ArchiveError, match="whether it committed is unknown"):
        proxied.update("t", partial(turn, tag="a"))
    with PostgresStore(postgres_url) as other:  # another worker, not behind the proxy
        for n in range(KEEP + PRUNE_EVERY):
            other.update("t", partial(turn, tag=f"other {n}"))
    proxy.refusing = False
    proxied.timeout = 10  # the pool reconnects with a backoff of a second or more
    proxied.update("t", partial(turn, tag="a"))  # the retry the error asked for
    assert contents(proxied).count("turn a") == 1
    assert contents(proxied)[1:3] == ["turn a", "reply a"]
