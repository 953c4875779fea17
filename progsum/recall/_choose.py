"""Which excerpts a block quotes: the best folded messages while they fit, each with its reply.

`choose` walks the ranked messages (BM25, `progsum.recall._rank`) best first. A message is quoted
while the block fits its budget and the message scores at least `RELEVANCE` of the best one (a
message far below it matches only the question's weaker words); no count of excerpts is fixed,
so the block is as large as what the question points to, within the room the request has. A
recalled message that asks a question brings the message that answers it, quoted right after it
(the caller says which that is: `progsum.engine._recall`): "What pizza topping do you order?"
matches a question about pizza, and "Pepperoni, of course!" is the answer, sharing no word with
it. A long message gives its best passage (`progsum.recall._excerpt.passage`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

from progsum.recall._excerpt import Excerpt, passage
from progsum.recall._terms import terms

__all__ = [
    "BLOCK_OVERHEAD",
    "EXCERPT_OVERHEAD",
    "EXCERPT_SHARE",
    "MAX_EXCERPTS",
    "MIN_EXCERPT",
    "RELEVANCE",
    "choose",
]

RELEVANCE = 0.4
"""Least share of the best message's score a message needs to be quoted."""
MAX_EXCERPTS = 64
"""Excerpts in one block at most: a bound on the work, above what a budget holds in practice."""
EXCERPT_SHARE = 0.5
"""Share of the budget one excerpt may take: a long message gives its best passage."""
EXCERPT_OVERHEAD = 20
"""Estimated tokens of one excerpt's delimiters (message number, speaker, date)."""
BLOCK_OVERHEAD = 45
"""Estimated tokens of the block's own opening and closing (the block is counted whole after)."""
MIN_EXCERPT = 16
"""Estimated tokens an excerpt's text is worth quoting at least."""


def choose(
    ranked: Sequence[tuple[int, float]],
    query: Sequence[str],
    budget: int,
    *,
    text: Callable[[int], str],
    count: Callable[[str], int],
    reply: Callable[[int], int | None],
    skip: Collection[int] = (),
    said: Collection[tuple[str, ...]] = (),
) -> tuple[Excerpt, ...]:
    """Excerpts of the ``ranked`` messages, best first, while their estimate fits ``budget``.

    ``text`` gives a message's text (`progsum.recall._terms.document`), ``count`` its estimated
    tokens, ``reply`` the message that answers it, if it asks one. Messages in ``skip`` (quoted
    by a block still in view) are passed over, and so is a message that says what one of
    ``said`` says (the asking message's terms, in order) or what a chosen one says.
    """
    if not ranked:
        return ()
    floor = RELEVANCE * ranked[0][1]
    chosen: list[Excerpt] = []
    taken: set[int] = set()
    seen = set(said)
    used = BLOCK_OVERHEAD
    for index, score in ranked:
        if score <= 0 or score < floor or budget - used - EXCERPT_OVERHEAD < MIN_EXCERPT:
            break
        answer = reply(index)
        for at in (index,) if answer is None else (index, answer):
            room = min(budget - used, math.floor(budget * EXCERPT_SHARE)) - EXCERPT_OVERHEAD
            if at in skip or at in taken or room < MIN_EXCERPT:
                continue
            excerpt, cost = _excerpt(at, text(at), query, room, count, seen)
            if excerpt is None or used + cost > budget:
                continue
            chosen.append(excerpt)
            taken.add(at)
            used += cost
        if len(chosen) >= MAX_EXCERPTS:
            break
    return tuple(chosen)


def _excerpt(  # noqa: PLR0917 - one message's part of `choose`
    at: int,
    text: str,
    query: Sequence[str],
    room: int,
    count: Callable[[str], int],
    seen: set[tuple[str, ...]],
) -> tuple[Excerpt | None, int]:
    """Message ``at``'s excerpt within ``room`` tokens, and its cost with its delimiters.

    None when its words were said already (``seen`` learns them) or no passage fits.
    """
    words = tuple(terms(text))
    if words in seen:
        return None, 0
    seen.add(words)
    whole = count(text)
    tokens = max(1, whole)
    limit = len(text) if tokens <= room else math.floor(len(text) * room / tokens)
    start, stop = passage(text, query, limit)
    if stop <= start:
        return None, 0
    shown = whole if start == 0 and stop == len(text) else count(text[start:stop])
    return Excerpt(at, start, stop), shown + EXCERPT_OVERHEAD
