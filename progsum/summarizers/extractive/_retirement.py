"""Retirement: the prior verbatim questions a segment answers."""

from __future__ import annotations

from typing import Any

from progsum.judge._extract import message_text
from progsum.summary._request import SummaryRequest
from progsum.summary._update import Retirement

__all__ = ["answered_threads"]


def answered_threads(request: SummaryRequest[Any], field: str) -> tuple[Retirement, ...]:
    """Retire prior verbatim questions that both speakers have written after (see the rules)."""
    segment = request.segment
    speakers = {
        info.role
        for info, message in zip(segment.infos, segment.messages, strict=True)
        if info.role in ("user", "assistant") and message_text(message)
    }
    if speakers != {"user", "assistant"}:
        return ()
    reason = f"answered: both speakers wrote after it (messages {segment.start}-{segment.end - 1})"
    return tuple(
        Retirement(id=item.id, reason=reason)
        for item in getattr(request.prior, field)
        if item.text.endswith("?")
        and item.source[1] - item.source[0] == 1
        and item.source[1] <= segment.start
    )
