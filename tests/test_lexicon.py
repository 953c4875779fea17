"""The lexicon: every word list progsum judges text by is data, read from one file, and used.

The module under test: progsum.judge._lexicon (and the modules that read its lists).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from progsum.judge._lexicon import (
    LEXICON_PATH,
    alternation,
    entries,
    expressions,
    lexicon,
    words,
)

ROOT = Path(__file__).resolve().parents[1]

EDITS: dict[str, tuple[str, str, Any]] = {
    "machine.code_keywords": ("machine", '"banana"', True),
    "machine.code_clauses": ("machine", r"'peel\s+\w+\s+now'", True),
    "machine.log_levels": ("machine", '"NOTICE"', True),
    "machine.output_levels": ("machine", '"notice"', ""),
    "machine.output_openers": ("machine", '"Resolving"', ""),
    "sentences.abbreviations": ("sentences", '"Sgt"', ["We met Sgt. pepper there."]),
    "sentences.dangling": ("sentences", '"banana"', False),
    "kinds.ordinals": ("kinds", '"er"', True),
    "kinds.day_of": ("kinds", '"in"', True),
    "tools.create": ("tools", '"stash"', ["notes.txt: created (stash_notes)"]),
    "tools.search": ("tools", '"lookup"', ['search "jinja": searched (lookup_docs)']),
    "fields.constraints": ("fields", '"taboo"', "taboos"),
    "fields.facts": ("fields", '"trivia"', "trivia"),
    "routes.questions": ("routes", '"puzzle"', "puzzles"),
}
"""Per list: its table, the entry added, and what the probe (tests/lexicon_probe.py) answers with
it; without it, every probe answers otherwise."""

IDENTIFIERS = frozenset(
    {"user", "assistant", "agent", "chat", "todo", "question"}
    | {"read", "open", "view", "cat", "create", "write", "edit", "insert"}
)
"""English words that are also protocol names in code: roles, conversation kinds and labels, and
the names of known tools (Claude Code's Read/Write/Edit, SWE-agent's open/create/edit/insert),
which `progsum.contract._artifacts` and `progsum.contract._steps` match exactly."""


def _lists(node: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, list[Any]]]:
    for key, value in node.items():
        if isinstance(value, Mapping):
            yield from _lists(value, f"{prefix}{key}.")
        elif isinstance(value, list):
            yield f"{prefix}{key}", value


def _probe(path: Path) -> dict[str, Any]:
    done = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "tests.lexicon_probe", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _with_entry(text: str, table: str, key: str, entry: str) -> str:
    """``text`` (the lexicon file) with ``entry`` first in the list ``key`` of ``[table]``."""
    start = text.index(f"\n[{table}]\n")
    at = text.index(f"\n{key} = [", start) + len(f"\n{key} = [")
    return text[:at] + entry + ", " + text[at:]


def test_the_lexicon_is_versioned_and_every_list_loads() -> None:
    """The file has a version (bumped when lists move in) and each list is non-empty strings."""
    assert lexicon()["version"] >= 2  # the version that moved these lists in
    found = dict(_lists(lexicon()))
    assert set(EDITS) <= set(found)
    for path, listed in found.items():
        assert listed, path
        assert all(isinstance(entry, str) and entry.strip() for entry in listed), path


def test_the_accessors_give_the_documented_entries() -> None:
    """Sets are case-folded, entries as written, alternations longest first, patterns kept."""
    assert {"def", "#include", "select", "async def"} <= words("machine.code_keywords")
    assert entries("kinds.ordinals") == ("st", "nd", "rd", "th")
    assert "guardrail" in words("fields.constraints")
    assert "unresolved" in words("routes.questions")
    assert re.fullmatch(alternation("sentences.abbreviations"), "Sept")
    assert not re.fullmatch(alternation("sentences.abbreviations"), "sept")
    pip = re.compile(alternation("machine.output_openers", any_space=False), re.VERBOSE)
    assert pip.fullmatch("Requirement already satisfied")
    assert not pip.fullmatch("Requirement  already satisfied")
    clauses = re.compile(expressions("machine.code_clauses"))
    assert clauses.fullmatch("from os.path import")
    assert clauses.fullmatch("UPDATE users SET")
    assert not clauses.fullmatch("UPDATE a.b SET")


@pytest.mark.parametrize("path", sorted(EDITS))
def test_changing_a_list_changes_what_progsum_decides(
    path: str, tmp_path: Path, shipped_probes: dict[str, Any]
) -> None:
    """An entry added to the lexicon file, and nothing else, changes the probe's answer."""
    table, entry, expected = EDITS[path]
    edited = tmp_path / "lexicon.toml"
    text = LEXICON_PATH.read_text(encoding="utf-8")
    edited.write_text(_with_entry(text, table, path.rpartition(".")[2], entry), encoding="utf-8")
    assert shipped_probes[path] != expected
    assert _probe(edited)[path] == expected


@pytest.fixture(scope="module")
def shipped_probes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The probes' answers under a copy of the shipped lexicon."""
    copy = tmp_path_factory.mktemp("lexicon") / "lexicon.toml"
    copy.write_text(LEXICON_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    return _probe(copy)


def _literals(tree: ast.AST) -> Iterator[tuple[int, list[str]]]:
    """Each string collection (entries) and regex alternation (alternatives) of a module."""
    docstrings = {  # of modules, classes and functions, and attribute docstrings
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            elements = [e for e in node.elts if isinstance(e, ast.Constant)]
            yield node.lineno, [e.value for e in elements if isinstance(e.value, str)]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "|" in node.value
            and id(node) not in docstrings
        ):
            parts = re.split(r"[|()]|\?:|\\b", node.value)
            yield node.lineno, [part.strip() for part in parts if part.strip()]


def test_no_word_list_of_the_lexicon_is_written_in_code() -> None:
    """No tuple, set or regex alternation in progsum/ holds two entries of one lexicon list."""
    lists = {
        path: frozenset(e for e in listed if re.search(r"[A-Za-z]{2}", e)) - IDENTIFIERS
        for path, listed in _lists(lexicon())
    }
    found = []
    for module in sorted((ROOT / "progsum").rglob("*.py")):
        for line, literal in _literals(ast.parse(module.read_text(encoding="utf-8"))):
            for path, listed in lists.items():
                if len(listed.intersection(literal)) >= 2:  # a list, not a word
                    found.append(f"{module.relative_to(ROOT)}:{line}: {path} {literal}")
    assert not found, "word lists in code; move them to progsum/judge/data/lexicon.toml:\n" + (
        "\n".join(found)
    )
