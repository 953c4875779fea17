"""Bad input at every public entry point: a progsum error naming the value and the fix.

The entry points are those of `progsum.__all__` and the stores'. Each row of a table below is a
call with one bad argument, the error class it must raise and words its message must hold: the
bad value (or what is wrong with it) and what to do instead. A raw ``TypeError`` or
``AttributeError`` from deep inside fails the row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from progsum import (
    Compactor,
    ConfigError,
    ConversationState,
    Policy,
    ProgsumError,
    Summary,
    SummaryUpdate,
    amaybe_compact,
    load_schema,
    maybe_compact,
    render_anthropic,
    render_openai,
    summary_field,
)
from progsum.errors import ArchiveError
from progsum.render._responses import render_responses
from progsum.state._events import CompactionEvent
from progsum.store._archive import MemoryArchive
from progsum.store._sqlite import SQLiteStore
from progsum.summarizers import ExtractiveSummarizer
from progsum.testing import FIXED_TIME
from tests.store_backends import BACKENDS, Backend, Store, make_backend

MESSAGES = [
    {"role": "user", "content": "Plan a trip to Lisbon."},
    {"role": "assistant", "content": "Gladly."},
]
STATE = ConversationState(MESSAGES, thread_id="lisbon")
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

Call = Callable[[], object]


def compactor() -> Compactor:
    """An offline compactor."""
    return Compactor(policy=Policy(context_window=8_000), summarizer=ExtractiveSummarizer())


# -- a value that is not a ConversationState ------------------------------------------------------

NOT_STATES: dict[str, object] = {
    "None": None,
    "messages": MESSAGES,
    "text": "Plan a trip to Lisbon.",
    "message": MESSAGES[0],
    "number": 5,
}
"""What a caller passes by mistake where a state belongs."""

STATE_CALLS: dict[str, Callable[[Any], object]] = {
    "maybe_compact": lambda bad: compactor().maybe_compact(bad),
    "amaybe_compact": lambda bad: asyncio.run(compactor().amaybe_compact(bad)),
    "compact": lambda bad: compactor().compact(bad, force=True),
    "acompact": lambda bad: asyncio.run(compactor().acompact(bad, force=True)),
    "decide": lambda bad: compactor().decide(bad),
    "count": lambda bad: compactor().count(bad),
    "sizes": lambda bad: compactor().sizes(bad),
    "overflow": lambda bad: compactor().overflow(bad),
    "repair": lambda bad: compactor().repair(bad),
    "arepair": lambda bad: asyncio.run(compactor().arepair(bad)),
    "progsum.maybe_compact": lambda bad: maybe_compact(bad, 8_000),
    "progsum.amaybe_compact": lambda bad: asyncio.run(amaybe_compact(bad, 8_000)),
    "render_anthropic": render_anthropic,
    "render_openai": render_openai,
    "render_responses": render_responses,
    "SQLiteStore.save": lambda bad: SQLiteStore(":memory:").save(bad, expected_version=None),
}
"""Every public call that takes a state, with the bad value as its state."""


@pytest.mark.parametrize("bad", NOT_STATES)
@pytest.mark.parametrize("call", STATE_CALLS)
def test_a_value_that_is_not_a_state_is_refused(call: str, bad: str) -> None:
    """ConfigError 'state=... is a list, not a ConversationState; ...', never AttributeError."""
    value = NOT_STATES[bad]
    with pytest.raises(ConfigError) as caught:
        STATE_CALLS[call](value)
    message = str(caught.value)
    shown = repr(value) if not isinstance(value, list | dict) else "{'content': 'Plan a trip"
    assert message.startswith("state="), message
    assert shown[:20] in message, message
    assert f"is a {type(value).__name__}, not a ConversationState" in message
    assert "ConversationState(messages)" in message


def test_a_long_bad_value_is_shortened_in_the_message() -> None:
    """A list of 10,000 messages passed as the state is named in a line, not dumped whole."""
    with pytest.raises(ConfigError) as caught:
        compactor().maybe_compact(MESSAGES * 5_000)  # type: ignore[arg-type]
    assert len(str(caught.value)) < 400


# -- one bad argument at a time -------------------------------------------------------------------

BAD: dict[str, tuple[Call, type[ProgsumError], tuple[str, ...]]] = {
    "ConversationState(None)": (
        lambda: ConversationState(None),  # type: ignore[arg-type]
        ConfigError,
        ("messages=None", "list of messages"),
    ),
    "ConversationState(5)": (
        lambda: ConversationState(5),  # type: ignore[arg-type]
        ConfigError,
        ("messages=5", "list of messages"),
    ),
    "ConversationState(authors=5)": (
        lambda: ConversationState(MESSAGES, authors=5),  # type: ignore[arg-type]
        ConfigError,
        ("authors=5", "'user', 'assistant' or 'tool'"),
    ),
    "state.extend(None)": (
        lambda: STATE.extend(None),  # type: ignore[arg-type]
        ConfigError,
        ("messages=None", "list of messages"),
    ),
    "usage with a non-number": (
        lambda: STATE.append(MESSAGES[0], usage={"input_tokens": "many"}),
        ConfigError,
        ("input_tokens='many'", "response.usage"),
    ),
    "from_json(not JSON)": (
        lambda: ConversationState.from_json("nope"),
        ConfigError,
        ("not JSON", "ConversationState.to_json()"),
    ),
    "from_json(None)": (
        lambda: ConversationState.from_json(None),  # type: ignore[arg-type]
        ConfigError,
        ("text=None", "ConversationState.to_json()"),
    ),
    "from_json(cutoff='x')": (
        lambda: ConversationState.from_json('{"progsum_state": 1, "log": [], "cutoff": "x"}'),
        ConfigError,
        ("cutoff='x'", "damaged"),
    ),
    "Compactor(counter=5)": (
        lambda: Compactor(policy=Policy(context_window=8_000), counter=5),  # type: ignore[arg-type]
        ConfigError,
        ("counter=5", "count_message", "HeuristicCounter"),
    ),
    "Compactor(clock=5)": (
        lambda: Compactor(policy=Policy(context_window=8_000), clock=5),  # type: ignore[arg-type]
        ConfigError,
        ("clock=5", "datetime.now(UTC)"),
    ),
    "Compactor(prose_tags=5)": (
        lambda: Compactor(policy=Policy(context_window=8_000), prose_tags=5),  # type: ignore[arg-type]
        ConfigError,
        ("prose_tags=5", "['user_query']"),
    ),
    "maybe_compact(counter=5)": (
        lambda: maybe_compact(STATE, 8_000, counter=5),  # type: ignore[arg-type]
        ConfigError,
        ("counter=5", "count_message"),
    ),
    "Policy(safety_margin='x')": (
        lambda: Policy(context_window=8_000, safety_margin="x"),  # type: ignore[arg-type]
        ConfigError,
        ("safety_margin='x'", "1.3"),
    ),
    "Policy(model=5)": (
        lambda: Policy(model=5),  # type: ignore[arg-type]
        ConfigError,
        ("model=5", "'claude-sonnet-5-5'"),
    ),
    "Policy(keep_first='x')": (
        lambda: Policy(context_window=8_000, keep_first="x"),  # type: ignore[arg-type]
        ConfigError,
        ("keep_first='x'", "True or False"),
    ),
    "load_schema(None)": (
        lambda: load_schema(None),  # type: ignore[arg-type]
        ConfigError,
        ("load_schema(None)", "coding-agent", ".toml"),
    ),
    "load_schema(5)": (
        lambda: load_schema(5),  # type: ignore[arg-type]
        ConfigError,
        ("load_schema(5)", ".toml"),
    ),
    "summary_field(label=5)": (
        lambda: summary_field(5, "Files the agent touched."),  # type: ignore[arg-type]
        ConfigError,
        ("label=5", "'Files touched'"),
    ),
    "summary_field(description=None)": (
        lambda: summary_field("Files touched", None),  # type: ignore[arg-type]
        ConfigError,
        ("description=None", "what belongs in the field"),
    ),
    "SummaryUpdate(add=5)": (
        lambda: SummaryUpdate(add=5),
        ConfigError,
        ("SummaryUpdate", "add: ", "got 5", "add={'constraints': ["),
    ),
    "SummaryUpdate(add a string)": (
        lambda: SummaryUpdate(add={"constraints": "Never fly before 9am."}),
        ConfigError,
        ("add.constraints: ", "got 'Never fly before 9am.'", "add={'constraints': ["),
    ),
    "Summary(constraints=5)": (
        lambda: Summary(constraints=5),
        ConfigError,
        ("Summary", "constraints: ", "got 5", "Item(id="),
    ),
    "render_anthropic(system=5)": (
        lambda: render_anthropic(STATE, system=5),  # type: ignore[arg-type]
        ConfigError,
        ("system=5", "a string or a list of content blocks"),
    ),
    "render_anthropic(system=[5])": (
        lambda: render_anthropic(STATE, system=[5]),  # type: ignore[list-item]
        ConfigError,
        ("system=[5]", "a string or a list of content blocks"),
    ),
    "render_openai(system=5)": (
        lambda: render_openai(STATE, system=5),  # type: ignore[arg-type]
        ConfigError,
        ("system=5", "a string"),
    ),
    "SQLiteStore(None)": (
        lambda: SQLiteStore(None),  # type: ignore[arg-type]
        ConfigError,
        ("path=None", "SQLiteStore('agents.db')"),
    ),
}
"""Calls with one bad argument: the error, and words its message must hold."""


@pytest.mark.parametrize("name", BAD)
def test_a_bad_argument_raises_a_progsum_error_naming_it(name: str) -> None:
    """The row's call raises its progsum error, naming the bad value and the fix."""
    call, error, words = BAD[name]
    with pytest.raises(ProgsumError) as caught:
        call()
    assert type(caught.value) is error, repr(caught.value)
    message = str(caught.value)
    for word in words:
        assert word in message, (word, message)


# -- the stores -----------------------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A SQLite file or a PostgreSQL database, holding thread 'lisbon' saved once."""
    found = make_backend(request, tmp_path)
    with found.open() as store:
        store.save(STATE, expected_version=None)
    return found


@pytest.fixture
def store(backend: Backend) -> Iterator[Store]:
    """A store on the backend."""
    with backend.open() as opened:
        yield opened


def store_calls(store: Store | MemoryArchive) -> dict[str, tuple[Call, tuple[str, ...]]]:
    """Store calls with one bad argument (ConfigError expected), with words the message holds."""
    calls: dict[str, tuple[Call, tuple[str, ...]]] = {
        "put(messages=None)": (
            lambda: store.put("lisbon", 0, None, EVENT),  # type: ignore[arg-type]
            ("messages=None", "list of the messages"),
        ),
        "put(messages='abc')": (
            lambda: store.put("lisbon", 0, "abc", EVENT),
            ("messages='abc'", "list of the messages"),
        ),
        "put(start='x')": (
            lambda: store.put("lisbon", "x", MESSAGES, EVENT),  # type: ignore[arg-type]
            ("start='x'", "log index"),
        ),
        "put(event=None)": (
            lambda: store.put("lisbon", 0, MESSAGES, None),  # type: ignore[arg-type]
            ("event=None", "CompactionEvent"),
        ),
        "get(start='a')": (
            lambda: store.get("lisbon", "a"),  # type: ignore[arg-type]
            ("start='a'", "log index"),
        ),
        "get(start=-1)": (lambda: store.get("lisbon", -1), ("start=-1", "log index")),
        "get(end='b')": (
            lambda: store.get("lisbon", 0, "b"),  # type: ignore[arg-type]
            ("end='b'", "None"),
        ),
        "get(5, 2)": (lambda: store.get("lisbon", 5, 2), ("end=2", "start=5")),
    }
    if isinstance(store, MemoryArchive):
        return calls
    return calls | {
        "save(expected_version='1')": (
            lambda: store.save(STATE, expected_version="1"),  # type: ignore[arg-type]
            ("expected_version='1'", "load()"),
        ),
        "save(expected_version=0)": (
            lambda: store.save(STATE, expected_version=0),
            ("expected_version=0", "load()"),
        ),
        "update(change=None)": (
            lambda: store.update("lisbon", None),  # type: ignore[arg-type]
            ("change=None", "lambda state:"),
        ),
        "aupdate(change=None)": (
            lambda: asyncio.run(store.aupdate("lisbon", None)),  # type: ignore[arg-type]
            ("change=None", "lambda state:"),
        ),
    }


def test_every_store_refuses_bad_arguments_naming_them(store: Store) -> None:
    """Each bad argument of each store method is a ConfigError naming it; nothing is written."""
    for name, (call, words) in store_calls(store).items():
        with pytest.raises(ConfigError) as caught:
            call()
        for word in words:
            assert word in str(caught.value), (name, word, str(caught.value))
    assert store.load("lisbon").version == 1
    assert store.get("lisbon") == []


def test_the_memory_archive_refuses_the_same_arguments() -> None:
    """MemoryArchive answers the same bad arguments with the same errors."""
    archive = MemoryArchive()
    for name, (call, words) in store_calls(archive).items():
        with pytest.raises(ConfigError) as caught:
            call()
        for word in words:
            assert word in str(caught.value), (name, word, str(caught.value))
    assert archive.threads() == []


DAMAGE = {
    "state is a number": ("states", "state", "12345", "is not a JSON object"),
    "state is a list": ("states", "state", "[1,2,3]", "is not a JSON object"),
    "state is null": ("states", "state", "null", "is not a JSON object"),
    "state is not JSON": ("states", "state", "{nope", "is not valid JSON"),
    "state without a format": ("states", "state", "{}", "not a progsum state"),
    "summary is a number": ("states", "state", '{"progsum_state": 1, "summary": 5}', "summary"),
    "message is a number": ("messages", "message", "12345", "message 0"),
    "message is not JSON": ("messages", "message", "{nope", "is not valid JSON"),
}
"""A stored row overwritten with valid JSON of the wrong shape, or with no JSON at all."""


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_row_is_an_archive_error_naming_the_thread(backend: Backend, damage: str) -> None:
    """Load and update of a thread with a damaged row: ArchiveError naming it and the backup."""
    table, column, value, words = DAMAGE[damage]
    backend.damage(table, column, value, "lisbon")
    with backend.open() as store:
        calls: list[Call] = [
            lambda: store.load("lisbon"),
            lambda: store.update("lisbon", lambda state: state),
        ]
        for call in calls:
            with pytest.raises(ArchiveError) as caught:
                call()
            message = str(caught.value)
            assert message.startswith("thread 'lisbon' in "), message
            assert "is damaged" in message
            assert words in message
            assert "restore the" in message
            assert "from a backup" in message


def test_a_state_saved_with_another_schema_stays_a_config_error(store: Store) -> None:
    """Loading with the wrong schema is the caller's mistake (ConfigError), not damage."""
    incident = load_schema("incident-response")
    state = ConversationState[Any](MESSAGES, thread_id="incident").record(
        None, summary=incident(), cutoff=0
    )
    store.save(state, expected_version=None)
    with pytest.raises(ConfigError, match=r"pass schema=IncidentResponseSummary"):
        store.load("incident")
