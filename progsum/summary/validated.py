"""A pydantic model whose validation errors are progsum's `ConfigError`, naming field and value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ValidationError

from progsum.errors import ConfigError, invalid_fields

__all__ = ["Validated"]


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
