"""Syrupy support for progsum headers: one readable Markdown file per snapshot.

Needs ``syrupy`` and ``pytest``: ``python -m pip install 'progsum[snapshot]'``. In your
``conftest.py``::

    pytest_plugins = ["progsum.testing.snapshot"]

then a test takes the ``snapshot_md`` fixture and compares a rendered header with
``assert state.header == snapshot_md``. Run ``pytest --snapshot-update`` once to write the
``__snapshots__/<test file>/<test name>.md`` files, review them like any diff, and commit them.
"""

from progsum.testing._snapshot import MarkdownSnapshotExtension, snapshot_md

__all__ = ["MarkdownSnapshotExtension", "snapshot_md"]
