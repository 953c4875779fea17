"""Where to split the history: the kept head, the segment to fold, and the verbatim tail.

Pure functions over the per-message infos and running token totals. A cut never separates a tool
call from its results (parallel calls included), never starts the tail with a tool result, and never
strips an ongoing assistant turn of its thinking. When the natural cut is unsafe the tail grows
(keep more, not less). Long tool-only stretches still cut, between complete tool rounds.

Inside a tool cycle with thinking, `plan_cut` may also cut at any round boundary by *pinning* the
turn's opening round (its first assistant message, thinking included, and that message's results)
in front of the tail, so the visible turn still opens with its thinking (docs/thinking-rules.md,
rule T3). The rounds between are folded.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import NamedTuple

from progsum.messages._formats import MessageInfo, is_safe_cut
from progsum.policy._policy import Unit

__all__ = [
    "Cut",
    "find_cut",
    "head_end",
    "is_safe_cut",
    "opening_round",
    "plan_cut",
    "tail_start",
]


class Cut(NamedTuple):
    """Where the verbatim tail starts, and the opening round kept in view in front of it."""

    at: int
    """Log index of the tail's first message."""
    pinned: tuple[int, int] | None
    """Log range ``[start, end)`` of the pinned opening round, or None."""


def head_end(infos: Sequence[MessageInfo], *, keep_first: bool) -> int:
    """Length of the head that stays in front forever.

    The head is the leading system messages (OpenAI) and, with ``keep_first``, everything up to and
    including the first user message that is not a tool result (the task).
    """
    leading = 0
    while leading < len(infos) and infos[leading].role == "system":
        leading += 1
    if not keep_first:
        return leading
    for index in range(leading, len(infos)):
        if infos[index].is_human:
            return index + 1
    return leading


def find_cut(
    infos: Sequence[MessageInfo],
    totals: Sequence[int],
    *,
    low: int,
    keep: tuple[Unit, int],
) -> int | None:
    """The log index where the verbatim tail starts, or None when nothing can be folded.

    Args:
        infos: Per-message infos of the whole log.
        totals: Running token totals (``totals[j] - totals[i]`` estimates ``log[i:j]``).
        low: First foldable index (after the head and the previous cutoff).
        keep: The minimum tail, ``("messages", n)`` or ``("tokens", n)``.

    Returns:
        The latest safe ``j`` with ``low < j`` that keeps at least ``keep`` verbatim, or None.
    """
    length = len(infos)
    cut = min(tail_start(totals, length, keep), length - 1)
    while cut > low and not is_safe_cut(infos, cut):
        cut -= 1
    return cut if cut > low else None


def opening_round(
    infos: Sequence[MessageInfo], j: int, *, floor: int = 0
) -> tuple[int, int] | None:
    """The opening round ``[start, end)`` of the assistant turn that message ``j`` continues.

    The round is the turn's first assistant message (with, for Responses items, the function calls
    after its reasoning item) and the result messages right after it.
    None when the turn starts before ``floor`` or ``j`` is no continuation of a turn.
    """
    k = j - 1
    while k >= floor and not (infos[k].is_human or infos[k].role == "system"):
        k -= 1
    if k >= 0 and not (infos[k].is_human or infos[k].role == "system"):
        return None  # the turn began before floor, inside the folded part
    start = k + 1
    if start >= j or infos[start].role != "assistant":
        return None
    end = start + 1
    while end < j and infos[end].role == "assistant":
        end += 1  # Responses items: what follows the reasoning item (calls, a message) goes with it
    while end < j and infos[end].is_result:
        end += 1
    return (start, end)


def tail_start(totals: Sequence[int], length: int, keep: tuple[Unit, int]) -> int:
    """First log index of the tail ``keep`` measures, before any cut-safety widening.

    ``("messages", n)``: the last ``n`` messages; ``("tokens", n)``: the latest start whose
    suffix ``log[j:]`` holds at least ``n`` tokens.
    """
    unit, amount = keep
    if unit == "messages":
        return max(0, length - amount)
    return max(0, bisect.bisect_right(totals, totals[length] - amount, 0, length + 1) - 1)


def plan_cut(
    infos: Sequence[MessageInfo],
    totals: Sequence[int],
    *,
    low: int,
    head: int,
    keep: tuple[Unit, int],
) -> Cut | None:
    """The latest cut after ``low`` that keeps at least ``keep`` verbatim, pinned if it must be.

    A cut is either *classic* (`is_safe_cut`) or *pinned*: it starts the tail at an assistant
    message that continues a turn with thinking, right after a complete round, and the turn's
    opening round (at or after ``head``, the end of the kept head) stays in view.

    Args:
        infos: Per-message infos of the whole log.
        totals: Running token totals.
        low: First foldable index (after the head and the previous cutoff).
        head: End of the kept head; a pinned round lies at or after it.
        keep: The minimum tail, ``("messages", n)`` or ``("tokens", n)``.
    """
    length = len(infos)
    j = min(tail_start(totals, length, keep), length - 1)
    opener: tuple[int, int] | None = None
    while j > low:
        info = infos[j]
        if not info.is_result:
            if is_safe_cut(infos, j):
                return Cut(j, None)
            if opener is None or not opener[0] < j:
                opener = opening_round(infos, j, floor=head)
            if opener is not None and opener[1] <= j and infos[j - 1].is_result:
                return Cut(j, opener)
        j -= 1
    return None
