"""Syrupy extensions for progsum's snapshots: rendered headers as readable Markdown files."""

from __future__ import annotations

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode


class MarkdownSnapshotExtension(SingleFileSnapshotExtension):
    """One ``.md`` file per snapshot, so a rendered header reads like the product in review."""

    file_extension = "md"
    _write_mode = WriteMode.TEXT
