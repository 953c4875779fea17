"""The extractive summarizer itself: its bounds, and one update from the stages of the package."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from progsum.errors import ConfigError
from progsum.judge._judgement import Kind
from progsum.judge._seam import conversation
from progsum.summarizers.extractive._candidates import Candidate, candidates
from progsum.summarizers.extractive._notes import grouped
from progsum.summarizers.extractive._retirement import answered_threads
from progsum.summarizers.extractive._routing import note_fields, routes
from progsum.summarizers.extractive._selection import (
    Known,
    Prior,
    Said,
    fit,
    prose_size,
    select,
)
from progsum.summary._request import SummaryRequest
from progsum.summary._update import NewItem, SummaryUpdate

__all__ = [
    "DEFAULT_CHAT_MAX_SHARE",
    "DEFAULT_MAX_PER_FIELD",
    "DEFAULT_MAX_SHARE",
    "ExtractiveSummarizer",
]

DEFAULT_MAX_PER_FIELD = 8
"""New items per field and update: enough for a busy segment, small enough to keep headers short."""

DEFAULT_MAX_SHARE = 0.35
"""In an agent's conversation, new items of non-binding fields fill at most 35% of the characters
of the segment's prose, so a compaction always frees tokens. With salience choosing what fills it,
0.35 keeps as many facts as 0.5 did at the same final size on MSC and MemoryBank
(bench/retention.py) and compacts the README's trip 2.1x instead of 1.7x."""
DEFAULT_CHAT_MAX_SHARE = 0.6
"""In a chat between people (`progsum.judge._seam.conversation`), new notes fill at most 60% of the
segment's prose. A chat's facts are its point, and its header has half the window
(`progsum.policy._policy.DEFAULT_CHAT_HEADER_SHARE`): the fold notes what the judge finds worth
noting, and consolidation keeps the notes that tell most per character within the header budget
(`progsum.contract._consolidation.in_order`), choosing among more of them. On MSC and MemoryBank
0.6 keeps what no share at all keeps, within two probes, and a fold still frees at least 40% of
its prose before consolidation (bench/retention.md has the figures)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractiveSummarizer:
    """A deterministic summarizer that copies the segment's telling sentences into the schema.

    No model, no network: the offline default and the last resort of a fallback chain. See
    `progsum.summarizers.extractive` for the rules.

    Example:
        ``Compactor(policy=Policy(context_window=8_000), summarizer=ExtractiveSummarizer())``
    """

    max_per_field: int | None = None
    """New items per field in one update at most; None (the default): no count, the most salient
    sentences fill the share (see the rules)."""
    max_share: float | None = None
    """Characters of new non-binding items, as a share of the segment's prose characters (0 to 1];
    binding items (constraints, decisions) are kept whatever their length. None (the default):
    `DEFAULT_MAX_SHARE` in an agent's conversation, `DEFAULT_CHAT_MAX_SHARE` in a chat."""
    _prior: Prior = field(default_factory=Prior, init=False, repr=False, compare=False)
    """The prior summary it read last, indexed: the next fold's differs by a few items."""

    def __post_init__(self) -> None:
        bound = self.max_per_field
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, int) or bound < 1
        ):
            raise ConfigError(
                f"max_per_field={bound!r} must be a whole number of at least 1, or None (no "
                f"count); use e.g. max_per_field={DEFAULT_MAX_PER_FIELD}"
            )
        share = self.max_share
        if share is not None and (
            isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1
        ):
            raise ConfigError(
                f"max_share={share!r} must be a share of the segment's prose above 0 and at "
                f"most 1, or None (the default for the conversation); use e.g. "
                f"max_share={DEFAULT_MAX_SHARE}"
            )

    def share_in(self, kind: Kind) -> float:
        """The share of a segment's prose new notes may take in a conversation of ``kind``."""
        if self.max_share is not None:
            return self.max_share
        return DEFAULT_CHAT_MAX_SHARE if kind == "chat" else DEFAULT_MAX_SHARE

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """New items for ``request.segment``, sorted into the schema's fields by the judge."""
        spec = request.spec
        table = routes(spec)
        with self._prior.lock:
            self._prior.read(request.prior, spec)
            by_field: dict[str, list[Candidate]] = {}
            for candidate in candidates(request, table, note_fields(spec), self._prior.words):
                by_field.setdefault(candidate.field, []).append(candidate)
            said = Known(over=self._prior.known)
            picked: dict[str, list[Candidate]] = {}
            for f in spec.lists:  # in schema order: a sentence chosen for one field is not repeated
                chosen = select(by_field.get(f.name, ()), said, self.max_per_field)
                picked[f.name] = chosen
                for c in chosen:
                    said.add(Said.of(c.field, c.text))
        binding = frozenset(f.name for f in spec.binding)
        room = self.share_in(conversation()) * prose_size(request.segment)
        kept = fit(picked, binding, room)
        add: dict[str, tuple[str | NewItem, ...]] = {
            name: tuple(grouped(items)) for name, items in kept.items() if items
        }
        questions = table.get("questions")
        retire = answered_threads(request, questions) if questions else ()
        return SummaryUpdate(add=add, retire=retire)

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Async `summarize` (the work is pure and fast, so it runs inline)."""
        return self.summarize(request)
