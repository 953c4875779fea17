"""``recall``: the original messages behind the summary, read back for the agent's model.

The `progsum.tools._conversation` handler validates a call and picks one of `recall_item` (the
messages an item or a retired item was folded from), `recall_range` (message numbers, 1-based and
inclusive, as the header counts them) or `recall_search` (text, compared after the stores' one
folding, `progsum.store._archive.fold`). Each reads the archive first (by the state's thread id)
and the log for the rest, and answers in text bounded by a character budget, with a closing note
giving the exact next call when something was cut. A bad request raises `CallError`, which the
handler turns into an error result for the model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from progsum.errors import ArchiveError
from progsum.judge._values import exact_values
from progsum.messages._formats import Message
from progsum.messages._transcript import CLIP_MARKER, clip, escape, render_segment, source_text
from progsum.state._conversation import ConversationState
from progsum.store._archive import Archive, fold
from progsum.summary._schema import BaseSummary, Item, spec_of

__all__ = [
    "LISTED_IDS",
    "MAX_MAX_CHARS",
    "MIN_MAX_CHARS",
    "RECALL_TOOL",
    "CallError",
    "Reader",
    "plural",
    "recall_item",
    "recall_range",
    "recall_search",
    "span",
]

RECALL_TOOL = "recall"
MIN_MAX_CHARS, MAX_MAX_CHARS = 1_000, 20_000
"""Bounds of ``recall``'s ``max_chars`` argument."""
_NOTE_ROOM = 300
"""Characters kept free in a ``recall`` answer for its closing note."""
_SEARCH_SCAN = 500
"""Most archive matches a search reads before filtering them by their visible text."""
LISTED_IDS = 40
"""Most item ids an answer lists (unknown item; items a compaction added)."""


class CallError(Exception):
    """A tool call the handler answers with an error result.

    It never leaves `progsum.tools._conversation`.
    """


class Reader:
    """Reads messages by log index: the archive first (when it has the thread), then the log."""

    def __init__(self, state: ConversationState[Any], archive: Archive | None) -> None:
        self.state = state
        self.archive = archive if state.thread_id is not None else None
        self.warning = ""

    @property
    def length(self) -> int:
        """Messages in the conversation's log."""
        return len(self.state)

    @property
    def folded(self) -> tuple[int, int]:
        """Log range ``[start, end)`` of the messages compressed into the summary."""
        state = self.state
        return (state.head_end, state.cutoff) if state.cutoff else (0, 0)

    def get(self, start: int, end: int) -> list[tuple[int, Message]]:
        """``(index, message)`` pairs for ``start <= index < end``, in log order."""
        found: dict[int, Message] = {}
        if self.archive is not None:
            try:
                for entry in self.archive.get(str(self.state.thread_id), start, end):
                    found[entry.index] = entry.message
            except ArchiveError as error:
                self._failed(error)
        log = self.state.log
        for index in range(start, min(end, len(log))):
            found.setdefault(index, log[index])
        return sorted(found.items())

    def search(self, query: str) -> list[tuple[int, Message]]:
        """Compressed (or archived) messages whose visible text contains ``query``."""
        needle = fold(query)
        found: dict[int, Message] = {}
        if self.archive is not None:
            try:
                hits = self.archive.search(str(self.state.thread_id), query, limit=_SEARCH_SCAN)
            except ArchiveError as error:
                self._failed(error)
                hits = []
            for entry in hits:
                if needle in fold(source_text([entry.message])):
                    found[entry.index] = entry.message
        start, end = self.folded
        log = self.state.log
        for index in range(start, end):
            if index not in found and needle in fold(source_text([log[index]])):
                found[index] = log[index]
        return sorted(found.items())

    def _failed(self, error: ArchiveError) -> None:
        self.warning = f"(The archive could not be read, so the log was used: {error}.)\n"


def _items(summary: BaseSummary | None) -> Iterator[tuple[str, Item, str]]:
    """Every item of the summary and its tombstones, with a label for each."""
    if summary is None:
        return
    for spec in spec_of(type(summary)).lists:
        label = f"{spec.label} (binding)" if spec.binding else spec.label
        for item in getattr(summary, spec.name):
            yield item.id, item, label
    for tomb in summary.retired:
        label = (
            f"{_field_label(summary, tomb.field)}, retired by compaction {tomb.compaction} "
            f"({tomb.reason})"
        )
        yield tomb.item.id, tomb.item, label


def _field_label(summary: BaseSummary, name: str) -> str:
    for spec in spec_of(type(summary)).lists:
        if spec.name == name:
            return spec.label
    return name


def recall_item(reader: Reader, wanted: str, budget: int) -> str:
    """The messages item ``wanted`` (live or retired) was folded from, within ``budget`` chars.

    Raises:
        CallError: no such item; the message lists the ids there are.
    """
    known = list(_items(reader.state.summary))
    if not known:
        raise CallError(
            f"there is no item {wanted!r}: nothing has been compressed yet, so the summary has "
            "no items; every message is still in your context"
        )
    matches = [k for k in known if k[0] == wanted] or [
        k for k in known if k[0].casefold() == wanted.casefold()
    ]
    if not matches:
        ids = [k[0] for k in known]
        listed = ", ".join(ids[:LISTED_IDS]) + (", …" if len(ids) > LISTED_IDS else "")
        raise CallError(f"there is no item {wanted!r}; the summary's item ids are {listed}")
    item_id, item, label = matches[0]
    start, end = item.source
    taken = f"[{item_id}] {escape(label)}: {escape(item.text)}\nTaken from {span(start, end)}"
    heading = f"{taken}:\n"
    pairs = reader.get(start, end)
    room = budget - len(heading) - len(reader.warning) - _NOTE_ROOM
    if not _fits(pairs, room):
        closest = _closest(pairs, item.text, room)
        if closest:
            heading = (
                f"{taken}; below are those closest to the item (read any other with "
                f"{RECALL_TOOL} first/last):\n"
            )
            return reader.warning + _page(closest, heading, budget - len(reader.warning), None)
    return reader.warning + _page(pairs, heading, budget - len(reader.warning), (start, end))


def _fits(pairs: Sequence[tuple[int, Message]], room: int) -> bool:
    """Whether `_page` can show every message of ``pairs`` in ``room`` characters."""
    clip_chars = room if len(pairs) == 1 else max(room // 3, 200)
    used = 0
    for index, message in pairs:
        used += len(_block(index, message, clip_chars)) + 2
        if used > room:
            return False
    return True


def _closest(
    pairs: Sequence[tuple[int, Message]], text: str, room: int
) -> list[tuple[int, Message]]:
    """The messages sharing most of ``text``'s values and words that fit in ``room``, in order."""
    values = [v.casefold() for v in exact_values(text)]
    words = {w for w in re.findall(r"\w{4,}", text.casefold()) if not w.isdigit()}

    def score(pair: tuple[int, Message]) -> int:
        seen = source_text([pair[1]]).casefold()
        return 3 * sum(v in seen for v in values) + sum(w in seen for w in words)

    scored = [(score(pair), pair) for pair in pairs]
    ranked = sorted((p for p in scored if p[0] > 0), key=lambda p: (-p[0], p[1][0]))
    chosen: list[tuple[int, Message]] = []
    used = 0
    for _, (index, message) in ranked:
        cost = len(_block(index, message, max(room // 3, 200))) + 2
        if used + cost > room and chosen:
            break
        chosen.append((index, message))
        used += cost
    return sorted(chosen, key=lambda pair: pair[0])


def recall_range(reader: Reader, first: int, last: int | None, budget: int) -> str:
    """Messages ``first``-``last`` (1-based, inclusive; ``last`` None: to the end).

    Raises:
        CallError: the range is outside the conversation or reversed.
    """
    length = reader.length
    end = length if last is None else last
    if first > length or end > length:
        bad = f"first={first}" if first > length else f"last={end}"
        raise CallError(f"{bad} is past the end; this conversation has messages 1-{length}")
    if first > end:
        raise CallError(f"first={first} is after last={end}; give first <= last")
    heading = f"{span(first - 1, end).capitalize()}:\n"
    pairs = reader.get(first - 1, end)
    return reader.warning + _page(pairs, heading, budget - len(reader.warning), (first - 1, end))


def recall_search(reader: Reader, query: str, budget: int) -> str:
    """The compressed messages whose visible text contains ``query`` (case-insensitive)."""
    start, end = reader.folded
    quoted = escape(repr(query))
    if reader.archive is None and end == 0:
        return (
            f"No message contains {quoted} outside your context: nothing has been compressed "
            "yet, so every message is still in your context."
        )
    hits = reader.search(query)
    if not hits:
        where = f"messages {start + 1}-{end}" if end else "the archive"
        return reader.warning + (
            f"No compressed message contains {quoted} (searched {where}, case-insensitive). "
            "Try a shorter query or one distinctive word, or read a range with first and last."
        )
    verb = "contains" if len(hits) == 1 else "contain"
    heading = (
        f'{plural(len(hits), "compressed message")} {verb} "{escape(query)}" (case-insensitive):\n'
    )
    room = budget - len(heading) - len(reader.warning) - _NOTE_ROOM
    per_hit = max(room // min(len(hits), 4), 200)
    blocks: list[str] = []
    used = 0
    for index, message in hits:
        block = _excerpt(_block(index, message, per_hit), query, per_hit)
        if used + len(block) + 2 > room:
            break
        blocks.append(block)
        used += len(block) + 2
    shown = len(blocks)
    text = reader.warning + heading + "\n\n".join(blocks)
    if shown < len(hits):
        rest = [str(i + 1) for i, _ in hits[shown:]]
        listed = ", ".join(rest[:20]) + (", …" if len(rest) > 20 else "")  # noqa: PLR2004
        text += (
            f"\n\n[{len(hits) - shown} more matches, in messages {listed}: read them with "
            f"{RECALL_TOOL} first/last, or use a more specific query.]"
        )
    elif any(block.endswith("…\n</message>") for block in blocks):
        text += (
            f"\n\n[Long messages are shown around the match; read one whole with {RECALL_TOOL} "
            "first=N, last=N.]"
        )
    return text


def _block(index: int, message: Message, clip_chars: int) -> str:
    """One message as delimited text, numbered from 1, tool data clipped to ``clip_chars``."""
    return render_segment([(index + 1, message)], clip_chars=clip_chars)


def _excerpt(block: str, query: str, width: int) -> str:
    """``block`` cut to about ``width`` characters around the first match of ``query``."""
    if len(block) <= width:
        return block
    opening, _, rest = block.partition("\n")
    body = rest.removesuffix("\n</message>")
    at = body.casefold().find(query.casefold())
    if at < 0:
        return clip(block, width)
    half = max((width - len(query)) // 2, 40)
    start, stop = max(0, at - half), min(len(body), at + len(query) + half)
    lead = "…" if start else ""
    trail = "…" if stop < len(body) else ""
    return f"{opening}\n{lead}{body[start:stop]}{trail}\n</message>"


def _page(
    pairs: Sequence[tuple[int, Message]],
    heading: str,
    budget: int,
    span: tuple[int, int] | None,
) -> str:
    """The messages in order while they fit in ``budget``, with a note on how to read the rest."""
    if not pairs:
        return heading + "(no messages)"
    room = budget - len(heading) - _NOTE_ROOM
    clip_chars = room if len(pairs) == 1 else max(room // 3, 200)
    blocks: list[str] = []
    notes: list[str] = []
    used = 0
    for index, message in pairs:
        block = _block(index, message, clip_chars)
        if used + len(block) + 2 <= room:
            blocks.append(block)
            used += len(block) + 2
            continue
        if not blocks:  # not even the first message fits: show it clipped
            blocks.append(clip(block, room - len(CLIP_MARKER) - 10))
            number = index + 1
            more = (
                f" with max_chars={MAX_MAX_CHARS:,} to read more of it"
                if budget < MAX_MAX_CHARS
                else "; this is as much of one message as recall shows"
            )
            notes.append(
                f"[Message {number} was clipped to fit; call {RECALL_TOOL} first={number}, "
                f"last={number}{more}.]"
            )
        break
    if len(blocks) < len(pairs) and span is not None:
        following = pairs[len(blocks)][0] + 1
        notes.append(
            f"[Shown: messages {span[0] + 1}-{following - 1} of {span[0] + 1}-{span[1]}. For "
            f"the rest call {RECALL_TOOL} with first={following}, last={span[1]}.]"
        )
    return heading + "\n\n".join(blocks) + "".join(f"\n\n{note}" for note in notes)


def plural(n: int, noun: str) -> str:
    """``"1 item"``, ``"2 items"``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def span(start: int, end: int) -> str:
    """Log range ``[start, end)`` in the header's words: "message 3" or "messages 3-7"."""
    return f"message {end}" if end - start == 1 else f"messages {start + 1}-{end}"
