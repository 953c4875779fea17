"""What the header keeps, per variant: the chat rows of the retention gate for one setting each.

    python bench/retention_header.py DATA --streams 4 --variant base --variant header=0.6

A variant is ``base`` (the defaults), ``header=F`` (the header budget as a fraction of the input
window: a chat's default is `progsum.policy._policy.DEFAULT_CHAT_HEADER_SHARE`), ``share=F`` (the
offline summarizer's ``max_share``: a fold notes at most that share of its prose), ``recall=F``
(the recall budget as a fraction of the input window), ``chat`` (the
compactor told the conversation is a chat between people, `Compactor(conversation="chat")`), or
several joined by ``+``. Each is replayed on both chat sets with plain user and assistant roles
(`bench/retention.py`'s `score`), and one line per set and window gives header only beside
truncation to the full window, with recall beside plain BM25 filling the whole window, the
compactions per 1,000 messages and the mean estimated tokens per request (bench/retention.md,
"A header that keeps what it noted").
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retention import SIZES, memorybank, msc, plain, ratio, score

from progsum.judge._judgement import Kind
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer


def settings(variant: str) -> tuple[float | None, float | None, float | None, Kind | None]:
    """The header budget, ``max_share``, recall budget and conversation kind a variant names.

    None: the default.
    """
    header = share = recall = None
    kind: Kind | None = None
    for part in variant.split("+"):
        name, _, value = part.partition("=")
        if name == "header":
            header = float(value)
        elif name == "share":
            share = float(value)
        elif name == "recall":
            recall = float(value)
        elif name in {"chat", "agent"}:
            kind = "chat" if name == "chat" else "agent"
        elif name != "base":
            raise SystemExit(
                f"unknown variant part {part!r}: use base, chat, header=F, share=F or recall=F"
            )
    return header, share, recall, kind


def main(argv: Sequence[str] | None = None) -> None:
    """Print one row per variant, set and window."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--streams", type=int, default=12)
    parser.add_argument("--variant", action="append", default=None)
    parser.add_argument("--sets", nargs="+", default=["MSC", "MemoryBank"])
    args = parser.parse_args(argv)
    loaded = {"MSC": msc, "MemoryBank": memorybank}
    print(
        "| variant | set | window | header only | ÷ truncation | with recall | ÷ BM25 "
        "| compactions per 1,000 | tokens per request | over |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.sets:
        conversations = plain(loaded[name](args.data))
        for variant in args.variant or ["base"]:
            header, share, recall, kind = settings(variant)
            summarizer: Any = ExtractiveSummarizer(max_share=share)
            for size in args.sizes:
                started = time.perf_counter()
                s = score(
                    conversations,
                    size,
                    args.streams,
                    header,
                    summarizer=summarizer,
                    recall=recall,
                    conversation=kind,
                )
                n = max(s.probes, 1)
                print(
                    f"| {variant} | {name} | {size:,} | {s.progsum / n:.1%} | "
                    f"{ratio(s.progsum, s.full):.2f}x | {s.recall / n:.1%} | "
                    f"{ratio(s.recall, s.bm25):.2f}x | {s.per_1000:.1f} | {s.per_request:,.0f} | "
                    f"{s.over + s.recall_over} |",
                    flush=True,
                )
                print(f"  {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
