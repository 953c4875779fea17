"""Hypothesis strategies for valid agent conversations, as plain dicts in the providers' shapes.

Three kinds of conversation are generated, each a fresh list of fresh dicts (the property tests
check object identity, so no message object is ever shared):

* ``anthropic``: Messages API shape with text, tool_use/tool_result (parallel calls answered by
  one user message, optionally with a text block after the results, as Claude Code does),
  thinking/redacted_thinking (none, first message of a turn only, or every message of a turn),
  images, empty contents, huge tool results and tool arguments;
* ``openai``: Chat Completions shape with optional leading system/developer messages, assistant
  ``tool_calls`` (one or several) answered by one ``tool`` message per call, in order;
* ``neutral``: text only (strings or text blocks), which both providers accept.

Every conversation opens (after any OpenAI system messages) with a user task message holding a
distinctive constraint string. Tool-call ids come from a small per-conversation pool, so real logs'
id reuse across rounds happens often. Agentic turns may run dozens of tool rounds without a human
message, and the very last message may be a tool call whose result has not arrived yet.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from hypothesis import strategies as st

__all__ = [
    "Conversation",
    "ConversationFormat",
    "Message",
    "anthropic_conversations",
    "big_text",
    "conversations",
    "neutral_conversations",
    "openai_conversations",
    "texts",
]

Message: TypeAlias = dict[str, Any]
ConversationFormat: TypeAlias = Literal["anthropic", "openai", "neutral"]

MAX_MESSAGES = 160
"""Soft cap on generated conversation length (a turn in progress is always finished)."""

# Arbitrary short text: ASCII prose and symbols, accented Latin, CJK and an emoji.
_ALPHABET = string.ascii_letters + string.digits + " .,:;-_/$%()[]{}=+#@!?\n" + "éüß€日本語🙂"
_HEX = "0123456789abcdef"
_TOOL_NAMES = ("bash", "read_file", "edit_file", "search", "get_reservation", "http_get")


_PHRASES = (
    "",
    "ok",
    "Let me look at the failing test first.",
    "Run the linter, then the unit tests.",
    "The build on main is red since 2025-03-14 (job #4711).",
    "Use /srv/app/config.yaml, not the copy in /tmp.",
    "Prefer small commits; one concern each.",
    "Répondez en français, s'il vous plaît.",
    "日本語のログを読んで",
    "Done 🙂",
    '{"status": 200, "items": [1, 2, 3]}',
    "   leading and trailing spaces   ",
    "line one\nline two\n\nline four",
)


def texts(max_size: int = 40) -> st.SearchStrategy[str]:
    """Short prose: mostly stock phrases (cheap to draw), sometimes arbitrary small text."""
    return st.one_of(
        st.sampled_from(_PHRASES),
        st.sampled_from(_PHRASES),
        st.sampled_from(_PHRASES),
        st.text(alphabet=_ALPHABET, max_size=min(max_size, 12)),
    )


def big_text(size: int, salt: int = 0) -> str:
    """Log-like text of exactly ``size`` characters (a huge tool result), built without entropy."""
    lines = []
    total = 0
    number = 0
    while total < size:
        line = (
            f"{number:06d} worker[{(salt + number) % 7}] GET /api/v2/items/{salt}-{number} "
            f"status=200 bytes={(number * 7919 + salt) % 100_000} elapsed=12ms\n"
        )
        lines.append(line)
        total += len(line)
        number += 1
    return "".join(lines)[:size]


@dataclass(frozen=True, slots=True)
class Conversation:
    """A generated conversation, in the order an agent would append it."""

    format: ConversationFormat
    messages: tuple[Message, ...]
    constraint: str
    """The distinctive constraint string stated in the first user task message."""
    pending: bool
    """The last message is a tool call whose result has not arrived yet."""

    @property
    def task_index(self) -> int:
        """Index of the first user task message (after any OpenAI system messages)."""
        return next(i for i, m in enumerate(self.messages) if m["role"] == "user")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis' pretty printer: the short repr, not every character of big results."""
        printer.text("Conversation(...)" if cycle else repr(self))

    def __repr__(self) -> str:
        shown = ",\n  ".join(_short(m) for m in self.messages)
        return (
            f"Conversation(format={self.format!r}, constraint={self.constraint!r}, "
            f"pending={self.pending}, messages=[\n  {shown}\n])"
        )


def _short(value: object) -> str:
    """A repr with long strings elided, so failing examples stay readable."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else f"<{len(value)} chars: {value[:30]!r}...>"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return repr(value)


# -- shared pieces ----------------------------------------------------------------------------


@st.composite
def constraints(draw: st.DrawFn) -> str:
    """A distinctive constraint string with exact values (an id, an amount, a path)."""
    token = draw(st.text(alphabet=_HEX, min_size=6, max_size=6))
    amount = draw(st.integers(100, 99_999))
    return (
        f"CONSTRAINT-{token}: never spend more than ${amount:,} and only write under /data/{token}"
    )


def _task_text(draw: st.DrawFn, constraint: str) -> str:
    before = draw(texts(30))
    return f"{before} Task: tidy the repository. {constraint}. Thanks!"


_RESULT_KINDS = ("short", "short", "short", "big", "empty", "blocks", "empty_blocks")
_ROUND_LENGTHS = st.sampled_from(("short",) * 5 + ("none", "long", "long"))


def _rounds(draw: st.DrawFn) -> int:
    kind = draw(_ROUND_LENGTHS)
    if kind == "none":
        return 0
    if kind == "long":
        return draw(st.integers(12, 40))
    return draw(st.integers(1, 4))


def _call_ids(draw: st.DrawFn, pool: Sequence[str]) -> list[str]:
    """One to three distinct ids for a round, drawn from the conversation's (small) pool."""
    return draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))


def _arguments(draw: st.DrawFn, salt: int) -> dict[str, Any]:
    if draw(st.integers(0, 9)) == 0:  # a big tool argument (e.g. a file being written)
        return {
            "path": f"/repo/gen_{salt}.py",
            "content": big_text(draw(st.integers(2_000, 9_000))),
        }
    return {"path": f"/repo/src/mod_{salt}.py", "query": draw(texts(20)), "limit": salt % 50}


def _result_text(draw: st.DrawFn, kind: str, salt: int) -> str:
    if kind == "big":
        return big_text(draw(st.integers(5_000, 40_000)), salt)
    if kind == "empty":
        return ""
    return draw(texts(60))


# -- Anthropic ----------------------------------------------------------------------------------


def _thinking_block(draw: st.DrawFn, salt: int) -> Message:
    if draw(st.integers(0, 4)) == 0:
        return {"type": "redacted_thinking", "data": f"EqQBCkYIARgCKkB{salt:08x}redacted"}
    return {"type": "thinking", "thinking": draw(texts(50)), "signature": f"sig-{salt:06d}"}


def _anthropic_human(draw: st.DrawFn, salt: int) -> Message:
    kind = draw(st.sampled_from(("string", "string", "blocks", "image", "empty", "empty_list")))
    if kind == "string":
        return {"role": "user", "content": draw(texts())}
    if kind == "blocks":
        return {"role": "user", "content": [{"type": "text", "text": draw(texts())}]}
    if kind == "image":
        return {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
                {"type": "text", "text": f"What is in screenshot {salt}?"},
            ],
        }
    if kind == "empty":
        return {"role": "user", "content": ""}
    return {"role": "user", "content": []}


def _anthropic_call(draw: st.DrawFn, ids: Sequence[str], think: bool, salt: int) -> Message:
    content: list[Message] = []
    if think:
        content.append(_thinking_block(draw, salt))
    if draw(st.booleans()):
        content.append({"type": "text", "text": draw(texts())})
    content.extend(
        {
            "type": "tool_use",
            "id": call_id,
            "name": draw(st.sampled_from(_TOOL_NAMES)),
            "input": _arguments(draw, salt + k),
        }
        for k, call_id in enumerate(ids)
    )
    return {"role": "assistant", "content": content}


def _anthropic_results(draw: st.DrawFn, ids: Sequence[str], salt: int) -> Message:
    content: list[Message] = []
    order = list(ids) if draw(st.integers(0, 3)) else list(reversed(ids))
    for k, call_id in enumerate(order):
        kind = draw(st.sampled_from(_RESULT_KINDS))
        inner: str | list[Message]
        if kind == "blocks":
            inner = [{"type": "text", "text": draw(texts())}]
        elif kind == "empty_blocks":
            inner = []
        else:
            inner = _result_text(draw, kind, salt + k)
        block: Message = {"type": "tool_result", "tool_use_id": call_id, "content": inner}
        if draw(st.integers(0, 9)) == 0:
            block["is_error"] = True
        content.append(block)
    if draw(st.integers(0, 5)) == 0:  # Claude Code puts a note after the results
        content.append({"type": "text", "text": draw(texts())})
    return {"role": "user", "content": content}


def _anthropic_final(draw: st.DrawFn, think: bool, salt: int) -> Message:
    if not think and draw(st.booleans()):
        empty = draw(st.integers(0, 5)) == 0
        return {"role": "assistant", "content": [] if empty else draw(texts(80))}
    content: list[Message] = [_thinking_block(draw, salt)] if think else []
    content.append({"type": "text", "text": draw(texts(80))})
    return {"role": "assistant", "content": content}


@st.composite
def anthropic_conversations(draw: st.DrawFn, max_turns: int = 10) -> Conversation:
    """Anthropic Messages API conversations, agentic turns with tool rounds and thinking."""
    constraint = draw(constraints())
    task = _task_text(draw, constraint)
    first: Message
    if draw(st.booleans()):
        first = {"role": "user", "content": task}
    else:
        first = {"role": "user", "content": [{"type": "text", "text": task}]}
    messages: list[Message] = [first]
    pool = [f"toolu_{n:02d}" for n in range(draw(st.integers(1, 5)))]
    turns = draw(st.integers(1, max_turns) | st.just(max_turns))
    pending = False
    for turn in range(turns):
        if turn:
            messages.append(_anthropic_human(draw, len(messages)))
        mode = draw(st.sampled_from(("none", "first", "each")))
        rounds = _rounds(draw)
        last_turn = turn == turns - 1 or len(messages) >= MAX_MESSAGES
        for r in range(rounds):
            think = mode == "each" or (mode == "first" and r == 0)
            ids = _call_ids(draw, pool)
            messages.append(_anthropic_call(draw, ids, think, len(messages)))
            messages.append(_anthropic_results(draw, ids, len(messages)))
        think = mode == "each" or (mode == "first" and rounds == 0)
        if last_turn and draw(st.integers(0, 3)) == 0:
            ids = _call_ids(draw, pool)
            messages.append(_anthropic_call(draw, ids, think, len(messages)))
            pending = True
        elif rounds == 0 or draw(st.integers(0, 4)):
            messages.append(_anthropic_final(draw, think, len(messages)))
        if last_turn:
            break
    return Conversation("anthropic", tuple(messages), constraint, pending)


# -- OpenAI ---------------------------------------------------------------------------------------


def _openai_call(draw: st.DrawFn, ids: Sequence[str], salt: int) -> Message:
    content = draw(st.sampled_from((None, None, "", "text")))
    return {
        "role": "assistant",
        "content": draw(texts()) if content == "text" else content,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": draw(st.sampled_from(_TOOL_NAMES)),
                    "arguments": json.dumps(_arguments(draw, salt + k)),
                },
            }
            for k, call_id in enumerate(ids)
        ],
    }


def _openai_result(draw: st.DrawFn, call_id: str, salt: int) -> Message:
    kind = draw(st.sampled_from(_RESULT_KINDS))
    if kind == "blocks":
        content: str | list[Message] = [{"type": "text", "text": draw(texts())}]
    else:
        content = _result_text(draw, "empty" if kind == "empty_blocks" else kind, salt)
    return {"role": "tool", "tool_call_id": call_id, "content": content}


@st.composite
def openai_conversations(draw: st.DrawFn, max_turns: int = 10) -> Conversation:
    """OpenAI Chat Completions conversations with system messages and (parallel) tool calls."""
    constraint = draw(constraints())
    messages: list[Message] = [
        {"role": role, "content": draw(texts())}
        for role in draw(st.lists(st.sampled_from(("system", "developer")), max_size=2))
    ]
    messages.append({"role": "user", "content": _task_text(draw, constraint)})
    pool = [f"call_{n}" for n in range(draw(st.integers(1, 5)))]
    turns = draw(st.integers(1, max_turns) | st.just(max_turns))
    pending = False
    for turn in range(turns):
        if turn:
            messages.append({"role": "user", "content": draw(texts())})
        rounds = _rounds(draw)
        last_turn = turn == turns - 1 or len(messages) >= MAX_MESSAGES
        for _ in range(rounds):
            ids = _call_ids(draw, pool)
            messages.append(_openai_call(draw, ids, len(messages)))
            messages.extend(_openai_result(draw, call_id, len(messages)) for call_id in ids)
        if last_turn and draw(st.integers(0, 3)) == 0:
            messages.append(_openai_call(draw, _call_ids(draw, pool), len(messages)))
            pending = True
        elif rounds == 0 or draw(st.integers(0, 4)):
            messages.append({"role": "assistant", "content": draw(texts(80))})
        if last_turn:
            break
    return Conversation("openai", tuple(messages), constraint, pending)


# -- neutral ------------------------------------------------------------------------------------


@st.composite
def neutral_conversations(draw: st.DrawFn, max_messages: int = 90) -> Conversation:
    """Text-only conversations (strings or text blocks) that fit both providers."""
    constraint = draw(constraints())
    messages: list[Message] = [{"role": "user", "content": _task_text(draw, constraint)}]
    for index in range(1, draw(st.integers(1, max_messages))):
        role = "assistant" if index % 2 else "user"
        kind = draw(st.sampled_from(("string", "string", "blocks", "big", "empty")))
        content: str | list[Message]
        if kind == "blocks":
            content = [{"type": "text", "text": draw(texts())}]
        elif kind == "big":
            content = big_text(draw(st.integers(1_000, 8_000)), index)
        elif kind == "empty":
            content = draw(st.sampled_from(("", "[]"))) if role == "user" else ""
            content = [] if content == "[]" else content
        else:
            content = draw(texts(80))
        messages.append({"role": role, "content": content})
    return Conversation("neutral", tuple(messages), constraint, pending=False)


def conversations(max_turns: int = 10) -> st.SearchStrategy[Conversation]:
    """Conversations of any of the three kinds."""
    return st.one_of(
        anthropic_conversations(max_turns=max_turns),
        openai_conversations(max_turns=max_turns),
        neutral_conversations(max_messages=9 * max_turns),
    )
