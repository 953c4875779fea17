"""The header stays inert over real transcript text (Claude Code, τ-bench, SWE-agent).

    python bench/header_inert.py /work/shared/data

Data: ``DATA_DIR/claude_code/**/*.jsonl``, ``DATA_DIR/tau_bench/*.json`` and
``DATA_DIR/swe_agent/**/*.traj``, read in place with `progsum.replay.importers.read_conversations`.
Nothing is copied.

Every text of every message (strings, text blocks, tool results, tool-call arguments) is put in a
summary three times, as an item, as the objective and as the thread id, and rendered with
`render_header`. Each header is checked here, independently of `progsum.summary.inert`: it has the
same lines as the header of a one-word placeholder except the one line holding the value; no
control, format (bidi, zero-width) or line-separator character; no code fence; no Markdown heading
besides the template's own. The same texts rendered the way the header did before values were made
inert (continuation lines indented by two spaces) are counted beside it: how many would have
added lines, opened a heading or a fence, or carried control or format characters.

Time: `progsum.summary.inert.inert` over all the distinct texts beside the old indentation, measured
side by side in the same run (best of five), and the ratio.
"""

from __future__ import annotations

import argparse
import re
import sys
import timeit
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from progsum import Summary
from progsum.replay.importers import read_conversations
from progsum.summary.header import render_header
from progsum.summary.inert import inert
from progsum.summary.schema import Item

_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(?:`{3,}|~{3,})")
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
PLACEHOLDER = "placeholder"


def files(data: Path) -> Iterator[Path]:
    """The agent transcript files under ``data``."""
    yield from sorted(data.glob("claude_code/**/*.jsonl"))
    yield from sorted(data.glob("tau_bench/*.json"))
    yield from sorted(data.glob("swe_agent/**/*.traj"))


def texts(value: Any) -> Iterator[str]:  # noqa: ANN401 - any JSON value of a message
    """Every non-empty string in a message, keys excluded."""
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from texts(item)


def headers(text: str) -> dict[str, tuple[str, str]]:
    """``(placeholder header, header with text)`` for each place a value can go."""

    def summary(objective: str, item: str) -> Summary:
        return Summary(
            objective=objective,
            established_facts=(Item(id="F1", text=item, source=(0, 2)),),
        )

    def render(objective: str, item: str, thread: str) -> str:
        return render_header(
            summary(objective, item), folded=(0, 2), compactions=1, thread_id=thread
        )

    base = render(PLACEHOLDER, PLACEHOLDER, PLACEHOLDER)
    return {
        "item": (base, render(PLACEHOLDER, text, PLACEHOLDER)),
        "objective": (base, render(text, PLACEHOLDER, PLACEHOLDER)),
        "thread id": (base, render(PLACEHOLDER, PLACEHOLDER, text)),
    }


def problems(base: str, header: str) -> list[str]:
    """What makes ``header`` differ in structure from ``base`` (empty: it is inert)."""
    found = []
    lines, base_lines = header.split("\n"), base.split("\n")
    if len(lines) != len(base_lines) or header.splitlines() != header.rstrip("\n").split("\n"):
        found.append("extra lines")
    else:
        changed = [n for n, (a, b) in enumerate(zip(lines, base_lines, strict=True)) if a != b]
        if len(changed) > 1:
            found.append("more than one line changed")
    headings = sum(bool(_HEADING.match(line)) for line in lines)
    if headings != sum(bool(_HEADING.match(line)) for line in base_lines):
        found.append("heading")
    if any(_FENCE.match(line) for line in lines) or "```" in header or "~~~" in header:
        found.append("fence")
    if any(c != "\n" and unicodedata.category(c) in _HIDDEN for c in header):
        found.append("control/format character")
    return found


def indented(text: str) -> str:
    """A value as the header rendered it before: continuation lines indented by two spaces."""
    return "\n  ".join(text.strip().splitlines())


def before(text: str) -> list[str]:
    """The same checks on the value as the header rendered it before (indented continuations)."""
    value = indented(text)
    line = f"- [F1] {value}"
    found = []
    if "\n" in value or len(line.splitlines()) != 1:
        found.append("extra lines")
    if any(_HEADING.match(part) for part in line.split("\n")[1:]):
        found.append("heading")
    if any(_FENCE.match(part) for part in line.split("\n")) or "```" in value or "~~~" in value:
        found.append("fence")
    if any(c != "\n" and unicodedata.category(c) in _HIDDEN for c in value):
        found.append("control/format character")
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the check over ``DATA_DIR`` and print the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    args = parser.parse_args(argv)
    seen: set[str] = set()
    now: Counter[str] = Counter()
    old: Counter[str] = Counter()
    unchanged = single_line = 0
    failures: list[str] = []
    paths = list(files(args.data))
    if not paths:
        parser.error(f"{args.data} holds no claude_code/, tau_bench/ or swe_agent/ transcripts")
    for path in paths:
        for conversation in read_conversations(path):
            for message in conversation.messages:
                for text in texts(message):
                    if text in seen:
                        continue
                    seen.add(text)
                    for problem in before(text):
                        old[problem] += 1
                    for place, (base, header) in headers(text).items():
                        for problem in problems(base, header):
                            now[f"{place}: {problem}"] += 1
                            if len(failures) < 5:  # noqa: PLR2004 - a few examples are enough
                                failures.append(f"{path.name}: {place}: {problem}: {text[:80]!r}")
                    stripped = text.strip()
                    if stripped.isprintable() and "\n" not in stripped:
                        single_line += 1
                        _, header = headers(text)["item"]
                        unchanged += f"\n- [F1] {stripped}\n" in header
    print(f"distinct texts: {len(seen)}")
    print("rendered as before (indented continuation lines), texts that would:")
    for problem in ("extra lines", "heading", "fence", "control/format character"):
        print(f"  {problem}: {old[problem]}")
    print(f"inert rendering, structural problems: {sum(now.values())}")
    for key, count in sorted(now.items()):
        print(f"  {key}: {count}")
    for failure in failures:
        print(f"  e.g. {failure}")
    print(f"single-line printable texts: {single_line}; rendered byte for byte: {unchanged}")
    values = sorted(seen)
    old_s = min(timeit.repeat(lambda: [indented(t) for t in values], number=1, repeat=5))
    new_s = min(timeit.repeat(lambda: [inert(t) for t in values], number=1, repeat=5))
    chars = sum(map(len, values))
    print(
        f"time over {chars:,} characters: indented {old_s * 1e3:.1f} ms, "
        f"inert {new_s * 1e3:.1f} ms, ratio {new_s / old_s:.1f}"
    )
    return 1 if now else 0


if __name__ == "__main__":
    sys.exit(main())
