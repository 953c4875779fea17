# One entry point for humans and CI (.ci/run calls `make lint types`). Run inside a virtual
# environment with the dev extra and, for `types` over progsum/integrations, the framework extras:
# python -m pip install -e ".[dev,langchain,pydantic-ai,openai-agents]"
PYTHON ?= python

.PHONY: check test test-slow lint types bench ci

check: lint types test

test:
	$(PYTHON) -m pytest -n auto

# What `test` leaves out (pyproject.toml's markers): the bench-script tests and the long property
# runs. .ci/run runs them in a step of their own.
test-slow:
	$(PYTHON) -m pytest -n auto -m "bench or slow"

# tests/test_layers.py: layers only point down, no import cycle, module and function sizes.
lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m pytest -q tests/test_layers.py

types:
	$(PYTHON) -m mypy

# The offline benchmarks; DATA is the shared data folder (never copied into the repository).
# bench/bench_langchain.py and bench/bench_integrations.py need the bench extra:
# python -m pip install -e ".[bench]"; bench/fleet.py starts a throwaway PostgreSQL server
# (apt-get install postgresql) unless given --postgres URL.
DATA ?= ../shared/data

bench:
	$(PYTHON) bench/bench_engine.py
	$(PYTHON) bench/costs.py
	$(PYTHON) bench/bench_langchain.py
	$(PYTHON) bench/bench_integrations.py
	$(PYTHON) bench/transcripts.py $(DATA)
	$(PYTHON) bench/windows.py $(DATA)
	$(PYTHON) bench/prefix.py $(DATA)
	$(PYTHON) bench/binding.py $(DATA)
	$(PYTHON) bench/msc_retention.py $(DATA)
	$(PYTHON) bench/retention.py $(DATA)
	$(PYTHON) bench/retention_ceiling.py $(DATA)
	$(PYTHON) bench/segmenters.py $(DATA)
	$(PYTHON) bench/observe.py $(DATA)
	$(PYTHON) bench/fleet.py

ci:
	.ci/run
