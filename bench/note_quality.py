"""Note quality: every live header item at the end of a replay, checked by this script's own rules.

Every conversation of a set is compacted turn by turn (``progsum replay --budget 500 --keep 4``'s
policy, `progsum.cli._options.budget_policy`), and each live item of the final header is a *defect*
when it is a tag, a code line or a fragment (`defect`). `bench/retention.py` prints the counts
for all five data sets; the target is 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared_data import agent_logs, present

from progsum import Compactor
from progsum.cli._options import budget_policy
from progsum.replay._probes import replay
from progsum.state._conversation import ConversationState
from progsum.summarizers.extractive._summarizer import ExtractiveSummarizer
from progsum.summary._merge import live_items

__all__ = ["QUALITY_BUDGET", "QUALITY_KEEP", "Quality", "agent_sets", "defect", "quality"]

Message = dict[str, Any]

QUALITY_KEEP = 4
"""Messages the note-quality run keeps verbatim after each compaction (``--keep 4``)."""
QUALITY_BUDGET = 500
"""Trigger of the note-quality run (``progsum replay --budget 500 --keep 4``): small enough that
even MSC chats (~1,300 tokens) compact several times."""

_TAG = re.compile(r"<\s*/?\s*[A-Za-z][\w:.-]*(?:\s+[^<>]*)?/?\s*>")
_SMILEY = re.compile(r"(?:^|\s)[:;=][-o']?[()\[\]]+(?=\s|$)")
_CODE_START = re.compile(
    r"^(?:\s{4,}|\t|\$\s|>>>\s|#!|(?:def|class|import|return|const|let|var|function)\s)"
)
_CODE_CHARS = set("{}[]()<>=;$|\\/_*#@`~^&+")
_DANGLING = re.compile(
    r"\b(?:the|a|an|and|or|but|of|to|with|for|e\.g\.|i\.e\.|etc\.,)\s*$", re.IGNORECASE
)


def defect(text: str) -> str | None:
    """Why a header item is not a note a person would write ("tag", "code", "fragment"), or None."""
    if _TAG.search(text):
        return "tag"
    stripped = text.strip()
    symbols = sum(char in _CODE_CHARS for char in stripped)
    if "```" in text or _CODE_START.match(text) or (stripped and symbols * 3 >= len(stripped)):
        return "code"
    plain = _SMILEY.sub(" ", text)  # ":)" is a face, not a bracket left open
    balanced = all(plain.count(a) == plain.count(b) for a, b in ("()", "[]", "{}"))
    if not balanced or text.count("`") % 2 or text.count('"') % 2:
        return "fragment"
    if stripped.endswith(":") or _DANGLING.search(stripped):
        return "fragment"
    return None


@dataclass(frozen=True, slots=True)
class Quality:
    """Header items of one set's final summaries, and how many are defects."""

    conversations: int
    items: int
    defects: dict[str, int]
    examples: tuple[str, ...]


def quality(conversations: Sequence[tuple[Sequence[Message], Sequence[Any]]]) -> Quality:
    """Compact each conversation turn by turn and check every live item of its final header."""
    compactor = Compactor(
        policy=budget_policy(QUALITY_BUDGET, keep=QUALITY_KEEP), summarizer=ExtractiveSummarizer()
    )
    defects = {"tag": 0, "code": 0, "fragment": 0}
    examples: list[str] = []
    total = 0
    for messages, authors in conversations:
        state: ConversationState[Any] = ConversationState()
        for step in replay(messages, compactor, authors=authors or None):
            state = step.after
        if state.summary is None:
            continue
        for items in live_items(state.summary).values():
            for item in items:
                total += 1
                why = defect(item.text)
                if why is not None:
                    defects[why] += 1
                    if len(examples) < 5:  # noqa: PLR2004 - a few examples are enough
                        examples.append(f"{why}: {item.text[:100]}")
    return Quality(len(conversations), total, defects, tuple(examples))


def agent_sets(data: Path) -> dict[str, list[tuple[Sequence[Message], Sequence[Any]]]]:
    """The agent transcripts of the three agent sets, as imported (system prompt apart)."""
    found: dict[str, list[tuple[Sequence[Message], Sequence[Any]]]] = {}
    for name in present(data, ("tau_bench", "claude_code", "swe_agent")):
        logs = agent_logs(data, name)
        found[name] = [(c.messages, c.authors or ()) for log in logs for c in log.conversations]
    return found
