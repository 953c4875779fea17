"""The public surface is the documented one: docs/architecture.md's table, no more, no less.

A module is public when no part of its dotted path starts with ``_``; its public names are those
a user can import from it (`bench/public_names.py` counts them the same way). A new public name
without a row or a mention in that table fails here, and so does a documented name that does not
import.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path
from types import ModuleType

# the benchmarks are scripts in bench/, not a package: import the counter as the scripts see it
sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

from public_names import public_modules, surface

from progsum import ConversationState

ROOT = Path(__file__).resolve().parents[1]

TABLE = ROOT / "docs" / "architecture.md"
STATES = ROOT / "tests" / "fixtures" / "states"


def documented() -> dict[str, set[str]]:
    """Module -> names, from the rows of the table under "The public API"."""
    text = TABLE.read_text(encoding="utf-8")
    section = text.split("## The public API", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for module, cell in re.findall(r"^\| `(progsum[\w.]*)` \| (.+) \|$", section, re.MULTILINE):
        table[module] = set(re.findall(r"`([A-Za-z_]\w*)`", cell))
    return table


def loaded(module: str) -> ModuleType | None:
    """The module, or None when it needs a framework extra this environment lacks.

    CI runs this file again in the venv with every extra, where each adapter imports.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if "'progsum[" in str(exc):  # the adapters' own "install it with ... 'progsum[extra]'"
            return None
        raise


def _names(module: str) -> set[str]:
    found, _ = surface(module, public_modules()[module])
    return set(found.defined) | set(found.reexported)


def test_the_table_lists_public_modules() -> None:
    """Every module the table names exists and is public (no underscore in its path)."""
    modules = public_modules()
    assert documented(), "docs/architecture.md has no public API table"
    assert sorted(set(documented()) - set(modules)) == []


def test_every_public_name_is_documented() -> None:
    """A public module offers exactly the names its row lists; a module without a row, none."""
    table = documented()
    extra = {}
    for module in public_modules():
        names = _names(module) - table.get(module, set())
        if names:
            extra[module] = sorted(names)
    assert extra == {}, (
        "public names missing from docs/architecture.md's table (or make them private)"
    )


def test_every_documented_name_imports() -> None:
    """Each name of the table can be imported from the module its row names."""
    missing = [
        f"{module}.{name}"
        for module, names in documented().items()
        if (found := loaded(module)) is not None
        for name in sorted(names)
        if not hasattr(found, name)
    ]
    assert missing == []


def test_every_package_says_what_it_offers() -> None:
    """Each package's ``__init__`` has a docstring and an ``__all__`` of exactly its names."""
    table = documented()
    wrong = {}
    for module, path in public_modules().items():
        if path.name != "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        listed = set(getattr(importlib.import_module(module), "__all__", ["(no __all__)"]))
        expected = table.get(module, set()) - {"__version__"}
        if not ast.get_docstring(tree) or listed != expected:
            wrong[module] = sorted(listed ^ expected) or ["(no docstring)"]
    assert wrong == {}


def test_public_modules_declare_all() -> None:
    """Each public module with names lists them in ``__all__`` (what ``import *`` and docs read)."""
    table = documented()
    wrong = {
        module: sorted(set(found.__all__) ^ (names - {"__version__"}))
        for module, names in table.items()
        if (found := loaded(module)) is not None and set(found.__all__) != names - {"__version__"}
    }
    assert wrong == {}


def test_a_state_saved_before_the_modules_went_private_loads() -> None:
    """A state saved by the release before the rename loads and renders the header it rendered.

    Saved states (files, store rows, framework snapshots) are JSON that name the schema by its
    class name, never a module path, so renaming modules cannot orphan them.
    """
    text = (STATES / "before_private.json").read_text(encoding="utf-8")
    assert "progsum." not in text
    state = ConversationState.from_json(text)
    header = (STATES / "before_private.header.md").read_text(encoding="utf-8")
    assert state.header == header
    assert "Never touch the prod DB." in header
