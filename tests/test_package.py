"""The package surface: a small sorted public API, typed, with its data folders found."""

from __future__ import annotations

import tomllib
import types
from pathlib import Path

import progsum
from progsum import Summary
from progsum._resources import data_dir
from progsum._templates import environment
from progsum.summary._schema import spec_of


def test_all_is_sorted_and_complete() -> None:
    """__all__ lists every public top-level name, sorted, and nothing else."""
    public = {
        name
        for name, value in vars(progsum).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert progsum.__all__ == sorted(progsum.__all__)
    assert set(progsum.__all__) == public


def test_public_api_stays_small() -> None:
    """About a dozen concepts: the engine, the schema, the summarizer contract, the errors."""
    assert len(progsum.__all__) <= 20


def test_package_is_typed() -> None:
    """py.typed ships beside the code so type checkers read the annotations."""
    assert (Path(progsum.__file__).parent / "py.typed").is_file()


def test_data_folders_are_found() -> None:
    """prompts/ and schemas/ load from the checkout (or the installed copy in a wheel)."""
    assert (data_dir("prompts") / "header.md.j2").is_file()
    assert (data_dir("schemas") / "default.toml").is_file()


def test_one_strict_sandboxed_environment() -> None:
    """Templates render in one cached, strict, sandboxed Jinja environment."""
    env = environment()
    assert env is environment()
    assert env.undefined.__name__ == "StrictUndefined"
    assert env.is_safe_attribute.__qualname__.startswith("SandboxedEnvironment")
    assert env.trim_blocks
    assert env.lstrip_blocks
    assert env.keep_trailing_newline


def test_default_schema_file_mirrors_summary() -> None:
    """schemas/default.toml declares exactly the fields and metadata of progsum.Summary."""
    data = tomllib.loads((data_dir("schemas") / "default.toml").read_text(encoding="utf-8"))
    spec = spec_of(Summary)
    assert spec.objective is not None
    assert data["objective"] == {
        "name": spec.objective.name,
        "label": spec.objective.label,
        "description": spec.objective.description,
    }
    assert data["fields"] == [
        {
            "name": f.name,
            "label": f.label,
            "description": f.description,
            "binding": f.binding,
            "id_prefix": f.id_prefix,
            **({"extract": list(f.extract)} if f.extract else {}),
        }
        for f in spec.lists
    ]
