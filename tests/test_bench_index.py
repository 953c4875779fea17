"""bench/README.md indexes every benchmark script, and names none that is gone."""

from __future__ import annotations

import re
from pathlib import Path

BENCH = Path(__file__).parents[1] / "bench"


def test_every_bench_script_is_in_the_index() -> None:
    """Each bench/*.py has a row in bench/README.md, and each row's script exists."""
    index = (BENCH / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z_]+\.py)", index, flags=re.MULTILINE))
    scripts = {p.name for p in BENCH.glob("*.py")}
    assert scripts - listed == set(), "scripts missing from bench/README.md"
    assert listed - scripts == set(), "bench/README.md lists scripts that are gone"


def test_the_index_links_resolve() -> None:
    """Every relative link of bench/README.md names a file that exists."""
    index = (BENCH / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)", index):
        assert (BENCH / target).exists(), target
