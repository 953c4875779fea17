"""What a shell command did to the repository, read from git's own command line and output.

Pure. `effects` reads one shell command (its first line, split into ``&&``, ``||``, ``;`` and
``|`` segments) and what it printed:

* branches it created: ``git checkout -b NAME``, ``git switch -c|--create NAME``, ``git branch
  NAME``;
* files it put back as committed (the agent's edit is no longer in place): ``git restore PATH``
  (without ``--staged`` alone), ``git checkout [REV] -- PATH``;
* files it deleted or created: ``rm``, ``git rm``, ``touch``;
* commits it made, from the summary line git prints for each (``[branch 4e1d2c9] subject``, with
  ``(root-commit)`` for a first commit).

`progsum.contract._artifacts` folds them into the trail (branch and commit lines, file states).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

__all__ = ["Effects", "effects"]

_SEPARATORS = frozenset({"&&", "||", ";", "|"})
_COMMIT = re.compile(
    r"^\[(?P<branch>[^\s\]]+)(?: \(root-commit\))? (?P<sha>[0-9a-f]{7,40})\] (?P<subject>.+)$",
    re.MULTILINE,
)


@dataclass
class Effects:
    """What one command did: ``(name, how)``, ``(path, how)`` and ``(sha, branch, subject)``."""

    branches: list[tuple[str, str]] = field(default_factory=list)
    restored: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    commits: list[tuple[str, str, str]] = field(default_factory=list)


def effects(command: str, output: str) -> Effects:
    """The branches, files and commits ``command`` touched (see the module docstring)."""
    found = Effects()
    found.commits = [
        (match["sha"], match["branch"], match["subject"].strip())
        for match in _COMMIT.finditer(output)
    ]
    first = command.strip().splitlines()[0] if command.strip() else ""
    try:
        words = shlex.split(first)
    except ValueError:
        return found
    segment: list[str] = []
    for word in [*words, ";"]:
        if word in _SEPARATORS:
            _segment(segment, found)
            segment = []
        else:
            segment.append(word)
    return found


def _segment(words: list[str], found: Effects) -> None:
    """Read one command of a pipeline or list into ``found``."""
    if not words:
        return
    if words[0] in ("rm", "touch"):
        paths = [w for w in words[1:] if not w.startswith("-")]
        (found.deleted if words[0] == "rm" else found.created).extend(paths)
        return
    if words[0] != "git" or len(words) < 2:  # noqa: PLR2004 - git and its sub-command
        return
    verb, args = words[1], words[2:]
    options = [a for a in args if a.startswith("-")]
    plain = [a for a in args if not a.startswith("-")]
    if verb == "rm":
        found.deleted.extend(plain)
    elif verb == "checkout" and "-b" in args and args.index("-b") + 1 < len(args):
        found.branches.append((args[args.index("-b") + 1], "git checkout -b"))
    elif verb == "checkout" and "--" in args:
        found.restored.extend((p, "git checkout --") for p in args[args.index("--") + 1 :])
    elif verb == "switch":
        for flag in ("-c", "--create"):
            if flag in args and args.index(flag) + 1 < len(args):
                found.branches.append((args[args.index(flag) + 1], f"git switch {flag}"))
    elif verb == "restore" and not (options and set(options) <= {"--staged", "-S"}):
        found.restored.extend((p, "git restore") for p in plain if p != ".")
    elif verb == "branch" and not options and len(plain) == 1:
        found.branches.append((plain[0], "git branch"))
