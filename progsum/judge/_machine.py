"""Machine text by structure: tag-delimited blocks inside a person's text, whatever their name.

A harness wraps what it adds to a user-role message in tags (``<system-reminder>``,
``<environment_context>``, ``<attached_files>``, ...). No list of names is kept: every
``<name ...>…</name>`` block is machine text. Names are compared after folding
(NFKC, format characters removed, every dash made ``-``, case-folded), so look-alikes such as a
``system-reminder`` tag spelled with U+2011 or fullwidth brackets close the same block. A tag whose
block is not closed takes the rest of the text when it opens a line (a harness block cut short)
and only itself when it sits inside a sentence ("I use <div> here"). What is left is prose.

The caller marks the exceptions: tags whose blocks are the person's own text (an app that wraps
what the user typed in ``<user_query>``), given as ``Compactor(prose_tags=...)`` and in force
around a run (`keeping`). Such a block loses its tags and keeps its text.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import unicodedata
from collections.abc import Iterable, Iterator

from progsum._memo import memoized
from progsum.errors import ConfigError

__all__ = ["check_tags", "fold", "keeping", "prose_tags", "strip_blocks"]

_OPEN = "<\ufe64\uff1c\u2039\u3008\u27e8"
_CLOSE = ">\ufe65\uff1e\u203a\u3009\u27e9"
_TAG = re.compile(
    rf"[{_OPEN}][ \t]*([/\uff0f\u2044\u2215]?)[ \t]*([^\s{_OPEN}{_CLOSE}/\uff0f]{{1,64}})"
    rf"[^{_OPEN}{_CLOSE}\n]{{0,400}}?[{_CLOSE}]"
)


def fold(text: str) -> str:
    """``text`` as compared: NFKC, format characters removed, dashes made ``-``, case-folded."""
    folded = unicodedata.normalize("NFKC", text)
    kept = []
    for char in folded:
        category = unicodedata.category(char)
        if category == "Cf":
            continue
        kept.append("-" if category == "Pd" else char)
    return "".join(kept).casefold()


def _name(raw: str) -> str | None:
    """The folded tag name, or None when it is no tag name ("<3", "< 5", "<=")."""
    name = fold(raw).rstrip("/")
    if not name or not name[0].isalpha():
        return None
    return name if all(c.isalnum() or c in "-_:." for c in name) else None


_PROSE: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "progsum_prose_tags", default=frozenset()
)


def check_tags(tags: Iterable[object]) -> frozenset[str]:
    """The folded names of ``tags`` (the caller's ``prose_tags``).

    Raises:
        ConfigError: a name is not a tag name (a letter, then letters, digits or ``-_:.``).
    """
    if isinstance(tags, str):
        raise ConfigError(
            f"prose_tags={tags!r} is one string; give a list of tag names, e.g. ['user_query']"
        )
    names = set()
    for tag in tags:
        name = _name(tag) if isinstance(tag, str) else None
        if name is None:
            raise ConfigError(
                f"prose_tags holds {tag!r}, which is no tag name: give the bare name of a tag "
                "whose blocks are the person's own text, e.g. 'user_query' for <user_query>"
            )
        names.add(name)
    return frozenset(names)


def prose_tags() -> frozenset[str]:
    """The tags whose blocks are the person's own text here (`keeping`); none by default."""
    return _PROSE.get()


@contextlib.contextmanager
def keeping(tags: frozenset[str]) -> Iterator[None]:
    """Make ``tags`` (folded names, `check_tags`) the person's own text inside the block."""
    token = _PROSE.set(tags)
    try:
        yield
    finally:
        _PROSE.reset(token)


@memoized("progsum.judge._machine.strip_blocks", 256 * 1024)
def strip_blocks(text: str, keep: frozenset[str] = frozenset()) -> str:
    """``text`` with every tag-delimited block, and every stray tag, replaced by a line break.

    A tag named in ``keep`` (folded names) is removed alone: its block's text stays.
    """
    tags = []
    for match in _TAG.finditer(text):
        name = _name(match.group(2))
        if name is not None:
            tags.append((match.start(), match.end(), bool(match.group(1)), name))
    if not tags:
        return text
    cuts: list[tuple[int, int]] = []
    n = 0
    while n < len(tags):
        start, end, closing, name = tags[n]
        if closing or name in keep:
            cuts.append((start, end))
            n += 1
            continue
        depth, close = 0, None
        for m in range(n + 1, len(tags)):
            if tags[m][3] != name:
                continue
            if not tags[m][2]:
                depth += 1
            elif depth == 0:
                close = m
                break
            else:
                depth -= 1
        if close is not None:
            cuts.append((start, tags[close][1]))
            n = close + 1
        elif not text[text.rfind("\n", 0, start) + 1 : start].strip():
            cuts.append((start, len(text)))  # an unclosed block that opens a line: cut short
            break
        else:
            cuts.append((start, end))
            n += 1
    out, at = [], 0
    for start, end in cuts:
        if start < at:
            continue
        out.append(text[at:start])
        out.append("\n")
        at = end
    out.append(text[at:])
    return "".join(out)
