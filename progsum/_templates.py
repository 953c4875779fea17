"""The one Jinja environment: every template progsum renders (``prompts/``, schema headers)."""

from __future__ import annotations

import functools

from jinja2 import FileSystemLoader, StrictUndefined, Template, TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment

from progsum._resources import data_dir
from progsum.errors import ConfigError

__all__ = ["compile_template", "environment"]


@functools.cache
def environment() -> SandboxedEnvironment:
    """The one Jinja environment: strict undefined, no autoescape, sandboxed, loads ``prompts/``.

    The shipped templates do not change while a process runs: a loaded template is used again
    without asking the file system (``auto_reload=False``; a recall block is rendered each turn).
    """
    return SandboxedEnvironment(
        loader=FileSystemLoader(data_dir("prompts")),
        auto_reload=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


@functools.cache
def compile_template(source: str) -> Template:
    """A schema's own header template, compiled once in the one environment.

    Raises:
        ConfigError: the source is not valid Jinja.
    """
    try:
        return environment().from_string(source)
    except TemplateSyntaxError as exc:
        raise ConfigError(
            f"the schema's header template does not compile: {exc.message} (line {exc.lineno}); "
            "fix the Jinja syntax"
        ) from exc
