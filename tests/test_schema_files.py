"""Declarative schemas: loading, validation errors, keyed fields, caps and template overrides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from progsum import (
    Compactor,
    ConfigError,
    ConversationState,
    Items,
    Policy,
    Summary,
    load_schema,
    render_anthropic,
    schemas,
    summary_field,
)
from progsum.contract import _guards as guards
from progsum.summarizers import ExtractiveSummarizer
from progsum.summarizers.prompt._update import response_model
from progsum.summary._merge import empty, live_items, merge
from progsum.summary._schema import BaseSummary, item_key, spec_of
from progsum.summary._update import SummaryUpdate
from progsum.testing import QueuedSummarizer, scripted_state
from tests import conversations

SHIPPED = (
    "coding-agent",
    "customer-support",
    "default",
    "incident-response",
    "personal-assistant",
    "research",
    "travel-planning",
)

MINIMAL = """
name = "orders"
description = "Order desk."

[objective]
name = "goal"
label = "Goal"
description = "What the customer wants."

[[fields]]
name = "orders"
label = "Orders"
description = "'order id: status' per order."
kind = "keyed"
id_prefix = "O"

[[fields]]
name = "notes"
label = "Notes"
description = "Anything else worth keeping."
max_items = 2
id_prefix = "N"

[[fields]]
name = "rules"
label = "Rules"
description = "What the customer requires."
binding = true
id_prefix = "C"
"""


def write(tmp_path: Path, text: str, name: str = "orders.toml") -> Path:
    """Write a schema (or template) file into the test's folder."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_schemas_are_listed_and_load() -> None:
    """progsum.schemas() lists what ships; each name loads to a schema class, cached."""
    infos = schemas()
    assert tuple(info.name for info in infos) == SHIPPED
    for info in infos:
        assert info.description
        assert info.path.suffix == ".toml"
        model = load_schema(info.name)
        assert load_schema(info.name) is model
        assert load_schema(info.path) is model
        assert spec_of(model).name == info.name
    assert load_schema("default") is Summary


def test_a_users_file_loads_like_a_python_schema(tmp_path: Path) -> None:
    """A TOML file gives the same spec as the equivalent summary_field declarations."""
    model = load_schema(write(tmp_path, MINIMAL))

    class Orders(BaseSummary):
        schema_name = "orders"
        goal: str = ""
        orders: Items = summary_field(
            "Orders", "'order id: status' per order.", kind="keyed", id_prefix="O"
        )
        notes: Items = summary_field(
            "Notes", "Anything else worth keeping.", max_items=2, id_prefix="N"
        )
        rules: Items = summary_field(
            "Rules", "What the customer requires.", binding=True, id_prefix="C"
        )

    loaded, declared = spec_of(model), spec_of(Orders)
    assert model.__name__ == "OrdersSummary"
    assert loaded.lists == declared.lists
    assert loaded.objective is not None
    assert loaded.objective.label == "Goal"
    assert loaded.name == declared.name == "orders"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name = ", "not valid TOML"),
        (
            MINIMAL.replace('kind = "keyed"', "bindng = true"),
            "fields[0] ('orders'): unknown key 'bindng'",
        ),
        (MINIMAL.replace('description = "Order desk."', ""), "missing 'description'"),
        (MINIMAL.replace("max_items = 2", "max_items = 0"), "max_items=0; use a whole number"),
        (
            MINIMAL.replace(
                'binding = true\nid_prefix = "C"', 'binding = true\nmax_items = 3\nid_prefix = "C"'
            ),
            "binding items are never dropped",
        ),
        (MINIMAL.replace('kind = "keyed"', 'kind = "map"'), "kind='map'; use 'list'"),
        (MINIMAL.replace('id_prefix = "N"', 'id_prefix = "O"'), "both number their items O1"),
        (MINIMAL.replace('name = "notes"', 'name = "orders"'), "the name 'orders' is used twice"),
        (MINIMAL.replace('name = "notes"', 'name = "retired"'), "reserved by progsum"),
        (
            MINIMAL.replace('name = "notes"', 'name = "Open Notes"'),
            "use a lowercase Python identifier",
        ),
        (
            MINIMAL.replace("binding = true", 'binding = "yes"'),
            "binding='yes'; write true or false",
        ),
        (
            MINIMAL.replace(
                'name = "orders"\ndescription = "Order desk."',
                'name = "Orders!"\ndescription = "x"',
            ),
            "lowercase words joined by hyphens",
        ),
        (MINIMAL.split("[[fields]]", maxsplit=1)[0], "missing 'fields'"),
        (MINIMAL + 'header_template = "missing.j2"\n', "unknown key"),
        (
            MINIMAL.replace('kind = "keyed"', 'kind = "keyed"\nextract = ["orderz"]'),
            "extract entry 'orderz', which is no extractor; the extractors are: constraints",
        ),
        (
            MINIMAL.replace('kind = "keyed"', 'kind = "keyed"\nextract = "identifiers"'),
            "extract='identifiers'; write a list of extractor names",
        ),
        (
            MINIMAL.replace('kind = "keyed"', 'kind = "keyed"\nextract = ["identifiers"]').replace(
                "max_items = 2", 'max_items = 2\nextract = ["identifiers"]'
            ),
            "both extract 'identifiers'; each extractor feeds one field",
        ),
    ],
)
def test_invalid_files_name_the_file_the_field_and_the_fix(
    tmp_path: Path, text: str, expected: str
) -> None:
    """One ConfigError per problem, starting with the file's path."""
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_schema(path)
    assert str(caught.value).startswith(str(path))
    assert expected in str(caught.value)


def test_fields_declare_the_extractors_that_feed_them(tmp_path: Path) -> None:
    """`extract = [...]` in a file and `summary_field(extract=...)` give the same spec."""
    path = write(
        tmp_path,
        MINIMAL.replace('kind = "keyed"', 'kind = "keyed"\nextract = ["identifiers"]').replace(
            "binding = true", 'binding = true\nextract = ["constraints"]'
        ),
    )
    spec = spec_of(load_schema(path))
    orders = spec.extracting("identifiers")
    assert orders is not None
    assert orders.name == "orders"
    assert orders.extract == ("identifiers",)
    assert spec.extracting("files") is None
    rules = spec.list_field("rules")
    assert guards.constraint_field(spec) == rules
    assert spec.list_field("notes").extract == ()

    class Desk(BaseSummary):
        tickets: Items = summary_field("Tickets", "Ticket ids.", extract=("identifiers",))
        notes: Items = summary_field("Notes", "Anything.", extract=("facts",))
        log: Items = summary_field("Log", "What happened.")

    desk = spec_of(Desk)
    assert desk.list_field("tickets").extract == ("identifiers",)
    assert guards.fact_field(desk) == desk.list_field("notes")


def test_unknown_names_and_paths_say_what_exists(tmp_path: Path) -> None:
    """A wrong name lists the shipped schemas; a wrong path says it does not exist."""
    with pytest.raises(
        ConfigError, match="no shipped schema is called 'legal'; use one of: coding-agent"
    ):
        load_schema("legal")
    with pytest.raises(ConfigError, match="does not exist"):
        load_schema(tmp_path / "nope.toml")


def test_keyed_items_supersede_the_old_value_with_a_tombstone(tmp_path: Path) -> None:
    """A new value for a key retires the old item; the reason names the item that replaced it."""
    model = load_schema(write(tmp_path, MINIMAL))
    first, _ = merge(
        empty(model),
        SummaryUpdate(add={"orders": ["A-1042: packed", "A-2000: shipped"]}),
        source=(1, 3),
        compaction=1,
    )
    second, report = merge(
        first,
        SummaryUpdate(add={"orders": ["a-1042:  delivered on 2026-05-02"]}),
        source=(3, 5),
        compaction=2,
    )
    assert [i.text for i in live_items(second)["orders"]] == [
        "A-2000: shipped",
        "a-1042:  delivered on 2026-05-02",
    ]
    assert report.superseded == ("O1",)
    (tombstone,) = second.retired
    assert tombstone.item.text == "A-1042: packed"
    assert tombstone.reason == "superseded by [O3]: a-1042:  delivered on 2026-05-02"
    assert tombstone.compaction == 2


def test_item_keys() -> None:
    """The key ends at the first colon followed by a space; URLs and times are not keys."""
    assert item_key("Order A-1042: shipped") == "order a-1042"
    assert item_key("https://example.com/a is the docs") is None
    assert item_key("Meet at 10:30 in the lobby") is None
    assert item_key("Status:") is None


def test_capped_fields_drop_the_oldest_items_as_tombstones(tmp_path: Path) -> None:
    """max_items keeps the newest items; the dropped ones become tombstones with the reason."""
    model = load_schema(write(tmp_path, MINIMAL))
    summary, report = merge(
        empty(model),
        SummaryUpdate(add={"notes": ["one", "two", "three"], "rules": ["r1", "r2", "r3"]}),
        source=(1, 3),
        compaction=1,
    )
    assert [i.text for i in live_items(summary)["notes"]] == ["two", "three"]
    assert len(live_items(summary)["rules"]) == 3  # binding fields are never capped
    assert report.dropped == ("N1",)
    assert summary.retired[0].reason == "Notes keeps at most 2 items; the oldest go first"


def test_the_prompt_tells_the_model_the_field_rules(tmp_path: Path) -> None:
    """Keyed, capped and binding fields explain themselves in the tool schema."""
    schema = response_model(load_schema(write(tmp_path, MINIMAL))).model_json_schema()
    props = schema["properties"]
    assert "Write each item as 'key: value'" in props["orders"]["description"]
    assert "Only the latest 2 items are kept." in props["notes"]["description"]
    assert "Binding" in props["rules"]["description"]


def test_a_schema_template_overrides_the_header(tmp_path: Path) -> None:
    """header_template names a Jinja file next to the schema; it gets the usual variables."""
    template = (
        "# Orders so far ({{ schema }}), messages {{ first }}\N{EN DASH}{{ last }}\n"
        "{% for s in sections %}{% for i in s.entries %}* {{ i.id }} {{ i.text }}\n"
        "{% endfor %}{% endfor %}"
    )
    write(tmp_path, template, "orders.header.md.j2")
    with_template = MINIMAL.replace(
        'description = "Order desk."',
        'description = "Order desk."\nheader_template = "orders.header.md.j2"',
    )
    model = load_schema(write(tmp_path, with_template))
    state = scripted_state(
        [*conversations.trip_planning(days=2), SummaryUpdate(add={"orders": ["Alfama: held"]})],
        schema=model,
    )
    assert state.header == (
        "# Orders so far (orders), messages 2\N{EN DASH}6\n"
        "* O1 Alfama: held\n"
        "* C1 Never book flights that leave before 9am.\n"  # the prohibition guard, as always
        "* C2 The total budget is $3,000 for two people.\n"  # the ledger: a value the fake left out
    )
    system, _ = render_anthropic(state)
    assert system == [{"type": "text", "text": state.header}]


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{% for %}", "does not compile"),
        ("{{ no_such_variable }}", "fails to render"),
    ],
)
def test_broken_templates_fail_at_load(tmp_path: Path, template: str, expected: str) -> None:
    """A template that does not compile, or renders an unknown variable, fails at load_schema."""
    write(tmp_path, template, "bad.j2")
    path = write(
        tmp_path,
        MINIMAL.replace(
            'description = "Order desk."', 'description = "Order desk."\nheader_template = "bad.j2"'
        ),
    )
    with pytest.raises(ConfigError, match=expected):
        load_schema(path)
    path = write(
        tmp_path,
        MINIMAL.replace(
            'description = "Order desk."',
            'description = "Order desk."\nheader_template = "gone.j2"',
        ),
    )
    with pytest.raises(ConfigError, match=r"header_template 'gone\.j2' not found"):
        load_schema(path)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_schema_runs_the_engine_offline_and_round_trips(name: str) -> None:
    """The extractive summarizer fills each schema; the state persists with it."""
    schema = load_schema(name)
    compactor = Compactor(
        policy=Policy(context_window=2_000, trigger=("tokens", 600), keep=("messages", 4)),
        summarizer=ExtractiveSummarizer(),
        schema=schema,
    )
    state: ConversationState[Any] = ConversationState(conversations.trip_planning(days=10))
    state = compactor.maybe_compact(state)
    assert state.cutoff > 0
    assert state.summary is not None
    assert type(state.summary) is schema
    assert state.header
    again = ConversationState.from_json(state.to_json(), schema=schema)
    assert again.header == state.header
    assert json.loads(again.to_json())["schema"] == schema.__name__


def test_a_python_subclass_with_kinds_and_caps_works_the_same() -> None:
    """summary_field(kind=..., max_items=...) on a Summary subclass, through the engine."""

    class Desk(Summary):
        orders: Items = summary_field("Orders", "'order id: status'.", kind="keyed", id_prefix="K")
        notes: Items = summary_field("Notes", "Other notes.", max_items=1, id_prefix="N")

    fake = QueuedSummarizer(
        SummaryUpdate(add={"orders": ["Alfama: held"], "notes": ["a", "b"]}),
        SummaryUpdate(add={"orders": ["Alfama: booked"]}),
    )
    compactor = Compactor(
        policy=Policy(context_window=100_000, keep=("messages", 2)), summarizer=fake, schema=Desk
    )
    state: ConversationState[Any] = ConversationState(conversations.trip_planning(days=20))
    state = compactor.compact(state, force=True)
    state = compactor.compact(state.extend(conversations.trip_planning(days=20)[1:]), force=True)
    summary = state.summary
    assert isinstance(summary, Desk)
    assert [i.text for i in summary.orders] == ["Alfama: booked"]
    assert [i.text for i in summary.notes] == ["b"]
    assert {t.item.text for t in summary.retired} == {"Alfama: held", "a"}
