"""Public import path of the summarizer's update types (defined in `progsum.summary._update`)."""

from progsum.summary._update import NewItem, Retirement, SummarizerUsage, SummaryUpdate

__all__ = ["NewItem", "Retirement", "SummarizerUsage", "SummaryUpdate"]
