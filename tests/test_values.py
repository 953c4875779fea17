"""Exact values: the tokens that must survive compaction byte for byte."""

from __future__ import annotations

import pytest

from progsum.judge.values import exact_values


@pytest.mark.parametrize(
    ("text", "values"),
    [
        pytest.param(
            "Budget is $3,000; see config/prod.yaml by 2026-05-01.",
            ("$3,000", "config/prod.yaml", "2026-05-01"),
            id="amount-path-date",
        ),
        pytest.param("Never book flights before 9am.", ("9am",), id="time"),
        pytest.param(
            "Reservation NO6JO3 (user mia_li_3668) on HAT069.",
            ("NO6JO3", "mia_li_3668", "HAT069"),
            id="ids",
        ),
        pytest.param(
            "Docs at https://example.com/a?b=1, mail ops@example.com.",
            ("https://example.com/a?b=1", "ops@example.com"),
            id="url-email",
        ),
        pytest.param(
            "Edit invoice.py and README.md, e.g. the intro.",
            ("invoice.py", "README.md"),
            id="files-not-abbreviations",
        ),
        pytest.param("Plain words only, nothing exact here.", (), id="none"),
        pytest.param("Pay €120, then €120 again.", ("€120",), id="no-repeats"),
        pytest.param("Ratio 0.65 and 12% off.", ("0.65", "12%"), id="numbers"),
    ],
)
def test_exact_values(text: str, values: tuple[str, ...]) -> None:
    """Numbers, amounts, dates, ids, paths, URLs and e-mails are found, punctuation trimmed."""
    assert exact_values(text) == values
