"""Exact values: the tokens that must survive compaction byte for byte."""

from __future__ import annotations

import pytest

from progsum.judge._values import exact_values, named_keys, named_values, value_keys


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


@pytest.mark.parametrize(
    ("text", "named"),
    [
        pytest.param("Ship it to 12 Rua Augusta, Lisbon.", ("12 Rua Augusta",), id="house-first"),
        pytest.param("We live at 221B Baker Street now.", ("221B Baker Street",), id="suffix"),
        pytest.param("I moved to Hauptstraße 5 in May.", ("Hauptstraße 5",), id="name-first"),
        pytest.param("Meet me at Terminal 2 at 9am.", ("Terminal 2",), id="place"),
        pytest.param("The postcode is SW1A 1AA for the flat.", ("SW1A 1AA",), id="postcode"),
        pytest.param("Rua Augusta 12 is the shop.", ("Augusta 12",), id="opener-left-out"),
        pytest.param("On April 4 we fly; back on 9 May.", (), id="dates"),
        pytest.param("In 2019 Alice moved to Porto.", (), id="year"),
        pytest.param("We need 3 Rooms for the team.", (), id="quantity"),
        pytest.param("Option 3 is the best one.", (), id="opening-word"),
        pytest.param("Closed 0\nDashboard 2 open", (), id="line-openers"),
        pytest.param("the 12\nRua Augusta", (), id="not-across-lines"),
    ],
)
def test_named_values(text: str, named: tuple[str, ...]) -> None:
    """A number with the proper name around it (a street address, a place, a postcode) is one value.

    Dates, years and quantities take no name, and the word that opens a sentence or a line is no
    part of one.
    """
    assert named_values(text) == named


def test_an_address_is_carried_only_with_its_street() -> None:
    """The number alone does not carry an address; a longer name around it does."""
    address = "12 Rua Augusta"
    assert address not in named_keys("Ship it to number 12.")
    assert address not in named_keys("Ship it to 12 Rua Prata.")
    assert address in named_keys("Ship it to 12 Rua Augusta.")
    assert address in named_keys("Ship it to 12 Rua Augusta Sul.")
    assert "Augusta 12" in named_keys("It is Rua Augusta 12.")
    assert "12" in value_keys("Ship it to 12 Rua Augusta.")  # invention checks: per number
