"""What a judge says about a sentence: its label in context, and for a rule its modality.

The labels are the corpus's (``tests/data/judge/GUIDE.md`` defines each with examples):

* ``rule`` (with a `Modality`), ``decision`` and ``revision`` bind: only a person's sentence in
  an agent conversation can be one;
* ``todo`` and ``question`` are open threads until done or answered;
* ``preference`` and ``fact`` are worth remembering;
* ``remark``, ``chatter`` and ``machine`` are never items.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Literal, TypeAlias, get_args

__all__ = [
    "BINDING",
    "KINDS",
    "LABELS",
    "MODALITIES",
    "NEVER_ITEMS",
    "Context",
    "Judgement",
    "Kind",
    "Label",
    "Modality",
]

Label: TypeAlias = Literal[
    "machine",
    "revision",
    "rule",
    "decision",
    "todo",
    "question",
    "preference",
    "fact",
    "remark",
    "chatter",
]
LABELS: tuple[Label, ...] = get_args(Label)

Modality: TypeAlias = Literal["must", "must_not", "limit", "requirement"]
MODALITIES: tuple[Modality, ...] = get_args(Modality)

Kind: TypeAlias = Literal["agent", "chat"]
"""``agent``: a person working with an assistant; ``chat``: two people talking to each other."""
KINDS: tuple[Kind, ...] = get_args(Kind)

BINDING: frozenset[Label] = frozenset({"rule", "decision", "revision"})
NEVER_ITEMS: frozenset[Label] = frozenset({"remark", "chatter", "machine"})
PERSON_ONLY: frozenset[Label] = frozenset({"rule", "revision"})
"""Labels only the person's own sentences can carry (never the assistant's, never a tool's)."""
AGENT_ONLY: frozenset[Label] = frozenset({"rule", "revision", "decision", "todo"})
"""Labels that need an assistant to be addressed: none of them occurs in a two-person chat."""


ASKED_NEVER: frozenset[Label] = frozenset({"rule", "revision", "decision"})
"""Labels a sentence that ends in a question mark never carries: a question binds nothing."""


@dataclass(frozen=True, slots=True)
class Context:
    """Where a sentence was said: what a reader needs besides its words."""

    author: Literal["user", "assistant", "tool"] = "user"
    """Who wrote the message (`progsum.judge._provenance.Author`)."""
    kind: Kind = "agent"
    previous: str = ""
    """The end of the message before it (its last sentence is what a reply answers)."""
    speaker: str | None = None
    """The speaker's name, when the message carries one."""
    day: date | None = None
    """The day the message carries, when it carries one."""


@dataclass(frozen=True, slots=True)
class Judgement:
    """A judge's verdict on one sentence."""

    label: Label
    modality: Modality | None = None
    """For a ``rule``: must, must_not, limit or requirement; else None."""
    confidence: float = 1.0
    """The judge's probability for ``label``, in [0, 1]."""

    @property
    def binding(self) -> bool:
        """Whether the sentence binds: a rule, a decision or a revision."""
        return self.label in BINDING

    @property
    def item(self) -> bool:
        """Whether the sentence may become a summary item at all."""
        return self.label not in NEVER_ITEMS
