"""Which old tool data the engine clears or clips before it asks a summarizer for anything."""

from __future__ import annotations

from dataclasses import dataclass

from progsum.errors import ConfigError

__all__ = ["DEFAULT_CLIP_SHARE", "Reduction"]


DEFAULT_CLIP_SHARE = 0.15
"""A message above 15% of the input window is clipped in the model view (the same share the
summary header may take)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reduction:
    """Which old tool data the engine clears before it summarizes.

    Example:
        ``Compactor(policy=..., reduction=Reduction(min_chars=500, tools={"read_file"}))``;
        ``reduction=None`` turns the stage off.
    """

    min_chars: int = 2_000
    """Tool results and tool-call inputs shorter than this stay whole."""
    keep_results: int = 2
    """The most recent tool results of the conversation (the verbatim tail's included) stay
    whole, however large."""
    tools: frozenset[str] | None = None
    """Only these tools' data is cleared (None: every tool's)."""
    inputs: bool = True
    """Clear large tool-call inputs too (file contents an agent wrote, long commands)."""
    clip_share: float = DEFAULT_CLIP_SHARE
    """Per-message limit, as a share of the input window (of the trigger when the window is
    unknown): a text, tool result or tool input above it is clipped to its head and tail in the
    model view, wherever it is (first message and tail included); thinking is never clipped."""
    clip_at_ingest: bool = False
    """Clip oversized messages on every ``maybe_compact`` call, not only when a compaction is
    due."""

    def __post_init__(self) -> None:
        """Validate the settings.

        Raises:
            ConfigError: a setting is out of range.
        """
        if isinstance(self.min_chars, bool) or not isinstance(self.min_chars, int):
            raise ConfigError(f"min_chars={self.min_chars!r} must be a whole number of characters")
        if self.min_chars < 1:
            raise ConfigError(f"min_chars={self.min_chars} must be 1 or more, e.g. 2000")
        if isinstance(self.keep_results, bool) or not isinstance(self.keep_results, int):
            raise ConfigError(f"keep_results={self.keep_results!r} must be a whole number")
        if self.keep_results < 0:
            raise ConfigError(f"keep_results={self.keep_results} must be 0 or more")
        share = self.clip_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ConfigError(
                f"clip_share={share!r} must be a share of the window in (0, 1], e.g. "
                f"{DEFAULT_CLIP_SHARE}"
            )
        if self.tools is not None:
            if isinstance(self.tools, str) or not all(isinstance(t, str) for t in self.tools):
                raise ConfigError(
                    f"tools={self.tools!r} must be a set of tool names, e.g. {{'read_file'}}"
                )
            object.__setattr__(self, "tools", frozenset(self.tools))
