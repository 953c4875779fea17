"""Syrupy support for progsum headers: one readable Markdown file per snapshot.

Needs ``syrupy`` and ``pytest``: ``python -m pip install 'progsum[snapshot]'``. In your
``conftest.py``::

    pytest_plugins = ["progsum.testing.snapshot"]

then a test takes the ``snapshot_md`` fixture and compares a rendered header with
``assert state.header == snapshot_md``. Run ``pytest --snapshot-update`` once to write the
``__snapshots__/<test file>/<test name>.md`` files, review them like any diff, and commit them.
"""

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
