r"""A segment as text for a summarizer model: delimited messages, clipped tool data, escaped markup.

Pure functions, shared by model summarizers. `render_segment` turns ``(log_index, message)`` pairs
(Anthropic or OpenAI shape, dicts or SDK objects) into text a model can read unambiguously::

    <message index="12" role="assistant">
    Let me run the tests.
    <tool_use id="toolu_01" name="bash">
    {"command": "pytest -q"}
    </tool_use>
    </message>

Rules:

* **Text is kept whole.** Tool inputs and tool results (Anthropic ``tool_use``/``tool_result``,
  OpenAI ``tool_calls``/``tool`` messages) longer than ``clip_chars`` keep their head and tail
  around a marker saying how much was cut: ``[… 12,345 characters clipped …]``. The cut snaps to
  whitespace nearby, so a value is not split in two.
* **Thinking is left out**, shown as ``[thinking omitted]``: it is the assistant's scratch work
  (hypotheses, dead ends), not what was said or done; the provider drops it from the agent's own
  context after the turn anyway, and summarizing it would turn guesses into "facts". Redacted
  thinking is unreadable by design.
* **Media become placeholders**: ``[image]``, ``[document: title]``, ``[audio]``, ``[file]``.
* **Markup cannot be forged.** Every tag the summary prompt uses is in `TAGS`. Anywhere in
  conversation text (any case, with or without a slash or spaces, or in look-alike characters:
  `progsum.messages._reading`) the ``<`` of such a tag is written ``&lt;``, so content can
  neither close a message nor open a new one. Attribute values
  are JSON strings. Line breaks become ``\n`` and whitespace-only lines are emptied (Instructor
  dedents prompt text; this keeps what is sent byte-identical to what was rendered).

`source_text` gives the unclipped text of the same parts (tool data as its string and number
leaves, not JSON-escaped): what the exact-value check compares new summary items against.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from progsum.messages._formats import Message
from progsum.messages._formats import field as read
from progsum.messages._reading import reading, reads_as
from progsum.messages._responses import as_chat

__all__ = [
    "CLIP_MARKER",
    "TAGS",
    "ToolPart",
    "clip",
    "escape",
    "neutralise",
    "plain_content",
    "render_segment",
    "source_text",
    "tool_parts",
]

TAGS = (
    *("task", "prior_summary", "must_keep", "segment", "message", "tool_use", "tool_result"),
    *("recalled_history", "excerpt"),
)
"""Every tag of the summary prompt and the recall block; conversation text can never produce one."""

CLIP_MARKER = "[… {cut:,} characters clipped …]"
"""Put where tool data was cut; ``cut`` is the number of characters removed."""

THINKING = "[thinking omitted]"

_FORGED = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(TAGS) + r")\b)", re.IGNORECASE)
OPENERS = reads_as("<")
"""Every character that reads as ``<`` (`progsum.messages._reading`: NFKC, case, look-alikes):
a tag can only be read where one of them is."""
_SNAP = 0.1
"""Share of a clipped half within which the cut moves to whitespace."""
_MEDIA = {
    "image": "image",
    "image_url": "image",
    "input_image": "image",
    "document": "document",
    "file": "file",
    "input_file": "file",
    "input_audio": "audio",
    "audio": "audio",
}
_SKIPPED_KEYS = frozenset({"signature", "cache_control", "citations"})

Kind = Literal["text", "tool_use", "tool_result", "note"]


@dataclass(frozen=True, slots=True)
class _Part:
    """One piece of a message: shown text, the tag attributes, and the raw text for value checks."""

    kind: Kind
    text: str
    attrs: tuple[tuple[str, str], ...] = ()
    source: tuple[str, ...] = ()


def escape(text: str) -> str:
    r"""Conversation text made safe to place inside the prompt's markup.

    Line breaks become ``\n``, whitespace-only lines become empty, and the character that opens
    anything that reads as one of `TAGS` becomes ``&lt;`` (`neutralise`). Nothing else changes.
    """
    lines = (line if line.strip() else "" for line in text.splitlines())
    return neutralise("\n".join(lines), _FORGED)


def neutralise(text: str, forged: re.Pattern[str]) -> str:
    """``text`` with the opening character of each match of ``forged`` written ``&lt;``.

    ``forged`` (a pattern over lowercase ASCII starting with ``<``) is matched on the text as a
    reader sees it (`progsum.messages._reading`: format characters ignored, NFKC, case folded,
    look-alikes such as U+2039 or a Cyrillic Ie read as the ASCII character they resemble), and
    only the original character that reads as the match's ``<`` is replaced.
    """
    if text.isascii():
        return forged.sub("&lt;", text)
    if not any(opener in text for opener in OPENERS):
        return text  # no character that reads as "<": nothing reads as a tag
    folded, origin = reading(text)
    opening = {origin[m.start()] for m in forged.finditer(folded)}
    if not opening:
        return text
    return "".join("&lt;" if at in opening else char for at, char in enumerate(text))


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to at most ``limit`` characters (plus `CLIP_MARKER`): its head and its tail.

    ``limit=None`` never clips. The head gets half the budget and the tail the rest; each cut moves
    to whitespace when there is some within a tenth of its half, so a value is not split.
    """
    if limit is None or len(text) <= limit:
        return text
    head = limit // 2
    head_end = _snap(text, head, -1)
    tail_start = _snap(text, len(text) - (limit - head), +1)
    marker = CLIP_MARKER.format(cut=tail_start - head_end)
    return "\n".join(piece for piece in (text[:head_end], marker, text[tail_start:]) if piece)


def _snap(text: str, at: int, step: Literal[-1, 1]) -> int:
    """Move a cut into the clipped part, onto a nearby line break (else a space), if there is one.

    A head's cut (``step=-1``) moves left onto the whitespace; a tail's (``step=1``) moves right,
    past it. The whitespace itself is counted as clipped.
    """
    reach = int(min(at, len(text) - at) * _SNAP)
    if step < 0:
        window = text[at - reach : at]
        for chars in ("\n", " \t"):
            found = max(window.rfind(c) for c in chars)
            if found >= 0:
                return at - reach + found
    else:
        window = text[at : at + reach]
        for chars in ("\n", " \t"):
            hits = [i for c in chars if (i := window.find(c)) >= 0]
            if hits:
                return at + min(hits) + 1
    return at


def render_segment(pairs: Iterable[tuple[int, Message]], *, clip_chars: int | None) -> str:
    """The messages as delimited text: one ``<message index=… role=…>`` element each.

    Args:
        pairs: ``(log_index, message)`` pairs, e.g. a `progsum.summary._request.Segment`.
        clip_chars: Longest tool input or tool result kept whole; None keeps everything.
    """
    blocks: list[str] = []
    for index, message in pairs:
        role = str(read(message, "role") or "")
        lines = [f"<message index={_attr(index)} role={_attr(role)}>"]
        lines.extend(_show(part, clip_chars) for part in _parts(message))
        lines.append("</message>")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def source_text(messages: Iterable[Message]) -> str:
    """The unclipped text of every part `render_segment` shows, tool data as plain leaves.

    Thinking and media are not included: the model never sees them, so no value may come from
    them.
    """
    pieces: list[str] = []
    for message in messages:
        content = plain_content(message)
        if content is None:
            pieces.extend(piece for part in _parts(message) for piece in part.source)
        elif content:  # a plain message: its one text part
            pieces.append(content)
    return "\n".join(pieces)


class ToolPart(NamedTuple):
    """A tool call or result (or a text piece) of a message, read the way `render_segment` shows it.

    ``text`` is a call's input as JSON text (OpenAI: the arguments string), a result's content as
    text, or prose; ``name`` is the called tool (empty for results and text).
    """

    kind: Kind
    id: str
    name: str
    text: str
    error: bool


def tool_parts(message: Message) -> Iterator[ToolPart]:
    """The text, tool calls and tool results of ``message``, in order (no thinking, no media)."""
    for part in _parts(message):
        if part.kind == "note":
            continue
        attrs = dict(part.attrs)
        yield ToolPart(
            part.kind,
            attrs.get("id", ""),
            attrs.get("name", ""),
            part.text,
            attrs.get("error") == "true",
        )


# -- reading messages ----------------------------------------------------------------------------


def plain_content(message: Message) -> str | None:
    """The string content of a plain chat message, which `_parts` reads as one text part.

    Plain: a dict with a role other than ``tool``, no tool calls, not a Responses item. Any
    other message: None.
    """
    if type(message) is dict and "type" not in message and "tool_calls" not in message:
        content = message.get("content")
        if type(content) is str and message.get("role") != "tool":
            return content
    return None


def _parts(message: Message) -> Iterator[_Part]:
    plain = plain_content(message)  # most messages: read without the general checks
    if plain is None:
        return _any_parts(message)
    return iter((_Part("text", plain, source=(plain,)),) if plain else ())


def _any_parts(message: Message) -> Iterator[_Part]:
    """The parts of any message: `_parts` without the shortcut for plain ones."""
    message = as_chat(message)  # Responses items are read as Chat Completions messages
    role = read(message, "role")
    content = read(message, "content")
    if role == "tool":  # OpenAI tool message
        text = _content_text(content)
        yield _Part(
            "tool_result", text, (("id", str(read(message, "tool_call_id") or "")),), (text,)
        )
    elif isinstance(content, str):
        if content:
            yield _Part("text", content, source=(content,))
    elif isinstance(content, Sequence):
        for block in content:
            yield from _block_parts(block)
    for call in read(message, "tool_calls") or ():
        function = read(call, "function")
        arguments = read(function, "arguments", "")
        raw = arguments if isinstance(arguments, str) else _dumps(arguments)
        attrs = (("id", str(read(call, "id") or "")), ("name", str(read(function, "name") or "")))
        yield _Part("tool_use", raw, attrs, (raw, *_leaves(_loads(raw))))


def _block_parts(block: object) -> Iterator[_Part]:
    kind = str(read(block, "type") or "")
    if kind == "text":
        text = str(read(block, "text") or "")
        yield _Part("text", text, source=(text,))
    elif kind == "refusal":
        text = str(read(block, "refusal") or "")
        yield _Part("text", text, source=(text,))
    elif kind in ("thinking", "redacted_thinking"):
        yield _Part("note", THINKING)
    elif kind in _MEDIA:
        title = read(block, "title")
        label = f"[{_MEDIA[kind]}: {title}]" if title else f"[{_MEDIA[kind]}]"
        yield _Part("note", label, source=(str(title),) if title else ())
    elif kind.endswith("tool_use"):  # tool_use, server_tool_use, mcp_tool_use
        tool_input = read(block, "input", {})
        text = _dumps(tool_input)
        call = (("id", str(read(block, "id") or "")), ("name", str(read(block, "name") or "")))
        yield _Part("tool_use", text, call, _leaves(tool_input))
    elif kind.endswith("tool_result"):  # tool_result, web_search_tool_result, ...
        inner = read(block, "content", "")
        text = _content_text(inner)
        answer: tuple[tuple[str, str], ...] = (("id", str(read(block, "tool_use_id") or "")),)
        if read(block, "is_error"):
            answer += (("error", "true"),)
        source = (inner,) if isinstance(inner, str) else _leaves(inner)
        yield _Part("tool_result", text, answer, source)
    else:
        data = _dumps(_plain(block))
        yield _Part("note", f"[{kind or 'unknown'} block] {data}", source=_leaves(_plain(block)))


def _content_text(content: object) -> str:
    """Tool-result content as text: a string, or its blocks joined (media as placeholders)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        pieces: list[str] = []
        for block in content:
            pieces.extend(part.text for part in _block_parts(block))
        return "\n".join(pieces)
    return _dumps(_plain(content))


# -- showing parts -------------------------------------------------------------------------------


def _show(part: _Part, clip_chars: int | None) -> str:
    if part.kind in ("text", "note"):
        return escape(part.text)
    attrs = "".join(f" {name}={_attr(value)}" for name, value in part.attrs)
    body = escape(clip(part.text, clip_chars))
    return f"<{part.kind}{attrs}>\n{body}\n</{part.kind}>" if body else f"<{part.kind}{attrs}/>"


def _attr(value: object) -> str:
    """An attribute value as a JSON string: quotes, backslashes and line breaks escaped."""
    return escape(json.dumps(str(value), ensure_ascii=False))


# -- plain data ----------------------------------------------------------------------------------


def _plain(value: object) -> object:
    """SDK objects (pydantic models) as plain dicts; everything else unchanged."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(exclude_none=True)
    return value


def _dumps(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(_plain(value), ensure_ascii=False, default=_plain)
    except (TypeError, ValueError):
        return repr(value)


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _leaves(value: object) -> tuple[str, ...]:
    """Every string and number in ``value`` (keys too), depth first; signatures, media skipped."""
    found: list[str] = []
    stack: list[object] = [_plain(value)]
    while stack:
        item = _plain(stack.pop())
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int | float):
            found.append(str(item))
        elif isinstance(item, Mapping):
            if item.get("type") in _MEDIA or item.get("type") == "redacted_thinking":
                continue
            for key, inner in item.items():
                if key not in _SKIPPED_KEYS:
                    found.append(str(key))
                    stack.append(inner)
        elif isinstance(item, Sequence):
            stack.extend(reversed(item))
    return tuple(found)
