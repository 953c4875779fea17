"""The ``progsum`` command line (``progsum --help``, docs/cli.md); ``python -m progsum`` runs it.

A command, not a Python API: `progsum.cli.main.main` is its entry point (``pyproject.toml``).

Internal: the modules here are private (underscore names) and may change; run the command.
"""

__all__: list[str] = []
