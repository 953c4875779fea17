"""The one seam every judgement about English text goes through.

progsum asks a `Judge` where sentences begin and end and what each does in its context
(`progsum.judge._judgement`); everything else it decides about text (is this a rule, and of which
modality; does this message reopen a binding item; is this a pleasantry; is this question still
open) is derived here from those two answers. The contract, the extractive summarizer,
consolidation, the guards and provenance ask `current()`, so one judge decides for the whole
pipeline. The default is `progsum.judge._linear.LinearJudge`, whose knowledge is the labelled
corpus it was trained on; a caller plugs in their own (one backed by their model, say) with
``Compactor(judge=...)`` or, around any code, ``with using(judge): ...``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterable, Iterator
from datetime import date
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from progsum.errors import ConfigError
from progsum.judge._judgement import KINDS, Context, Judgement, Kind
from progsum.judge._linear import LinearJudge
from progsum.judge._machine import check_tags, keeping
from progsum.judge._segment import sentences as _sentences

Author: TypeAlias = Literal["user", "assistant", "tool"]

__all__ = [
    "Judge",
    "context",
    "conversation",
    "current",
    "default_judge",
    "judge",
    "reopens",
    "sentences",
    "using",
]


@runtime_checkable
class Judge(Protocol):
    """What progsum asks about text. Implement both methods to plug in your own judge."""

    def sentences(self, text: str) -> tuple[str, ...]:
        """The whole sentences of ``text``'s prose, in order (machine lines left out)."""
        ...

    def judge(self, sentence: str, context: Context) -> Judgement:
        """What ``sentence`` does in ``context``. Must be deterministic: same input, same answer."""
        ...


class _Default:
    """`LinearJudge` on the shipped model, loaded on first use."""

    def sentences(self, text: str) -> tuple[str, ...]:
        return _sentences(text)

    def judge(self, sentence: str, context: Context) -> Judgement:
        return _linear().judge(sentence, context)


@functools.cache
def _linear() -> LinearJudge:
    return LinearJudge()


_DEFAULT = _Default()
_CURRENT: contextvars.ContextVar[Judge] = contextvars.ContextVar("progsum_judge", default=_DEFAULT)
_KIND: contextvars.ContextVar[Kind] = contextvars.ContextVar(
    "progsum_conversation", default="agent"
)


def default_judge() -> Judge:
    """The shipped judge."""
    return _DEFAULT


def current() -> Judge:
    """The judge in force here (`using`), else the shipped one."""
    return _CURRENT.get()


@contextlib.contextmanager
def using(
    judge: Judge | None,
    *,
    conversation: Kind | None = None,
    prose_tags: Iterable[str] | None = None,
) -> Iterator[Judge]:
    """Make ``judge`` the one `current` returns inside the block (None: leave it as it is).

    ``conversation`` (``agent`` or ``chat``) is the kind of conversation every `context` made
    inside the block says; ``prose_tags`` names the tags whose blocks inside user-role text are
    the person's own text (`progsum.judge._machine`); None leaves either as it is.

    Raises:
        ConfigError: an unknown kind of conversation, a tag that is no tag name, or no Judge.
    """
    if conversation is not None and conversation not in KINDS:
        raise ConfigError(
            f"conversation={conversation!r} is not a kind of conversation; use 'agent' (a person "
            "working with an assistant) or 'chat' (two people talking to each other)"
        )
    tags = check_tags(prose_tags) if prose_tags is not None else None
    kind_token = _KIND.set(conversation) if conversation is not None else None
    try:
        with keeping(tags) if tags is not None else contextlib.nullcontext():
            if judge is None:
                yield current()
                return
            with _judge(judge) as bound:
                yield bound
    finally:
        if kind_token is not None:
            _KIND.reset(kind_token)


@contextlib.contextmanager
def _judge(judge: Judge) -> Iterator[Judge]:
    if not isinstance(judge, Judge):
        raise ConfigError(
            f"judge={judge!r} is not a progsum Judge: give an object with "
            "sentences(text) -> tuple[str, ...] and judge(sentence, context) -> Judgement"
        )
    token = _CURRENT.set(judge)
    try:
        yield judge
    finally:
        _CURRENT.reset(token)


def conversation() -> Kind:
    """The conversation kind in force (`using`): ``"agent"`` unless a block names another."""
    return _KIND.get()


def context(
    author: Author,
    *,
    previous: str = "",
    speaker: str | None = None,
    day: date | None = None,
) -> Context:
    """A `Context` of the conversation kind in force (`using`)."""
    return Context(author, _KIND.get(), previous, speaker, day)


def sentences(text: str) -> tuple[str, ...]:
    """The current judge's sentences of ``text``."""
    return current().sentences(text)


def judge(sentence: str, context: Context) -> Judgement:
    """The current judge's verdict on ``sentence`` in ``context``."""
    return current().judge(sentence, context)


def reopens(text: str, context: Context) -> bool:
    """Whether a message (``text``) withdraws, relaxes or changes something agreed earlier.

    Only a sentence judged a ``revision`` does: a question, a prohibition ("Don't change the
    budget") or a reaffirmation ("The budget is final") never reopens anything.
    """
    judged = current()
    return any(judged.judge(s, context).label == "revision" for s in judged.sentences(text))
