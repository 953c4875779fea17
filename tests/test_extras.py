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
        "import sys, progsum, progsum.responses; "
        "bad = [m for m in ('langchain', 'pydantic_ai', 'agents', 'progsum.integrations') "
        "if m in sys.modules]; print(bad)"
    )
    import subprocess  # noqa: PLC0415 - only this test starts a process

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)  # noqa: S603 - our own code
    assert done.stdout.strip() == "[]"
