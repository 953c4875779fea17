"""The package's architecture as tests: layers import only downward, no cycle, small modules.

The import graph is read from the source with `ast` (every import, function-local ones and
``TYPE_CHECKING`` ones included), so nothing here imports the code under test.
docs/architecture.md draws the same layers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "progsum"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "integrations", "testing"),
    ("tools", "replay"),
    ("engine",),
    ("summarizers",),
    ("contract",),
    ("render", "store", "observe"),
    ("state",),
    ("summary", "policy", "recall"),
    ("judge",),
    ("messages",),
    ("templates",),
    ("resources",),
    ("errors", "version", "memo", "driving"),
)
"""Top to bottom. A module may import its own package and any layer below its own; the
packages of one layer do not import each other."""

FACADES = {"progsum", "progsum.__main__", "progsum.update", "progsum.store_postgres"}
"""The public face above every layer: the package itself and the public import paths kept for
names that live in a layer's package."""

OPTIONAL = {"progsum.summarizers.anthropic", "progsum.store._postgres"}
"""Modules behind an optional extra or a heavy SDK (and what they contain): the only ones a
function may import lazily."""

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module(p): p for p in sorted(ROOT.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int, bool]]:
    """``(imported module, line, at module level)`` for every progsum import in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t if t in known else base for t in targets]
        else:
            continue
        for imported in targets:
            target = imported
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target, node.lineno, node.col_offset == 0


def _optional(module: str) -> bool:
    return any(module == o or module.startswith(f"{o}.") for o in OPTIONAL)


def _package(module: str) -> str:
    """The top-level package or module a module belongs to, named without its privacy mark."""
    parts = module.split(".")
    return parts[1].lstrip("_") if len(parts) > 1 else ""


def _layer(module: str) -> int | None:
    package = _package(module)
    for rank, names in enumerate(LAYERS):
        if package in names:
            return rank
    return None


def _graph() -> dict[str, list[tuple[str, int, bool]]]:
    modules = _modules()
    known = set(modules)
    return {name: list(_imports(name, path, known)) for name, path in modules.items()}


def test_every_package_has_a_layer() -> None:
    """Every module belongs to a package of `LAYERS` (or is a facade)."""
    unplaced = sorted(m for m in _modules() if m not in FACADES and _layer(m) is None)
    assert not unplaced, f"{unplaced} belong to no layer; add their package to LAYERS"


def test_layers_import_only_downward() -> None:
    """A module imports only its own package and the layers below its own."""
    wrong = []
    for name, imports in _graph().items():
        mine = _layer(name)
        if name in FACADES or mine is None:
            continue
        for target, line, _ in imports:
            theirs = _layer(target)
            same_package = _package(target) == _package(name)
            if theirs is None or (not same_package and theirs <= mine):
                wrong.append(f"{name}:{line} imports {target}")
    assert not wrong, "imports that do not point down:\n" + "\n".join(wrong)


def test_no_import_cycle() -> None:
    """No module imports itself through others, within a package or across packages."""
    graph = {name: {t for t, _, _ in imports} for name, imports in _graph().items()}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        if state.get(node) == 2:
            return
        if state.get(node) == 1:
            cycle = path[path.index(node) :]
            pytest.fail(f"import cycle: {' -> '.join([*cycle, node])}")
        state[node] = 1
        for target in sorted(graph[node]):
            visit(target, [*path, node])
        state[node] = 2

    for node in sorted(graph):
        visit(node, [])


def test_function_local_imports_only_for_optional_extras() -> None:
    """Imports inside functions are for optional extras or heavy SDKs only."""
    lazy = sorted(
        f"{name}:{line} imports {target}"
        for name, imports in _graph().items()
        for target, line, top in imports
        if not top and not _optional(target) and not _type_only(name, line)
    )
    assert not lazy, "function-local imports of core modules:\n" + "\n".join(lazy)


def _type_only(name: str, line: int) -> bool:
    tree = ast.parse(_modules()[name].read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            end = node.end_lineno or node.lineno
            if node.lineno <= line <= end:
                return True
    return False


def test_modules_stay_small() -> None:
    """No module over `MAX_MODULE_LINES` lines."""
    big = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not big, f"modules over {MAX_MODULE_LINES} lines: {big}; split them by what they are"


def test_functions_stay_short() -> None:
    """No function over `MAX_FUNCTION_LINES` lines."""
    long = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(sorted(long))
