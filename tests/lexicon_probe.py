"""What the lexicon's word lists decide, read from the lexicon file given.

    python -m tests.lexicon_probe LEXICON

Run by tests/test_lexicon.py in a process of its own, so that every pattern progsum builds from
the lexicon is built from that file; prints one JSON object, a probe's name to its answer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from progsum import ConversationState
from progsum.contract._artifacts import trail
from progsum.contract._guards import constraint_field, fact_field
from progsum.judge import _lexicon as lexicon
from progsum.judge._judgement import Judgement
from progsum.judge._provenance import user_prose
from progsum.judge._segment import is_machine_line, is_whole, sentences
from progsum.summarizers.extractive._kinds import kinds
from progsum.summarizers.extractive._routing import routes
from progsum.summary._schema import FieldSpec, SchemaSpec, Summary
from progsum.testing import segment_of


def _read_from(path: Path) -> None:
    """Point progsum at the lexicon file ``path``, forgetting the one read so far."""
    lexicon.LEXICON_PATH = path
    for cached in (
        lexicon.lexicon,
        lexicon.words,
        lexicon.table,
        lexicon.alternation,
        lexicon.expressions,
    ):
        cached.cache_clear()


def _tool_trail(tool: str, **args: str) -> list[str]:
    """The trail lines of one call of ``tool`` with ``args``, answered "done"."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": tool, "input": args}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}],
        },
    ]
    return [a.text for a in trail(segment_of(ConversationState(messages)))]


def _field(name: str, *, binding: bool) -> FieldSpec:
    return FieldSpec(name=name, label=name.title(), description="", binding=binding, id_prefix="X")


def _schema(*fields: FieldSpec) -> SchemaSpec:
    return SchemaSpec(model=Summary, objective=None, lists=fields)


def probes() -> dict[str, Any]:
    """Each probe's answer under the lexicon read now."""
    fact = Judgement(label="fact")
    constraint = constraint_field(_schema(_field("taboos", binding=True)))
    facts = fact_field(_schema(_field("scratch", binding=False), _field("trivia", binding=False)))
    return {
        "machine.code_keywords": is_machine_line("banana split for two"),
        "machine.code_clauses": is_machine_line("peel it now please"),
        "machine.log_levels": is_machine_line("NOTICE: the disk is full"),
        "machine.output_levels": user_prose({"role": "user", "content": "notice: disk full"}),
        "machine.output_openers": user_prose({"role": "user", "content": "Resolving deltas: done"}),
        "sentences.abbreviations": sentences("We met Sgt. pepper there."),
        "sentences.dangling": is_whole("I like banana"),
        "kinds.ordinals": "dates" in kinds("We met on 1er May.", fact, "user", marked=False),
        "kinds.day_of": "dates" in kinds("We met the 3rd in May.", fact, "user", marked=False),
        "tools.create": _tool_trail("stash_notes", file_path="notes.txt"),
        "tools.search": _tool_trail("lookup_docs", query="jinja"),
        "fields.constraints": constraint and constraint.name,
        "fields.facts": facts and facts.name,
        "routes.questions": routes(_schema(_field("puzzles", binding=False))).get("questions"),
    }


if __name__ == "__main__":
    _read_from(Path(sys.argv[1]))
    sys.stdout.write(json.dumps(probes()) + "\n")
