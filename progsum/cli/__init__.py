"""The ``progsum`` command line; its entry point is `progsum.cli.main.main`."""
