"""The implementation of `progsum.testing.snapshot` (see its docstring)."""

from __future__ import annotations

try:
    import pytest
    from syrupy.assertion import SnapshotAssertion
    from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
except ImportError as exc:
    raise ImportError(
        f"progsum.testing.snapshot is a syrupy plugin and needs {exc.name or 'syrupy'}, which is "
        "not installed; install the snapshot kit with python -m pip install 'progsum[snapshot]'"
    ) from exc

__all__ = ["MarkdownSnapshotExtension", "snapshot_md"]


class MarkdownSnapshotExtension(SingleFileSnapshotExtension):
    """One ``.md`` file per snapshot, so a rendered header reads like the product in review."""

    file_extension = "md"
    _write_mode = WriteMode.TEXT


@pytest.fixture
def snapshot_md(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """A snapshot stored as a Markdown file (`MarkdownSnapshotExtension`)."""
    return snapshot.use_extension(MarkdownSnapshotExtension)
