"""Where to split the history: the kept head, the segment to fold, and the verbatim tail.

Pure functions over the per-message infos and running token totals. A cut never separates a tool
call from its results (parallel calls included), never starts the tail with a tool result, and never
strips an ongoing assistant turn of its thinking. When the natural cut is unsafe the tail grows
(keep more, not less). Long tool-only stretches still cut, between complete tool rounds.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from progsum.messages import MessageInfo, is_safe_cut
from progsum.policy import Unit

__all__ = ["find_cut", "head_end", "is_safe_cut"]


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
    unit, amount = keep
    if unit == "messages":
        natural = length - amount
    else:
        # latest j whose suffix log[j:] holds at least `amount` tokens
        natural = bisect.bisect_right(totals, totals[length] - amount, 0, length + 1) - 1
    cut = min(natural, length - 1)
    while cut > low and not is_safe_cut(infos, cut):
        cut -= 1
    return cut if cut > low else None
