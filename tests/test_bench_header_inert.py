"""bench/header_inert.py runs on the fixture corpora: every text renders inert in the header."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# the benchmarks are scripts in bench/, not a package: import them as the scripts see each other
sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import header_inert

pytestmark = pytest.mark.bench  # outside the default run: python -m pytest -m bench

FIXTURES = Path(__file__).parent / "fixtures" / "bench"


def test_every_fixture_text_renders_inert(capsys: pytest.CaptureFixture[str]) -> None:
    """Over the three fixture corpora no header has a structural problem; multi-line texts exist."""
    assert header_inert.main([str(FIXTURES)]) == 0
    out = capsys.readouterr().out
    assert "inert rendering, structural problems: 0" in out
    extra = next(line for line in out.splitlines() if line.startswith("  extra lines: "))
    assert int(extra.rsplit(" ", 1)[1]) > 0, out  # the old rendering would have added lines
    counts = next(line for line in out.splitlines() if line.startswith("single-line printable"))
    single, unchanged = (int(part.rsplit(" ", 1)[1]) for part in counts.split(";"))
    assert single > 0
    assert unchanged == single
    assert "ratio " in out


def test_a_folder_without_transcripts_is_a_usage_error(tmp_path: Path) -> None:
    """A data folder holding none of the corpora is a usage error, not an empty count."""
    with pytest.raises(SystemExit):
        header_inert.main([str(tmp_path)])
