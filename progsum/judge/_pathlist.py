"""Compact file lines for the artifact trail: the common root once, paths grouped by directory.

Pure. When the trail's one-line-per-file entries (``/srv/app/src/app.py: modified (Edit)``) would
not fit the header, `progsum.contract._trail` writes one line per state and root instead::

    modified under /srv/app/: src/{app.py,cli.py}, tests/test_app.py
    modified under /srv/app/ (part 2): src/db.py
    read under /srv/app/: README.md, docs/{api.md,index.md}

A reader recovers every full path from the line alone: the root after ``under``, then each
comma-separated entry, where ``dir/{a,b}`` stands for ``dir/a`` and ``dir/b`` (shell brace
expansion). `parse` reads both forms back, so a later compaction can merge its files into them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

__all__ = ["LINE_CHARS", "STATES", "compactable", "file_line", "lines", "parse"]

STATES = ("created", "modified", "deleted", "read")
"""File states, in the order their lines are written (changed files first)."""

_PER_FILE = re.compile(r"^(?P<path>[^\s:][^:]*): (?P<state>created|modified|deleted|read) \(.*\)$")
_GROUP = re.compile(
    r"^(?P<state>created|modified|deleted|read)(?: under (?P<root>/\S*/))?(?: \(part \d+\))?: "
    r"(?P<list>\S.*)$"
)
_UNSAFE = re.compile(r"[\s,{}:]")


def compactable(path: str) -> bool:
    """Whether ``path`` can go into a compact line (no spaces, commas, braces or colons)."""
    return bool(path) and not _UNSAFE.search(path)


def file_line(text: str) -> tuple[str, str] | None:
    """``(path, state)`` of a one-file trail line, or None."""
    match = _PER_FILE.match(text)
    return (match["path"], match["state"]) if match else None


def parse(text: str) -> dict[str, str] | None:
    """``path → state`` of a trail file line (one file, or a compact line), or None."""
    single = file_line(text)
    if single is not None:
        return {single[0]: single[1]}
    match = _GROUP.match(text)
    if match is None:
        return None
    root = match["root"] or ""
    found: dict[str, str] = {}
    for entry in _entries(match["list"]):
        head, brace, rest = entry.partition("{")
        names = rest.removesuffix("}").split(",") if brace else [""]
        for name in names:
            found[root + head + name] = match["state"]
    return found


def _entries(listed: str) -> list[str]:
    """The comma-separated entries of a compact line, commas inside braces kept."""
    entries: list[str] = []
    depth, start = 0, 0
    for n, char in enumerate(listed):
        depth += (char == "{") - (char == "}")
        if char == "," and depth == 0:
            entries.append(listed[start:n].strip())
            start = n + 1
    entries.append(listed[start:].strip())
    return [e for e in entries if e]


LINE_CHARS = 320
"""Most characters of relative paths in one compact line; more files take further parts."""


def lines(files: Mapping[str, str]) -> list[str]:
    """Compact lines for ``path → state`` (oldest first): per state and root, in `STATES` order.

    Absolute paths of one state share their longest common directory as the root; relative
    paths are listed as they are. Files of one directory are braced together. Past
    `LINE_CHARS` the files go on in another part (``modified under /srv/app/ (part 2): …``),
    the newest last, so a header over budget drops the oldest part first.
    """
    written: list[str] = []
    for state in STATES:
        paths = [p for p, s in files.items() if s == state]
        absolute = [p for p in paths if p.startswith("/")]
        relative = [p for p in paths if not p.startswith("/")]
        if absolute:
            root = _root(absolute)
            written.extend(_parts(f"{state} under {root}", [p[len(root) :] for p in absolute]))
        if relative:
            written.extend(_parts(state, relative))
    return written


def _parts(key: str, paths: list[str]) -> list[str]:
    """Lines ``key: entries``, ``key (part 2): entries``, … of at most `LINE_CHARS` paths each."""
    chunks: list[list[str]] = [[]]
    used = 0
    for path in paths:
        if chunks[-1] and used + len(path) > LINE_CHARS:
            chunks.append([])
            used = 0
        chunks[-1].append(path)
        used += len(path) + 2
    return [
        f"{key}{f' (part {n})' if n > 1 else ''}: {_grouped(sorted(chunk))}"
        for n, chunk in enumerate(chunks, 1)
    ]


def _root(paths: list[str]) -> str:
    """The longest directory that holds every path, ending in ``/``."""
    common = posixpath.commonpath(paths)
    if len(paths) == 1 or common in paths:
        common = posixpath.dirname(common)
    return common.rstrip("/") + "/"


def _grouped(paths: list[str]) -> str:
    """``dir/{a,b}, c`` for sorted relative paths."""
    groups: dict[str, list[str]] = {}
    for path in paths:
        folder, slash, name = path.rpartition("/")
        groups.setdefault(folder + slash, []).append(name)
    return ", ".join(
        folder + (names[0] if len(names) == 1 else "{" + ",".join(names) + "}")
        for folder, names in groups.items()
    )
