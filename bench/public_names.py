"""Count progsum's public surface the way a user sees it.

A module is public when no component of its dotted path starts with ``_`` (``progsum.store`` is,
``progsum.store._sqlite`` and ``progsum.__main__`` are not). A name is public when it is an
attribute of a public module that does not start with ``_``. Each public name is counted once per
module, in one of two kinds:

* defined: bound in the module's own source by ``def``, ``class`` or an assignment;
* re-exported: bound by an import (``from typing import Any`` counts: a user can import it from
  there), or by a module ``__getattr__`` listed in ``__all__``.

Submodule attributes (``progsum.engine`` on ``progsum``) are counted as modules, not as names;
``from __future__`` features are left out, and so are the names pytest's assertion rewriting adds
to a plugin module (``@py_builtins``: not identifiers). Modules are imported (every extra
installed); one that cannot be imported is read from its source and reported.

    python bench/public_names.py            # the totals
    python bench/public_names.py --list     # every public name, module by module
"""

from __future__ import annotations

import argparse
import ast
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import progsum

ROOT = Path(progsum.__file__).resolve().parent


@dataclass(frozen=True)
class Surface:
    """One public module's public names, split by how the module binds them."""

    module: str
    defined: tuple[str, ...]
    reexported: tuple[str, ...]


def module_name(path: Path) -> str:
    """The dotted name of a source file of the package."""
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def public_modules() -> dict[str, Path]:
    """Every public module of the package, by dotted name, with its source file."""
    found = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    return {name: path for name, path in found.items() if not _private(name)}


def _private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def _bindings(path: Path) -> tuple[set[str], set[str], set[str]]:
    """Names the module's top level defines, imports, and takes from ``__future__``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined: set[str] = set()
    imported: set[str] = set()
    future: set[str] = set()
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                defined.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import):
            imported.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = future if node.module == "__future__" else imported
            names.update(a.asname or a.name for a in node.names)
    return defined, imported, future - imported - defined


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements run at import time: the body, with ``if``/``try`` blocks opened."""
    found: list[ast.stmt] = []
    for node in body:
        found.append(node)
        if isinstance(node, ast.If):
            found.extend(_top_level(node.body + node.orelse))
        elif isinstance(node, ast.Try):
            handlers = [stmt for handler in node.handlers for stmt in handler.body]
            found.extend(_top_level(node.body + handlers + node.orelse + node.finalbody))
    return found


def surface(name: str, path: Path) -> tuple[Surface, bool]:
    """The public names of one module, and whether it could be imported."""
    defined, imported, future = _bindings(path)
    try:
        module: ModuleType | None = importlib.import_module(name)
    except ImportError:
        module = None
    if module is None:
        names = defined | imported
        lazy: set[str] = set()
    else:
        names = {
            n
            for n, value in vars(module).items()
            if not (isinstance(value, ModuleType) and value.__name__ == f"{name}.{n}")
        }
        lazy = set(getattr(module, "__all__", ())) - names
    public = {n for n in (names | lazy) - future if n.isidentifier() and not n.startswith("_")}
    own = tuple(sorted(n for n in public if n in defined and n not in imported))
    other = tuple(sorted(public - set(own)))
    return Surface(name, own, other), module is not None


def measure() -> tuple[list[Surface], list[str]]:
    """Every public module's surface, and the modules that could not be imported."""
    surfaces, failed = [], []
    for name, path in public_modules().items():
        found, imported = surface(name, path)
        surfaces.append(found)
        if not imported:
            failed.append(name)
    return surfaces, failed


def main(argv: list[str] | None = None) -> int:
    """Print the totals (and with ``--list`` every public name)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="every public name, per module")
    args = parser.parse_args(argv)
    surfaces, failed = measure()
    defined = sum(len(s.defined) for s in surfaces)
    reexported = sum(len(s.reexported) for s in surfaces)
    if args.list:
        for s in surfaces:
            print(f"{s.module}: {len(s.defined)} defined, {len(s.reexported)} re-exported")
            for n in s.defined:
                print(f"    {n}")
            for n in s.reexported:
                print(f"    {n}  (re-export)")
    print(f"public modules: {len(surfaces)}")
    print(f"public names: {defined + reexported} ({defined} defined, {reexported} re-exported)")
    print(f"progsum.__all__: {len(progsum.__all__)}")
    if failed:
        print(f"read from source (import failed): {', '.join(failed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
