"""Where the user's rules go in a schema of one's own: a binding field, or a loud error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from progsum import (
    BaseSummary,
    Compactor,
    ConfigError,
    ConversationState,
    Items,
    Policy,
    load_schema,
    summary_field,
)
from progsum.summarizers import ExtractiveSummarizer
from progsum.summary._schema import spec_of

RULE = "Payment terms must stay net 30."


class Contract(BaseSummary):
    """A contract review: one binding field, named for the domain, and a working field."""

    obligations: Items = summary_field(
        "Obligations", "Terms the client requires, as stated.", binding=True, id_prefix="O"
    )
    clauses: Items = summary_field(
        "Clauses reviewed", "Clauses read so far, with findings.", id_prefix="CR"
    )


CONTRACT_TOML = """
name = "contract"
description = "Contract review."

[[fields]]
name = "obligations"
label = "Obligations"
description = "Terms the client requires, as stated."
binding = true
id_prefix = "O"

[[fields]]
name = "clauses"
label = "Clauses reviewed"
description = "Clauses read so far, with findings."
id_prefix = "CR"
"""


def _review() -> ConversationState:
    state = ConversationState([{"role": "user", "content": "Review the supplier contract."}])
    state = state.append({"role": "assistant", "content": "Reading clause 4 on payment. " * 10})
    state = state.append({"role": "user", "content": RULE})
    for clause in range(5, 10):
        state = state.append({"role": "assistant", "content": f"Clause {clause} is fine. " * 8})
        state = state.append({"role": "user", "content": "Go on."})
    return state


def _texts(state: ConversationState[Any], field: str) -> list[str]:
    assert state.summary is not None
    return [item.text for item in getattr(state.summary, field)]


def _compacted(schema: type[BaseSummary]) -> ConversationState[Any]:
    compactor = Compactor(
        policy=Policy(context_window=8_000, keep=("messages", 2)),
        summarizer=ExtractiveSummarizer(),
        schema=schema,
    )
    return compactor.compact(_review(), force=True)


def test_a_subclass_binding_field_takes_the_users_rules(tmp_path: Path) -> None:
    """The one binding field of a subclass holds the user's rule, as the same TOML schema does."""
    path = tmp_path / "contract.toml"
    path.write_text(CONTRACT_TOML, encoding="utf-8")
    for schema in (Contract, load_schema(path)):
        state = _compacted(schema)
        assert _texts(state, "obligations") == [RULE], schema.__name__
        assert all(RULE not in text for text in _texts(state, "clauses")), schema.__name__


def test_the_rules_field_is_declared_in_the_spec() -> None:
    """The resolved field says it extracts constraints, so every stage reads one answer."""
    spec = spec_of(Contract)
    rules = spec.extracting("constraints")
    assert rules is not None
    assert rules.name == "obligations"


class _TwoBinding(BaseSummary):
    """Two binding fields, neither named or declared for the user's rules."""

    obligations: Items = summary_field("Obligations", "What the client requires.", binding=True)
    promises: Items = summary_field("Promises", "What we promised.", binding=True)
    notes: Items = summary_field("Notes", "Anything else.")


def test_an_ambiguous_schema_fails_at_construction_naming_the_fix() -> None:
    """Two binding fields, none for rules: ConfigError naming them and extract=('constraints',)."""
    with pytest.raises(ConfigError) as raised:
        Compactor(policy=Policy(context_window=8_000), schema=_TwoBinding)
    message = str(raised.value)
    assert "_TwoBinding" in message
    assert "obligations" in message
    assert "promises" in message
    assert "extract=('constraints',)" in message


def test_an_ambiguous_toml_schema_fails_at_load(tmp_path: Path) -> None:
    """The same ambiguity in a TOML file is refused when it loads, naming the file and the fix."""
    path = tmp_path / "two.toml"
    path.write_text(
        CONTRACT_TOML.replace('id_prefix = "CR"', 'id_prefix = "CR"\nbinding = true'),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r'two\.toml.*extract = \["constraints"\]'):
        load_schema(path)


class _Notes(BaseSummary):
    """No binding field at all: nothing binds, by the schema's choice."""

    notes: Items = summary_field("Notes", "Anything worth keeping.")


def test_a_schema_without_binding_fields_is_accepted() -> None:
    """A schema that binds nothing is a choice, not a mistake: no rules field, no error."""
    assert spec_of(_Notes).extracting("constraints") is None
