"""Public import path of the summarizer's update types (defined in `progsum.summary.update`)."""

from progsum.summary.update import NewItem, Retirement, SummarizerUsage, SummaryUpdate

__all__ = ["NewItem", "Retirement", "SummarizerUsage", "SummaryUpdate"]
