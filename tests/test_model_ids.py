"""Every model a user reads about is one progsum knows, and none is retired as of the table's date.

The ids are read from the README, the user docs, the examples and the default summarizer model;
each must resolve in `progsum.policy._windows.MODELS`, and a model retired on or before
`TABLE_DATE` may only be named on a line that says so (the model table keeps retired rows for old
logs). A retired model in the README or an example would send users to a 404.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from progsum.policy._windows import TABLE_DATE, find_profile, retired
from progsum.summarizers.anthropic._summarizer import DEFAULT_MODEL

ROOT = Path(__file__).resolve().parent.parent
MODEL_ID = re.compile(r"(?<![\w-])(claude-[a-z]+-\d[\w.-]*|claude-3[\w.-]*|gpt-\d[\w.]*(?:-mini)?)")
SAYS_RETIRED = re.compile(r"retire|end of life", re.IGNORECASE)
SOURCES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "examples").rglob("*.py")),
    *sorted((ROOT / "examples").rglob("*.json")),
]


def mentions() -> list[tuple[str, int, str, str]]:
    """``(file, line number, model id, line)`` of every model id the user-facing files name."""
    found = []
    for path in SOURCES:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in MODEL_ID.finditer(line):
                model = match.group(1).rstrip(".-")
                found.append((str(path.relative_to(ROOT)), number, model, line))
    return found


def test_the_files_name_models_at_all() -> None:
    """The scan finds the README's models (a regex that matched nothing would pass vacuously)."""
    models = {m for _, _, m, _ in mentions()}
    assert {"claude-sonnet-5-5", "claude-haiku-5-5"} <= models


@pytest.mark.parametrize("where", sorted({f for f, _, _, _ in mentions()}))
def test_every_model_named_is_in_the_table_and_current(where: str) -> None:
    """A model id in a user-facing file is in the table; a retired one only where it says so."""
    for file, number, model, line in mentions():
        if file != where:
            continue
        assert find_profile(model) is not None, f"{file}:{number} names {model}, not in the table"
        gone = retired(model)
        if gone is not None:
            why = (
                f"{file}:{number} names {model}, retired on {gone} (table of {TABLE_DATE}); name "
                "a current model, or say on that line that it is retired"
            )
            assert file.startswith("docs/"), why
            assert SAYS_RETIRED.search(line), why


def test_the_default_summarizer_model_is_current() -> None:
    """The model `AnthropicSummarizer()` calls by default is known and not retired."""
    assert find_profile(DEFAULT_MODEL) is not None
    assert retired(DEFAULT_MODEL) is None
