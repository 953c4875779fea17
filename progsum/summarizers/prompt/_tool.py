"""What the two tool-input models share: the validation-context key and the fields' rules.

The update model (`progsum.summarizers.prompt._update`) and the consolidation model
(`progsum.summarizers.prompt._consolidation`) both hold one list per list field of the schema,
described by the field's metadata and the rules below, and both find what their validator compares
with in Instructor's validation context under `CHECKS_KEY`.
"""

from __future__ import annotations

from progsum.errors import ConfigError
from progsum.summary._schema import BaseSummary, FieldSpec

__all__ = ["CHECKS_KEY", "check_name", "rules", "shown_ids"]

CHECKS_KEY = "progsum_checks"
"""Key of the `Checks` (or `ConsolidationChecks`) in the validation context."""

_RESERVED = ("retire", "objective")
_MAX_IDS_SHOWN = 40


def check_name(schema: type[BaseSummary], spec: FieldSpec) -> None:
    """Refuse a list field whose name is one of the tool's own fields.

    Raises:
        ConfigError: the field is called ``retire`` or ``objective``.
    """
    if spec.name in _RESERVED:
        raise ConfigError(
            f"{schema.__name__}.{spec.name} clashes with the summarizer's own {spec.name!r} "
            "field; rename the list field (e.g. to 'retired_items' or 'goals')"
        )


def rules(spec: FieldSpec) -> str:
    """What the field's schema rules mean for the model, as sentences after its description."""
    rules = ""
    if spec.binding:
        rules += " Binding: it stays until retired with a reason."
    if spec.kind == "keyed":
        rules += (
            " Write each item as 'key: value' (e.g. 'Order A-1042: refund issued'); an item with "
            "the key of a prior item replaces it, so give the new value under the same key."
        )
    if spec.max_items is not None:
        rules += f" Only the latest {spec.max_items} items are kept."
    return rules


def shown_ids(ids: list[str]) -> str:
    """The ids a re-ask lists as retirable: the first few, or "there are none"."""
    shown = ", ".join(ids[:_MAX_IDS_SHOWN]) + (", ..." if len(ids) > _MAX_IDS_SHOWN else "")
    return shown or "there are none"
