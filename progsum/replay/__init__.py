"""Replaying saved conversations: importers of transcript formats and retention probes.

The command line's ``progsum replay`` uses them (docs/replay.md).

Internal: the modules here are private (underscore names) and may change; use the ``progsum``
command.
"""

__all__: list[str] = []
