"""Snapshot test for a domain schema's rendered header (run by progsum's own test suite)."""

from syrupy.assertion import SnapshotAssertion

from progsum import SummaryUpdate, load_schema
from progsum.testing import scripted_state

Incident = load_schema("incident-response")


def test_incident_header(snapshot_md: SnapshotAssertion) -> None:
    state = scripted_state(
        [
            {"role": "user", "content": "Checkout returns 502s since 14:05 UTC. No deploys today."},
            {"role": "assistant", "content": "Looking. payments-api p99 is 9.8 s, db CPU 97%."},
            {"role": "user", "content": "Do not fail over the database without my approval."},
            {"role": "assistant", "content": "Understood. A report query holds most db CPU."},
            SummaryUpdate(
                objective="Checkout 502s since 14:05 UTC.",
                add={
                    "guardrails": ["No deploys today (incident commander)."],
                    "status": ["payments-api: degraded, p99 9.8 s"],
                },
            ),
            {"role": "user", "content": "Killed the runaway report query, pid 4411."},
            {"role": "assistant", "content": "payments-api p99 is back to 180 ms."},
            SummaryUpdate(
                add={
                    "status": ["payments-api: healthy, p99 180 ms"],
                    "actions": ["14:32 UTC: killed report query pid 4411 on db-primary."],
                }
            ),
            {"role": "user", "content": "Write the follow-up ticket."},
        ],
        schema=Incident,
        keep=1,
    )
    assert state.summary is not None
    assert state.header == snapshot_md
