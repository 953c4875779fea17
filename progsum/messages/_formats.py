"""Reading messages as the caller has them: Anthropic, OpenAI Chat Completions, Responses items.

OpenAI Responses API input items are read in `progsum.messages._responses`.

The engine never rewrites a caller's message. It reads each one once, through this adapter, into a
small `MessageInfo` (role, tool calls made and answered, thinking) and works from that. Messages
may be dicts or SDK objects (``response.content`` blocks are pydantic models); both read the same.

Pairing is positional: a tool result answers a call of the assistant message right before it
(OpenAI: right before its run of ``tool`` messages), because real logs reuse call ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Literal, NamedTuple, TypeAlias

from progsum.errors import MessageFormatError
from progsum.messages import _responses as responses

__all__ = [
    "THINKING_BLOCKS",
    "Format",
    "Message",
    "MessageInfo",
    "Part",
    "field",
    "inspect",
    "is_safe_cut",
    "moment",
    "parts",
    "speaker",
    "to_record",
]

Message: TypeAlias = Mapping[str, Any]
"""A message as the caller has it: a dict (or an SDK object) in Anthropic or OpenAI shape."""

Format: TypeAlias = Literal["anthropic", "openai", "responses"]
Role: TypeAlias = Literal["system", "user", "assistant", "tool"]

_ANTHROPIC_ROLES = ("user", "assistant")
_OPENAI_ONLY_ROLES = {"system": "system", "developer": "system", "tool": "tool"}
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
_ANTHROPIC_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "image",
        "document",
        "search_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)
FORMAT_NAMES: Mapping[Format, str] = {
    "anthropic": "Anthropic",
    "openai": "OpenAI",
    "responses": "OpenAI Responses",
}
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
"""Content block types that carry a model's thinking (signed: sent back as received)."""
_ROLES_HINT = (
    "use 'user' or 'assistant' (Anthropic), or 'system', 'developer', 'user', 'assistant', "
    "'tool' (OpenAI)"
)


def field(obj: object, key: str, default: Any = None) -> Any:  # noqa: ANN401 - messages are untyped JSON
    """Read ``key`` from a dict-like message or block, or from an SDK object's attribute."""
    if type(obj) is dict:  # the common case, without the ABC check below
        return obj.get(key, default)
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


class MessageInfo(NamedTuple):
    """What the engine needs to know about one message, read once when it is appended.

    Attributes:
        role: ``system`` (OpenAI system/developer), ``user``, ``assistant`` or ``tool`` (OpenAI).
        format: The format this message alone proves, or None when it fits both.
        evidence: Why the format was decided (used in mixed-format errors).
        calls: Ids of the tool calls this message makes, in order (repeats allowed).
        results: Ids of the tool calls this message answers, in order.
        thinking_first: The content starts with a thinking or redacted_thinking block.
        has_thinking: The content holds a thinking or redacted_thinking block.
        round_calls: Call ids a following result message may still answer.
        turn_thinking: The assistant turn this message belongs to has shown thinking so far.
    """

    role: Role
    format: Format | None
    evidence: str
    calls: tuple[str, ...]
    results: tuple[str, ...]
    thinking_first: bool
    has_thinking: bool
    round_calls: tuple[str, ...] = ()
    turn_thinking: bool = False

    @property
    def is_result(self) -> bool:
        """The message carries tool results (an OpenAI tool message or an Anthropic tool_result)."""
        return bool(self.results) or self.role == "tool"

    @property
    def is_human(self) -> bool:
        """A user turn that is not (even partly) a tool result: it starts a new assistant turn."""
        return self.role == "user" and not self.results


def inspect(message: object, index: int, previous: MessageInfo | None) -> MessageInfo:
    """Read one message; ``previous`` is the info of the message before it in the log.

    Raises:
        MessageFormatError: the message is malformed, or a tool result has no call before it.
    """
    if (
        type(message) is dict
        and type(message.get("content")) is str
        and not ("type" in message or "tool_calls" in message)
    ):  # the common cases, without the general checks of `_inspect`
        role = message.get("role")
        call_id = message.get("tool_call_id")
        if call_id is None:
            if role == "user":
                return _PLAIN_USER
            if role == "assistant":
                return _PLAIN_ASSISTANT[previous is not None and previous.turn_thinking]
        elif role == "tool" and type(call_id) is str:
            return _link(_TOOL_RESULT._replace(results=(call_id,)), index, previous)
    return _inspect(message, index, previous)


def _inspect(message: object, index: int, previous: MessageInfo | None) -> MessageInfo:
    """`inspect` for any message: every format, every check."""
    item = responses.read_item(message, index)
    if item is not None:
        evidence = f"it is a Responses {item.kind!r} item"
        info = MessageInfo(
            item.role, "responses", evidence, item.calls, item.results, item.thinking, item.thinking
        )
        return _link(info, index, previous)
    raw_role = _raw_role(message, index)
    fmt: Format | None = None
    evidence = ""
    if raw_role in _OPENAI_ONLY_ROLES:
        fmt, evidence = "openai", f"it has role {raw_role!r}"
        role: Role = "tool" if raw_role == "tool" else "system"
    else:
        role = "user" if raw_role == "user" else "assistant"

    calls: list[str] = []
    tool_calls = field(message, "tool_calls")
    if tool_calls is not None:
        if role != "assistant":
            raise MessageFormatError(
                index, f"has 'tool_calls' but role {raw_role!r}; only assistant messages make calls"
            )
        fmt, evidence = _decide(index, fmt, evidence, "openai", "it has 'tool_calls'")
        calls = _call_ids(tool_calls, index)
    results = _answered(message, index, raw_role, role)

    thinking_first = has_thinking = False
    content = field(message, "content")
    if content is None:
        if role == "user" or (role == "assistant" and not calls and fmt != "openai"):
            raise MessageFormatError(
                index, "has no 'content'; give a string or a list of content blocks"
            )
    elif isinstance(content, str):
        pass
    elif isinstance(content, Sequence):
        fmt, evidence, thinking_first, has_thinking = _read_blocks(
            content, index, raw_role, fmt, evidence, calls=calls, results=results
        )
    else:
        raise MessageFormatError(
            index,
            f"content is a {type(content).__name__}; give a string or a list of content blocks",
        )

    info = MessageInfo(
        role, fmt, evidence, tuple(calls), tuple(results), thinking_first, has_thinking
    )
    return _link(info, index, previous)


def _raw_role(message: object, index: int) -> object:
    """The role a message gives, checked to be one of Anthropic's or OpenAI's."""
    if (
        type(message) is not dict  # the common case, without the ABC check
        and not isinstance(message, Mapping)
        and not hasattr(message, "role")
    ):
        raise MessageFormatError(
            index,
            f"expected a message dict with 'role' and 'content', got {type(message).__name__}; "
            "pass messages as dicts such as {'role': 'user', 'content': '...'}",
        )
    raw_role = field(message, "role")
    if raw_role is None:
        raise MessageFormatError(index, f"has no 'role'; {_ROLES_HINT}")
    if raw_role == "function":
        raise MessageFormatError(
            index,
            "uses the legacy OpenAI 'function' role; convert it to a 'tool' message with a "
            "'tool_call_id'",
        )
    if raw_role not in _ANTHROPIC_ROLES and raw_role not in _OPENAI_ONLY_ROLES:
        raise MessageFormatError(index, f"has unknown role {raw_role!r}; {_ROLES_HINT}")
    return raw_role


def _call_ids(tool_calls: object, index: int) -> list[str]:
    """The ids of an OpenAI ``tool_calls`` list, in order."""
    if not isinstance(tool_calls, Sequence) or isinstance(tool_calls, str):
        raise MessageFormatError(
            index, "'tool_calls' must be a list of {'id', 'type', 'function'} objects"
        )
    calls: list[str] = []
    for k, call in enumerate(tool_calls):
        call_id = field(call, "id")
        if not isinstance(call_id, str):
            raise MessageFormatError(
                index,
                f"tool_calls[{k}] has no string 'id'; every call needs the id it is answered with",
            )
        calls.append(call_id)
    return calls


def _answered(message: object, index: int, raw_role: object, role: Role) -> list[str]:
    """The call id an OpenAI ``tool`` message answers (none for other roles)."""
    call_id = field(message, "tool_call_id")
    if role == "tool":
        if not isinstance(call_id, str):
            raise MessageFormatError(
                index,
                "is a 'tool' message without a string 'tool_call_id'; add the id of the call "
                "it answers",
            )
        return [call_id]
    if call_id is not None:
        raise MessageFormatError(
            index, f"has 'tool_call_id' but role {raw_role!r}; tool results use role 'tool'"
        )
    return []


def _read_blocks(
    content: Sequence[object],
    index: int,
    raw_role: object,
    fmt: Format | None,
    evidence: str,
    *,
    calls: list[str],
    results: list[str],
) -> tuple[Format | None, str, bool, bool]:
    """Read a list of content blocks: append their call and result ids to ``calls``/``results``.

    ``fmt`` and ``evidence`` are the format known before the blocks and why; returns them as the
    blocks decide them, and whether the content starts with and holds a thinking block.
    """
    thinking_first = has_thinking = False
    for k, block in enumerate(content):
        kind = block.get("type") if type(block) is dict else field(block, "type")  # see `field`
        if not isinstance(kind, str):
            raise MessageFormatError(
                index,
                f"content block {k} has no 'type'; blocks look like "
                "{'type': 'text', 'text': '...'}",
            )
        if kind in _OPENAI_PARTS:
            fmt, evidence = _decide(index, fmt, evidence, "openai", f"it has a {kind!r} part")
        elif kind in _ANTHROPIC_BLOCKS:
            fmt, evidence = _decide(index, fmt, evidence, "anthropic", f"it has a {kind!r} block")
        if kind == "tool_use":
            if raw_role != "assistant":
                raise MessageFormatError(
                    index,
                    f"content block {k} is a tool_use in a {raw_role!r} message; "
                    "tool_use blocks belong in assistant messages",
                )
            call_id = field(block, "id")
            if not isinstance(call_id, str):
                raise MessageFormatError(index, f"tool_use block {k} has no string 'id'")
            calls.append(call_id)
        elif kind == "tool_result":
            if raw_role != "user":
                raise MessageFormatError(
                    index,
                    f"content block {k} is a tool_result in a {raw_role!r} message; "
                    "tool_result blocks belong in user messages",
                )
            call_id = field(block, "tool_use_id")
            if not isinstance(call_id, str):
                raise MessageFormatError(
                    index, f"tool_result block {k} has no string 'tool_use_id'"
                )
            results.append(call_id)
        elif kind in THINKING_BLOCKS:
            has_thinking = True
            thinking_first = thinking_first or k == 0
    return fmt, evidence, thinking_first, has_thinking


_PLAIN_USER = MessageInfo("user", None, "", (), (), thinking_first=False, has_thinking=False)
"""A user message with string content: it fits both formats, makes and answers no calls."""
_PLAIN_ASSISTANT = (
    MessageInfo("assistant", None, "", (), (), thinking_first=False, has_thinking=False),
    MessageInfo(
        "assistant", None, "", (), (), thinking_first=False, has_thinking=False, turn_thinking=True
    ),
)
"""An assistant message with string content, in a turn without and with thinking so far."""
_TOOL_RESULT = MessageInfo(
    "tool", "openai", "it has role 'tool'", (), (), thinking_first=False, has_thinking=False
)
"""An OpenAI tool message with string content (its call id filled in)."""


def _decide(
    index: int, current: Format | None, evidence: str, new: Format, why: str
) -> tuple[Format, str]:
    if current is not None and current != new:
        raise MessageFormatError(
            index,
            f"mixes formats: {evidence} ({FORMAT_NAMES[current]}) and {why} "
            f"({FORMAT_NAMES[new]}); one message must use one format",
        )
    return new, evidence or why


_SMALL_ROUND = 16
"""Up to this many open calls, a result's id is looked up in the tuple itself."""

_round: tuple[tuple[str, ...], frozenset[str]] = ((), frozenset())
"""The open calls of the last large round and their set: its results share the tuple, so a
round of n parallel calls costs O(n) once, not O(n) per result."""


def _call_set(calls: tuple[str, ...]) -> tuple[str, ...] | frozenset[str]:
    """``calls`` for membership tests: a set for a large round, remembered while it lasts."""
    global _round  # noqa: PLW0603 - a one-entry memo (a tuple swap, safe across threads)
    if len(calls) <= _SMALL_ROUND:
        return calls
    last = _round
    if last[0] is calls:
        return last[1]
    found = frozenset(calls)
    _round = (calls, found)
    return found


def _link(info: MessageInfo, index: int, previous: MessageInfo | None) -> MessageInfo:
    """Fill in the fields that depend on the message before, and check result pairing."""
    round_calls: tuple[str, ...] = ()
    if info.is_result:
        open_calls = previous.round_calls if previous is not None else ()
        if not open_calls:
            where = (
                "it is the first message"
                if previous is None
                else (f"message {index - 1} before it made no tool calls")
            )
            raise MessageFormatError(
                index,
                f"is a tool result for call {info.results[0]!r}, but {where}; a tool "
                "result must directly follow the assistant message that made the call",
            )
        calls = _call_set(open_calls)
        for call_id in info.results:
            if call_id not in calls:
                raise MessageFormatError(
                    index,
                    f"answers tool call {call_id!r}, which the assistant message before "
                    f"it did not make (it made {list(open_calls)}); put each result right after "
                    "its call",
                )
        if info.role == "tool":
            round_calls = open_calls  # the next OpenAI tool message may answer the same round
    elif info.role == "assistant":
        round_calls = info.calls
        if info.format == "responses" and previous is not None and previous.role == "assistant":
            round_calls = previous.round_calls + info.calls  # one turn's calls span several items

    if info.is_human or info.role == "system":
        turn_thinking = False
    else:
        turn_thinking = info.has_thinking or (previous is not None and previous.turn_thinking)
    return info._replace(round_calls=round_calls, turn_thinking=turn_thinking)


def is_safe_cut(infos: Sequence[MessageInfo], j: int) -> bool:
    """Whether the verbatim tail may start at message ``j``.

    Unsafe when message ``j`` is a tool result (its call would be folded away), or when ``j``
    continues an assistant turn that showed thinking but does not start with its own thinking block
    (the provider would see a tool turn stripped of its thinking), or when ``j`` is a Responses
    item of a tool round whose first calls come before it.
    """
    info = infos[j]
    if info.is_result:
        return False
    if info.role == "assistant" and len(info.round_calls) > len(info.calls):
        return False  # Responses items: calls of this tool round come before j
    if info.role == "assistant" and j > 0:
        before = infos[j - 1]
        continues_turn = before.role == "assistant" or before.is_result
        if continues_turn and before.turn_thinking and not info.thinking_first:
            return False
    return True


Part: TypeAlias = tuple[Literal["text", "data", "image", "document"], str]
"""A piece of a message for token counting: prose or data text, or a fixed-cost media item."""


def parts(message: object) -> Iterator[Part]:
    """Yield the countable pieces of a message: text, structured data, images and documents."""
    message = responses.as_chat(message)
    content = field(message, "content")
    if isinstance(content, str):
        yield ("text", content)
    elif isinstance(content, Sequence):
        for block in content:
            yield from _block_parts(block)
    for call in field(message, "tool_calls") or ():
        function = field(call, "function")
        yield ("text", str(field(function, "name", "") or ""))
        arguments = field(function, "arguments", "")
        yield ("data", arguments if isinstance(arguments, str) else _dumps(arguments))


def _block_parts(block: object) -> Iterator[Part]:
    kind = field(block, "type")
    if kind == "text":
        yield ("text", str(field(block, "text", "") or ""))
    elif kind == "thinking":
        yield ("text", str(field(block, "thinking", "") or ""))
    elif kind == "redacted_thinking":
        yield ("data", str(field(block, "data", "") or ""))
    elif kind == "tool_use":
        yield ("text", str(field(block, "name", "") or ""))
        yield ("data", _dumps(field(block, "input", {})))
    elif kind == "tool_result":
        inner = field(block, "content", "")
        if isinstance(inner, str):
            yield ("data", inner)
        elif isinstance(inner, Sequence):
            for item in inner:
                yield from _block_parts(item)
    elif kind in ("image", "image_url"):
        yield ("image", "")
    elif kind in ("document", "file"):
        yield ("document", "")
    else:
        yield ("data", _dumps(block))


def to_record(message: object, index: int = 0) -> Any:  # noqa: ANN401 - JSON
    """``message`` as plain JSON data, exactly as the provider SDKs would send it.

    Dicts, lists, strings, numbers, booleans and None are kept as they are (tuples become lists,
    dates and datetimes their ISO text, as the SDKs' encoders write them).
    SDK objects (pydantic models, such as ``response.content`` blocks or an OpenAI
    ``ChatCompletionMessage``) are dumped the way the Anthropic and OpenAI SDKs put them in a
    request body: JSON mode, by alias, only the fields that were set (a field the API sent as
    ``null`` stays, a default nobody set does not), without the fields the SDK never sends
    (``__api_exclude__``). Saving a record and loading it back therefore renders the same request
    bytes as the object did.

    Args:
        message: The message.
        index: Its log index, for the error message.

    Raises:
        MessageFormatError: a value is of a type no SDK sends (it is named, with its path).
    """
    return _record(message, index, "the message")


def _record(value: object, index: int, where: str) -> Any:  # noqa: ANN401 - JSON
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, date):  # datetime too: the SDKs' encoders send isoformat()
        return value.isoformat()
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise MessageFormatError(
                    index,
                    f"{where} has a key {key!r} of type {type(key).__name__}; JSON keys are "
                    "strings: convert it before appending",
                )
            out[key] = _record(item, index, f"{where}[{key!r}]")
        return out
    if isinstance(value, list | tuple):
        return [_record(item, index, f"{where}[{n}]") for n, item in enumerate(value)]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        exclude = getattr(value, "__api_exclude__", None)
        dumped = dump(mode="json", by_alias=True, exclude_unset=True, exclude=exclude)
        return _record(dumped, index, where)
    raise MessageFormatError(
        index,
        f"{where} holds a {type(value).__module__}.{type(value).__qualname__} "
        f"({_short_repr(value)}), which cannot be saved as JSON; append dicts, strings, numbers "
        "and lists, or the provider SDK's own objects (pydantic models)",
    )


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"  # noqa: PLR2004 - a short excerpt


def _dumps(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=_jsonable)
    except (TypeError, ValueError):
        return repr(value)


def _jsonable(value: object) -> object:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    return repr(value)


# -- who wrote a message, and when (read by the extractive summarizer) -----------------------------

SPEAKER_KEY = "name"
"""The key naming a message's speaker: OpenAI Chat Completions' own ``name`` on a message."""
TIME_KEY = "timestamp"
"""The key giving a message's time: an ISO 8601 date or date-time string (Claude Code rows carry
one), or a `datetime.date`. progsum only reads it; strip it before sending to a provider whose API
rejects unknown keys."""


def speaker(message: object) -> str | None:
    """The speaker's name a message carries (``name``), or None."""
    name = field(message, SPEAKER_KEY)
    return " ".join(name.split()) or None if isinstance(name, str) else None


def moment(message: object) -> date | None:
    """The day a message carries (``timestamp``), or None when it has none or it is not a date."""
    value = field(message, TIME_KEY)
    if isinstance(value, date):
        return value.date() if isinstance(value, datetime) else value
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.strip()).date()
    except ValueError:
        return None
