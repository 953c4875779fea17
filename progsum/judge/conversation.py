"""The kind of a conversation the caller has not named: an agent at work, or two people chatting.

`Compactor(conversation=...)` says it; with None (the default) `infer` reads the structure of the
conversation, never its words: it is a ``chat`` when the assistant-role messages carry a speaker's
name (``name``, `progsum.messages.formats.speaker`) and no message calls a tool or answers a call;
anything else is an ``agent`` conversation. A two-person chat replayed through progsum names both
speakers; an agent's replies carry no speaker name.
"""

from __future__ import annotations

from collections.abc import Sequence

from progsum.judge.judgement import Kind
from progsum.messages.formats import MessageInfo, speaker

__all__ = ["infer"]


def infer(messages: Sequence[object], infos: Sequence[MessageInfo]) -> Kind:
    """``chat`` or ``agent``, from the conversation's structure (see the module docstring)."""
    named = False
    for message, info in zip(messages, infos, strict=True):
        if info.calls or info.results:
            return "agent"
        if info.role == "assistant" and speaker(message) is not None:
            named = True
    return "chat" if named else "agent"
