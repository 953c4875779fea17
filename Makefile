# One entry point for humans and CI (.ci/run calls `make lint types`). Run inside a virtual
# environment with the dev extra installed: python -m pip install -e ".[dev]"
PYTHON ?= python

.PHONY: check test lint types bench ci

check: lint types test

test:
	$(PYTHON) -m pytest

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

types:
	$(PYTHON) -m mypy

bench:
	$(PYTHON) bench/bench_engine.py

ci:
	.ci/run
