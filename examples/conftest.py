"""The snapshot_md fixture (Markdown snapshots of rendered headers) for the example tests."""

pytest_plugins = ["progsum.testing.snapshot"]
