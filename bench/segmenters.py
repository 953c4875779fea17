r"""Sentence segmenters side by side: quality on the issue's cases, and speed on real chat text.

    python bench/segmenters.py /work/shared/data

Candidates: the old split (``(?<=[.!?])\\s+|\\n+``), `progsum.judge._segment.sentences` (line pass,
then syntok only where a period is ambiguous; run uncached here), syntok on whole texts, and pysbd
and blingfire when installed (they are not dependencies; a missing one is skipped). Quality: how
many of `CASES` each splits exactly as expected, whitespace collapsed (code, tags and logs must give
nothing). Speed: microseconds per utterance over the MSC session-1/2 utterances (DATA_DIR/msc),
every candidate timed in the same run, one after the other.
"""

from __future__ import annotations

import argparse
import importlib
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from shared_data import msc_records

from progsum.judge import _segment as segment

Splitter = Callable[[str], list[str]]

CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        (
            "Note however that you cannot use any interactive session commands (e.g. python, vim) "
            "in this environment, but you can write scripts and run them."
        ),
        (
            (
                "Note however that you cannot use any interactive session commands (e.g. python, "
                "vim) in this environment, but you can write scripts and run them."
            ),
        ),
    ),
    (
        "I saw Dr. Smith today. He said J.K. Rowling lives nearby.",
        ("I saw Dr. Smith today.", "He said J.K. Rowling lives nearby."),
    ),
    (
        "The meeting is at 3 p.m. on Jan. 5. Please don't be late!",
        ("The meeting is at 3 p.m. on Jan. 5.", "Please don't be late!"),
    ),
    (
        "Options:\n1. Fly to Rome.\n2. Take the train.",
        ("Fly to Rome.", "Take the train."),
    ),
    ("Run it:\n```\nx = 1. y = 2.\n```\nThen tell me.", ("Then tell me.",)),
    ("<task-id>b0be39e</task-id>\n<status>completed</status>", ()),
    ('Traceback (most recent call last):\n  File "a.py", line 3\nValueError: bad.', ()),
    ("I love it!! Really? Yes.", ("I love it!!", "Really?", "Yes.")),
)


def _clean(pieces: Sequence[str]) -> list[str]:
    return [" ".join(p.split()) for p in pieces if p.strip()]


def candidates() -> dict[str, Splitter]:
    """Every segmenter that can run here."""
    found: dict[str, Splitter] = {
        "old regex": lambda t: _clean(re.split(r"(?<=[.!?])\s+|\n+", t)),
        "progsum.judge._segment": lambda t: list(segment.sentences.__wrapped__(t)),
    }
    syntok = importlib.import_module("syntok.segmenter")
    found["syntok alone"] = lambda t: _clean(
        ["".join(tok.spacing + tok.value for tok in s) for p in syntok.analyze(t) for s in p]
    )
    try:
        pysbd = importlib.import_module("pysbd")
        seg = pysbd.Segmenter(language="en", clean=False)
        found["pysbd"] = lambda t: _clean(seg.segment(t))
    except ImportError:
        pass
    try:
        blingfire = importlib.import_module("blingfire")
        found["blingfire"] = lambda t: _clean(blingfire.text_to_sentences(t).split("\n"))
    except ImportError:
        pass
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Print quality and speed per segmenter."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    args = parser.parse_args(argv)
    texts = [
        turn["text"]
        for record in msc_records(args.data, limit=200)
        for dialog in record["previous_dialogs"]
        for turn in dialog["dialog"]
    ]
    print(f"| segmenter | issue cases exact (of {len(CASES)}) | us per MSC utterance |")
    print("|---|---:|---:|")
    for name, split in candidates().items():
        exact = sum(tuple(split(text)) == want for text, want in CASES)
        started = time.perf_counter()
        for text in texts:
            split(text)
        micros = (time.perf_counter() - started) / len(texts) * 1e6
        print(f"| {name} | {exact} | {micros:.1f} |")
    print(f"({len(texts):,} utterances)")


if __name__ == "__main__":
    main()
