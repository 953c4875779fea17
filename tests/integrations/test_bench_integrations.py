"""The integration benchmark runs and prints one row per framework."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest


def test_integration_benchmark_runs_one_tiny_row(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/bench_integrations.py prints a ratio row for each installed framework."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    bench = importlib.import_module("bench_integrations")
    bench.main(["--sizes", "40", "--calls", "2"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 3
    assert all(("\u00d7" in row) or ("not installed" in row) for row in rows)
