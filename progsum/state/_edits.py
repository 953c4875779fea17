"""Where progsum changed what a request had already sent: the prefix edits of a conversation.

Between two compactions every request renders the previous request's messages byte for byte and
appends (DESIGN invariant 7). What changes an already sent request is recorded here, so that a
renderer can tell which reasoning the provider still accepts:

* a **fold** (a compaction that folds messages, consolidates or repairs the summary) rewrites the
  header in ``system`` and drops messages: every message logged before it was sent under another
  prefix;
* a **reduction** between folds (old tool data cleared, or a message clipped after it was sent)
  changes one message: the messages after it that were logged before the reduction were sent
  under another prefix.

On models with preserved thinking (Anthropic's "Preserved thinking": a thinking block is bound to
the ``system``, ``tools`` and messages before it, and a block whose prefix changed, and every later
one, is refused or dropped) and preserved reasoning (OpenAI's "Keep the prefix unchanged":
reasoning items after a prefix change are dropped), a block or item in such a message no longer
counts: `Edits.stale` names those messages. Messages logged after an edit were produced by
requests that already carried it, so they stay valid until the next one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from progsum.errors import ConfigError

__all__ = ["NO_EDITS", "Edits"]


@dataclass(frozen=True, slots=True)
class Edits:
    """The prefix edits since the last fold, as log positions.

    ``folded_at`` is the log length when the last fold happened (0: none yet). ``spans`` holds one
    ``(position, length)`` per reduction since: log message ``position`` changed when the log had
    ``length`` messages, so the messages between them were sent under the old bytes.
    """

    folded_at: int = 0
    spans: tuple[tuple[int, int], ...] = ()

    def stale(self, index: int) -> bool:
        """Whether log message ``index`` was produced under a prefix progsum has since changed."""
        if index < self.folded_at:
            return True
        return any(position < index < length for position, length in self.spans)

    def stale_indices(self, indices: Iterable[int]) -> frozenset[int]:
        """The stale ones of ``indices``."""
        return frozenset(i for i in indices if self.stale(i))

    def folded(self, length: int) -> Edits:
        """These edits after a fold at log length ``length``: every earlier message is stale."""
        return Edits(max(self.folded_at, length))

    def changed(self, position: int, length: int) -> Edits:
        """These edits after log message ``position`` changed at log length ``length``.

        A change of the newest message (``position == length - 1``: it was not sent yet) makes
        nothing stale and is not recorded.
        """
        if position >= length - 1:
            return self
        return Edits(self.folded_at, (*self.spans, (position, length)))

    def to_data(self) -> dict[str, Any]:
        """JSON data (`from_data` reads it back)."""
        return {"folded_at": self.folded_at, "spans": [list(s) for s in self.spans]}

    @classmethod
    def from_data(cls, data: object, length: int) -> Edits:
        """The edits of a stored state of ``length`` messages.

        Raises:
            ConfigError: the data is damaged or does not fit the log.
        """
        try:
            assert isinstance(data, dict)  # noqa: S101 - caught below with the rest
            folded_at = int(data["folded_at"])
            spans = tuple((int(p), int(n)) for p, n in data["spans"])
        except (AssertionError, KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"the state's prefix edits do not validate: {exc!r}; pass what "
                "ConversationState.to_dict() wrote"
            ) from exc
        if not 0 <= folded_at <= length or any(
            not 0 <= p < n <= length or n < folded_at for p, n in spans
        ):
            raise ConfigError(
                f"the state's prefix edits (folded at {folded_at}, spans {list(spans)}) do not "
                f"fit its {length}-message log"
            )
        return cls(folded_at, spans)


NO_EDITS = Edits()
"""A conversation progsum has not changed."""
