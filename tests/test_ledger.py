"""The value ledger's reading of a user's sentence and of the context: named values stand whole."""

from __future__ import annotations

from progsum.contract._ledger import Entry, carrier_items, carriers, lost, values
from progsum.summary._schema import Item, Summary


def test_a_stated_address_is_one_ledger_value() -> None:
    """The address replaces its number among the sentence's values; other values stay."""
    assert values("Ship it to 12 Rua Augusta by 2027-05-03.") == ("12 Rua Augusta", "2027-05-03")
    assert values("Budget is $3,000 for 5 days.") == ("$3,000", "5 days")


def _facts(*texts: str) -> Summary:
    return Summary(
        established_facts=tuple(
            Item(id=f"F{n}", text=text, source=(1, 2)) for n, text in enumerate(texts, 1)
        )
    )


def test_the_number_alone_does_not_carry_the_address() -> None:
    """The context that kept 12 and lost the street lost the ledger's value."""
    ledger = (Entry("12 Rua Augusta", 1, "Ship it to 12 Rua Augusta.", rule=False),)
    number_only = carriers(_facts("The order goes to number 12."), [], ledger)
    assert lost(ledger, number_only) == ledger
    whole = carriers(_facts("Ship to 12 Rua Augusta, Lisbon."), [], ledger)
    assert lost(ledger, whole) == ()
    kept = carriers(None, ["I said 12 Rua Augusta Sul."], ledger)
    assert lost(ledger, kept) == ()


def test_the_last_carrier_of_an_address_is_held() -> None:
    """Of two items, only the one naming the street carries the address: it is held."""
    ledger = (Entry("12 Rua Augusta", 1, "Ship it to 12 Rua Augusta.", rule=False),)
    summary = _facts("Number 12 was mentioned.", "The parcel goes to 12 Rua Augusta.")
    assert carrier_items(summary, ledger) == frozenset({"F2"})


def test_a_list_marker_states_no_value() -> None:
    """A numbered item's marker is no value of the user's; the item's own values are."""
    assert values("0.") == ("0",)  # as a whole answer it is one
    from progsum.judge._segment import pieces  # noqa: PLC0415

    stated = [v for piece in pieces("0. AA\n1. Pay $300 by 2027-05-03.") for v in values(piece)]
    assert stated == ["$300", "2027-05-03"]
