"""A pydantic model whose validation errors are progsum's `ConfigError`, naming field and value."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ValidationError

from progsum.errors import ConfigError

__all__ = ["Validated", "invalid_fields"]

_SHOWN_PROBLEMS = 2
"""Problems of an invalid value named one by one; the rest are counted."""
_MAX_VALUE_CHARS = 40
"""The longest bad value quoted."""


class Validated(BaseModel):
    """A model that a user builds by hand (a summary, an update): mistakes read as one sentence.

    Subclasses set `shape_hint`, the shape the fields take, said after what was wrong.
    """

    shape_hint: ClassVar[str] = ""

    if not TYPE_CHECKING:  # type checkers keep pydantic's typed signature

        def __init__(self, /, **data: Any) -> None:  # noqa: ANN401 - pydantic's own signature
            """Validate; a mistake is a `ConfigError` naming the field and the value.

            Raises:
                ConfigError: a field holds a value of the wrong shape.
            """
            try:
                super().__init__(**data)
            except ValidationError as exc:
                problems = invalid_fields(exc.errors())
                raise ConfigError(
                    f"{type(self).__name__} is invalid: {problems}; {self.shape_hint}"
                ) from exc


def invalid_fields(entries: Iterable[Mapping[str, object]]) -> str:
    """Validation errors in plain words: ``where: what, got value``; the first two, then a count.

    ``entries`` are pydantic's (``ValidationError.errors()``). A validator's own message (a
    ``value_error``) lists its problems one per line, each maybe followed by ``; `` and an
    instruction for whoever must fix it (a model being re-asked): only the problem is kept.
    """
    found = [problem for entry in entries for problem in _problems(entry)]
    shown = "; ".join(found[:_SHOWN_PROBLEMS])
    if len(found) > _SHOWN_PROBLEMS:
        shown += f"; and {len(found) - _SHOWN_PROBLEMS} more"
    return shown


def _problems(entry: Mapping[str, object]) -> list[str]:
    loc = entry.get("loc")
    where = ".".join(str(part) for part in loc) if isinstance(loc, tuple) else ""
    message = str(entry.get("msg", "")).removeprefix("Value error, ")
    if entry.get("type") == "value_error":
        lines = [line.removeprefix("- ") for line in message.splitlines()]
        picked = [line.split("; ", 1)[0] for line in lines if not line.endswith(":")]
        return [f"{where}: {line}" if where else line for line in picked or lines]
    said = message[:1].lower() + message[1:]
    got = f", got {_brief(entry.get('input'))}" if "input" in entry else ""
    return [f"{where}: {said}{got}" if where else f"{said}{got}"]


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"
