"""bench/adapters.py on a short workload: one snapshot per history, compactions alike everywhere.

The same conversation runs through the pydantic-ai, Agents SDK and LangChain adapters (each
framework's real agent loop, its own fake model reporting usage as a provider does). With each
adapter anchored on that usage, they compact about equally often and rarely stall; the
pydantic-ai history carries one progsum state however many compactions it went through.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

for extra in ("pydantic_ai.capabilities", "agents", "langchain.agents"):
    pytest.importorskip(extra, reason="needs the pydantic-ai, openai-agents and langchain extras")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
adapters = importlib.import_module("adapters")


def test_adapters_store_one_state_and_compact_alike(capsys: pytest.CaptureFixture[str]) -> None:
    """90 runs: one snapshot each, compactions within a small factor, stalls never dominating."""
    rows = adapters.main(["--runs", "90"])
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + len(rows) == 4
    compactions = {name: adapters.outcomes(row.state, "compacted") for name, row in rows.items()}
    assert min(compactions.values()) >= 3
    assert max(compactions.values()) <= 1.5 * min(compactions.values())
    for name, row in rows.items():
        assert row.snapshots == 1, name
        assert adapters.outcomes(row.state, "stalled") <= compactions[name] / 4, name
        assert row.largest < adapters.WINDOW, name
        assert row.state.anchor is not None, name  # counted on the reported usage
        assert row.state.agent_usage.reports == row.requests, name
    pydantic_ai = rows["pydantic-ai"]
    assert pydantic_ai.snapshot_bytes < pydantic_ai.history / 4
