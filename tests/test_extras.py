"""Optional parts of progsum name the extra to install when their dependency is missing."""

from __future__ import annotations

import importlib
import sys

import pytest


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
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ImportError, match=rf"progsum\[{extra}\]"):
        importlib.import_module(module)


def test_core_import_pulls_in_no_framework() -> None:
    """``import progsum`` imports none of the adapters or their frameworks."""
    code = (
        "import sys, progsum, progsum.messages.responses; "
        "bad = [m for m in ('langchain', 'pydantic_ai', 'agents', 'progsum.integrations') "
        "if m in sys.modules]; print(bad)"
    )
    import subprocess  # noqa: PLC0415 - only this test starts a process

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)  # noqa: S603 - our own code
    assert done.stdout.strip() == "[]"


def test_packaging_declares_the_extras_licence_and_urls() -> None:
    """pyproject.toml has one extra per adapter and the snapshot kit, the MIT file and URLs."""
    import tomllib  # noqa: PLC0415 - only this test reads the project file
    from pathlib import Path  # noqa: PLC0415

    root = Path(__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert {"langchain", "pydantic-ai", "openai-agents", "snapshot"} <= set(extras)
    assert not any("langchain" in d or "agents" in d for d in project["dependencies"])
    assert project["license"] == "MIT"
    assert (root / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert {"Homepage", "Source", "Issues"} <= set(project["urls"])
