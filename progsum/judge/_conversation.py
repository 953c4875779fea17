"""The kind of a conversation the caller has not named: an agent at work, or two people chatting.

`Compactor(conversation=...)` says it; with None (the default) `infer` reads the structure of the
conversation, never its words: it is a ``chat`` when the assistant-role messages carry a speaker's
name (``name``, `progsum.messages._formats.speaker`) and no message calls a tool or answers a call;
anything else is an ``agent`` conversation. A two-person chat replayed through progsum names both
speakers; an agent's replies carry no speaker name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from progsum.judge._judgement import Kind
from progsum.messages._formats import MessageInfo, speaker

__all__ = ["Structure", "infer"]


@dataclass(frozen=True, slots=True)
class Structure:
    """What `infer` read of a conversation's first `upto` messages; `read` goes on from there."""

    upto: int = 0
    tools: bool = False
    """A message calls a tool or answers a call."""
    named: bool = False
    """An assistant-role message carries a speaker's name."""

    @property
    def kind(self) -> Kind:
        """``chat`` or ``agent`` for what was read (see the module docstring)."""
        return "chat" if self.named and not self.tools else "agent"

    def read(
        self, messages: Sequence[object], infos: Sequence[MessageInfo], length: int
    ) -> Structure:
        """The structure of the first ``length`` messages, reading only those after `upto`.

        A shorter ``length`` (an older state of the same log) is read from the start.
        """
        if length < self.upto:
            return Structure().read(messages, infos, length)
        if self.tools:
            return Structure(length, tools=True, named=self.named)
        named = self.named
        for at in range(self.upto, length):
            info = infos[at]
            if info.calls or info.results:
                return Structure(length, tools=True, named=named)
            if not named and info.role == "assistant" and speaker(messages[at]) is not None:
                named = True
        return Structure(length, tools=False, named=named)


def infer(messages: Sequence[object], infos: Sequence[MessageInfo]) -> Kind:
    """``chat`` or ``agent``, from the conversation's structure (see the module docstring)."""
    return Structure().read(messages, infos, len(infos)).kind
