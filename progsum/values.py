"""Exact values in text: numbers, amounts, dates, times, ids, paths, URLs and e-mail addresses.

These are the parts of a statement that must survive compaction byte for byte (DESIGN invariant 6).
A value is a whitespace-separated token, trimmed of surrounding punctuation, that carries a digit,
a path or URL separator, an ``@``, an underscore, or a file-like extension.
"""

from __future__ import annotations

import re

__all__ = ["exact_values"]

_TRIM = "\"'`()[]{}<>,;:!?*\u201c\u201d\u2018\u2019"  # ASCII and typographic quotes
_FILE_LIKE = re.compile(r"^[\w-]{2,}\.[A-Za-z0-9]{1,8}$")
_MARKERS = ("/", "\\", "@", "_", "://")


def _is_value(token: str) -> bool:
    if any(c.isdigit() for c in token):
        return True
    if any(marker in token for marker in _MARKERS):
        return any(c.isalnum() for c in token)
    return bool(_FILE_LIKE.match(token))


def exact_values(text: str) -> tuple[str, ...]:
    """The value tokens of ``text``, in order of appearance, without repeats.

    Example:
        ``exact_values("Budget is $3,000; see config/prod.yaml by 2026-05-01.")``
        gives ``("$3,000", "config/prod.yaml", "2026-05-01")``.
    """
    found: list[str] = []
    for raw in text.split():
        token = raw.lstrip(_TRIM).rstrip(_TRIM + ".")  # a leading dot may be a path: ./run.sh
        if token and _is_value(token) and token not in found:
            found.append(token)
    return tuple(found)
