"""Optional parts of progsum name the extra to install when their dependency is missing."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("module", "dependency", "extra"),
    [
        ("progsum.testing.snapshot", "syrupy", "snapshot"),
        ("progsum.integrations.langchain", "langchain", "langchain"),
        ("progsum.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("progsum.integrations.openai_agents", "agents", "openai-agents"),
    ],
)
def test_missing_dependency_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, dependency: str, extra: str
) -> None:
    """Importing the module without its dependency raises ImportError naming progsum[extra]."""
    for name in [m for m in sys.modules if m == dependency or m.startswith(dependency + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, dependency, None)  # makes `import dependency` fail
    parent, _, leaf = module.rpartition(".")
    for name in (module, f"{parent}._{leaf}"):  # a public module and the private one behind it
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ImportError, match=rf"progsum\[{extra}\]"):
        importlib.import_module(module)


def test_core_import_pulls_in_no_framework() -> None:
    """``import progsum`` imports none of the adapters or their frameworks."""
    code = (
        "import sys, progsum, progsum.messages._responses; "
        "bad = [m for m in ('langchain', 'pydantic_ai', 'agents', 'progsum.integrations') "
        "if m in sys.modules]; print(bad)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)  # noqa: S603 - our own code
    assert done.stdout.strip() == "[]"


def test_packaging_declares_the_extras_licence_and_urls() -> None:
    """pyproject.toml has one extra per adapter and the snapshot kit, the MIT file and URLs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert {"langchain", "pydantic-ai", "openai-agents", "snapshot"} <= set(extras)
    assert not any("langchain" in d or "agents" in d for d in project["dependencies"])
    assert project["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert {"Homepage", "Source", "Issues"} <= set(project["urls"])


def test_integration_tests_run_without_psycopg() -> None:
    """tests/integrations loads and runs without psycopg: only the store tests need PostgreSQL.

    The test plugin (tests/postgres.py, over progsum.testing.postgres) imports psycopg when a
    test asks for a database, not when pytest loads it.
    """
    without = "import sys; sys.modules['psycopg'] = sys.modules['psycopg_pool'] = None; "
    for args in (
        ["--collect-only", "tests/integrations"],
        ["tests/integrations/test_snippets.py", "-k", "every_adapter_has_a_snippet"],
    ):
        code = without + f"import pytest; raise SystemExit(pytest.main(['-q', *{args!r}]))"
        done = subprocess.run(  # noqa: S603 - our own test suite
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "error" not in done.stdout.splitlines()[-1], done.stdout[-3000:]
