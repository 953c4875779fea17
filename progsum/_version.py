"""The package version (read by hatch and by spans and CLI output)."""

__version__ = "0.1.0"
