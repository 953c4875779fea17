"""Every shipped schema renders deterministically: header and summarizer prompt, as .md snapshots.

Each schema gets a fixture conversation in its domain and the updates a model could return for
it, run through the real engine (merge, keyed supersession, caps, guards) by
`progsum.testing.scripted_state`. Review the snapshots in tests/__snapshots__/ like product copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from progsum import load_schema, schemas
from progsum.messages._formats import Message
from progsum.summary._update import Retirement, SummaryUpdate
from progsum.testing import scripted_state, summarizer_prompt, summary_request
from tests import conversations

Script = list[Message | SummaryUpdate]


def _split(
    messages: Sequence[Message],
    at: int,
    first: SummaryUpdate,
    last: SummaryUpdate,
    *,
    early: Sequence[Message] = (),
    late: Sequence[Message] = (),
    early_at: int | None = None,
) -> Script:
    """Compact after ``messages[:at]`` and at the end; ``early`` and ``late`` are folded too.

    They hold what the user states or accepts in each segment, so that the binding items of the
    updates have the user's word behind them, as the engine's contract requires.
    """
    cut = at - 2 if early_at is None else early_at
    return [
        *messages[:cut],
        *early,
        *messages[cut:at],
        first,
        *messages[at:-2],
        *late,
        *messages[-2:],
        last,
    ]


def _said(*turns: tuple[str, str]) -> list[Message]:
    return [{"role": role, "content": text} for role, text in turns]


def _default() -> Script:
    trip = conversations.trip_planning(days=8)
    return _split(
        trip,
        12,
        SummaryUpdate(
            objective="A 5-day Lisbon trip in May for two.",
            add={
                "constraints": [conversations.TRIP_BUDGET, "We are vegetarian."],
                "established_facts": ["Belém Tower tickets and snacks: about €15 each."],
                "open_threads": ["Which sights fill the five days?"],
            },
        ),
        SummaryUpdate(
            add={"decisions": ["Half a day each at Belém Tower, Alfama and Sintra."]},
            retire=[Retirement(id="O1", reason="answered in message 11: the sights are chosen")],
        ),
    )


def _travel() -> Script:
    trip = conversations.trip_planning(days=8)
    return _split(
        trip,
        12,
        SummaryUpdate(
            objective="Two travellers, 5 days in Lisbon in May, sightseeing and food.",
            add={
                "requirements": [conversations.TRIP_BUDGET, "Vegetarian food only."],
                "bookings": ["Hotel Casa do Patio: held until 2026-03-01, €120 a night"],
                "options": ["Belém Tower: about €15 each for tickets and snacks, go early."],
                "todo": ["Book flights TAP TP1350 or easyJet U27622."],
            },
        ),
        SummaryUpdate(
            add={
                "bookings": ["Hotel Casa do Patio: confirmed PAT-88213, 5 nights, €600 total"],
                "choices": ["Sintra on day 3, by the 09:41 train from Rossio."],
                "rejected": ["Cascais: the travellers prefer Sintra for the day trip."],
            },
        ),
        early=_said(
            ("user", "Hold Hotel Casa do Patio until 2026-03-01 at €120 a night."),
            ("assistant", "Held. TAP TP1350 and easyJet U27622 both land before noon."),
        ),
        late=_said(
            (
                "user",
                (
                    "Confirm Hotel Casa do Patio for the 5 nights instead of the hold. Sintra on "
                    "day 3, by the 09:41 train from Rossio; we prefer Sintra to Cascais for the "
                    "day trip."
                ),
            ),
            ("assistant", "Hotel Casa do Patio is confirmed: PAT-88213, 5 nights, €600 total."),
        ),
    )


def _coding() -> Script:
    session = conversations.coding_session(rounds=3)
    return _split(
        session,
        11,
        SummaryUpdate(
            objective="Make tests/test_billing.py pass.",
            add={
                "commands": ["pytest tests/test_billing.py -q: 1 failed, 41 passed"],
                "files": [
                    "billing/invoice.py: total() rounds cents with round()",
                    "tests/test_billing.py: expects total(199900) == 2000",
                ],
                "codebase_facts": ["AssertionError: 1999 != 2000 comes from round(cents / 100)."],
                "decisions": ["Truncate cents with int() instead of round()."],
            },
        ),
        SummaryUpdate(
            add={
                "files": ["billing/invoice.py: total() now truncates with int()"],
                "commands": ["pytest tests/test_billing.py -q: 42 passed"],
                "open_threads": ["Run the whole suite."],
            },
        ),
        early=_said(
            ("assistant", "The test expects total(199900) == 2000; round(cents / 100) gives 1999."),
            ("user", "Truncate cents with int() instead of round()."),
        ),
        late=_said(
            ("assistant", "pytest tests/test_billing.py -q now reports 42 passed."),
            ("user", "Good."),
        ),
    )


def _support() -> Script:
    chat = conversations.airline_support(rounds=4)
    return _split(
        chat,
        12,
        SummaryUpdate(
            objective="Move reservation NO6JO3 to a direct flight after 11am EST.",
            add={
                "identifiers": ["Customer: mia_li_3668", "Reservation: NO6JO3"],
                "account": ["NO6JO3 flights: HAT136"],
                "policies": ["Changes cost the fare difference; no change fee in Gold tier."],
            },
        ),
        SummaryUpdate(
            add={
                "account": ["NO6JO3 flights: HAT069 12:00, pending payment"],
                "promises": ["Confirm the change to HAT069 by e-mail within 24 hours."],
                "open_issues": ["Customer to choose the payment method for the fare difference."],
            },
        ),
        early=_said(
            (
                "assistant",
                "Changes cost the fare difference; no change fee in Gold tier. Shall I go on?",
            ),
            ("user", "Yes, please."),
        ),
        early_at=9,
        late=_said(
            (
                "assistant",
                "I will confirm the change to HAT069 by e-mail within 24 hours. Shall I go ahead?",
            ),
            ("user", "Yes, go ahead."),
        ),
    )


def _research() -> Script:
    return _split(
        conversations.research_session(),
        6,
        SummaryUpdate(
            objective="Does intermittent fasting lower HbA1c more than calorie restriction in T2D?",
            add={
                "method": ["Search PubMed and Cochrane: 'intermittent fasting' AND 'HbA1c'."],
                "sources": [
                    "Carter 2018: RCT, n=137, 12 months, doi:10.1001/jamanetworkopen.2018.0756",
                ],
                "findings": [
                    "HbA1c fell 0.3% with fasting vs 0.5% with restriction (Carter 2018)."
                ],
            },
        ),
        SummaryUpdate(
            add={
                "sources": ["Corley 2018: RCT, n=41, 12 weeks, doi:10.1111/dme.13595"],
                "rejected": ["Liu 2022: only 8 weeks, fails the 12-week rule."],
                "open_questions": ["Hypoglycaemia risk on sulfonylureas: no powered trial yet."],
            },
        ),
    )


def _incident() -> Script:
    chat = _said(
        ("user", "Checkout returns 502s since 14:05 UTC. No deploys today."),
        ("assistant", "Looking. payments-api p99 is 9.8 s, db CPU 97%."),
        ("user", "Do not fail over the database without my approval."),
        ("assistant", "Understood. A report query holds most db CPU."),
        ("user", "Kill the runaway report query."),
        ("assistant", "Killed the report query, pid 4411."),
        ("user", "Status?"),
        ("assistant", "payments-api p99 is back to 180 ms."),
        ("user", "Write the follow-up ticket."),
        ("assistant", "Filed INC-2291 for the report query's missing timeout."),
    )
    return _split(
        chat,
        4,
        SummaryUpdate(
            objective="Checkout 502s since 14:05 UTC.",
            add={
                "guardrails": ["No deploys today."],
                "status": ["payments-api: degraded, p99 9.8 s"],
            },
        ),
        SummaryUpdate(
            add={
                "status": ["payments-api: healthy, p99 180 ms"],
                "actions": ["Killed the report query, pid 4411."],
            }
        ),
    )


def _personal() -> Script:
    chat = _said(
        ("user", "I'm Dana, a nurse in Leeds. Please never remind me about work at weekends."),
        ("assistant", "Noted, Dana. No work reminders at weekends."),
        ("user", "I love hiking and I hate early mornings."),
        ("assistant", "Hiking it is; nothing before 9."),
        ("user", "My sister Priya's birthday is 12 June."),
        ("assistant", "I'll remember Priya's birthday on 12 June."),
        ("user", "Actually I moved to York last month."),
        ("assistant", "Got it: you live in York now."),
        ("user", "Can you find a trail near York for Saturday?"),
        ("assistant", "Looking for trails near York."),
    )
    return _split(
        chat,
        6,
        SummaryUpdate(
            objective="Everyday help for Dana.",
            add={
                "instructions": ["Please never remind me about work at weekends."],
                "profile": ["Home: Leeds", "Job: nurse"],
                "preferences": ["Hiking: loves it", "Mornings: hates early mornings"],
                "people": ["Priya: Dana's sister, birthday 12 June"],
                "dates": ["12 June: Priya's birthday"],
            },
        ),
        SummaryUpdate(
            add={
                "profile": ["Home: York (moved last month)"],
                "open_threads": ["Find a trail near York for Saturday."],
            }
        ),
    )


SCENARIOS = {
    "default": _default,
    "travel-planning": _travel,
    "coding-agent": _coding,
    "customer-support": _support,
    "research": _research,
    "incident-response": _incident,
    "personal-assistant": _personal,
}


def test_every_shipped_schema_has_a_scenario() -> None:
    """A new schema in schemas/ needs a snapshot scenario here."""
    assert sorted(SCENARIOS) == sorted(info.name for info in schemas())


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_header(name: str, snapshot_md: SnapshotAssertion) -> None:
    """The rendered header after two compactions in the schema's domain."""
    state = scripted_state(SCENARIOS[name](), schema=load_schema(name))
    assert len(state.events) == 2
    assert state.header == snapshot_md
    again = scripted_state(SCENARIOS[name](), schema=load_schema(name))
    assert again.header == state.header


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_summarizer_prompt(name: str, snapshot_md: SnapshotAssertion) -> None:
    """What a model summarizer is sent for the next segment, with the summary so far."""
    schema = load_schema(name)
    script = SCENARIOS[name]()
    messages: list[Any] = [step for step in script if not isinstance(step, SummaryUpdate)]
    state = scripted_state(script, schema=schema)
    request = summary_request(
        messages[-2:],
        prior=state.summary,
        schema=schema,
        start=len(messages) - 2,
        task=messages[:1],
    )
    assert summarizer_prompt(request) == snapshot_md
