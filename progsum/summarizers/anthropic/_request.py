"""The request: the keyword arguments of Instructor's ``create``, shaped per model family.

An Anthropic-provider client gets the system prompt as a block (with ``cache_control`` when the
prefix reaches the model's cache minimum, `progsum.summarizers.anthropic._cache`), ``max_tokens``,
and the ``tool_choice`` and ``thinking`` its family allows (`progsum.summarizers._shapes`); any
other provider gets a system message. Every request carries the tag headers
(`progsum.summarizers._tags`) and the user's ``create_kwargs``, which `check_sampling` vets first.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import anthropic
import instructor

from progsum.errors import ConfigError
from progsum.summarizers._shapes import SAMPLING_PARAMETERS, shape_for
from progsum.summarizers._tags import tag_fields
from progsum.summarizers.anthropic._cache import caches
from progsum.summarizers.anthropic._call import Call
from progsum.summarizers.anthropic._clients import provider
from progsum.summarizers.anthropic._usage import Meter
from progsum.summarizers.prompt._tool import CHECKS_KEY

__all__ = ["check_sampling", "create_arguments"]

_PROMPT = "progsum_prompt"
_SYSTEM = "progsum_system"
_SDK_ARGUMENTS = frozenset(inspect.signature(anthropic.resources.Messages.create).parameters)
"""The keyword arguments the installed SDK's ``messages.create`` takes."""


def create_arguments(
    call: Call,
    client: instructor.Instructor | instructor.AsyncInstructor,
    meter: Meter,
    *,
    model: str | None,
    max_tokens: int,
    max_retries: int,
    create_kwargs: Mapping[str, Any],
    tag: str | None,
    user_id: str | None,
) -> dict[str, Any]:
    """Keyword arguments of ``client.create``.

    Instructor renders message text as a Jinja template whenever a validation context is
    given, so conversation text containing ``{{`` or ``{%`` would be evaluated or crash. The
    messages are therefore single placeholders, and the prompts ride in the context: a
    variable's value is inserted as is, never parsed.
    """
    system = call.system
    context = {CHECKS_KEY: call.checks, _PROMPT: call.prompt, _SYSTEM: system}
    kwargs: dict[str, Any] = {
        "response_model": call.response_model,
        "max_retries": max_retries,
        "context": context,
        "hooks": meter.hooks(),
    }
    user = {"role": "user", "content": "{{ " + _PROMPT + " }}"}
    if "TOOLS" in client.mode.name:  # JSON modes answer in text, with no tool to call
        meter.tool = call.tool
    if provider(client) == "anthropic":
        shape = shape_for(model)
        block: dict[str, Any] = {"type": "text", "text": system}
        if caches(call, model):
            block["cache_control"] = {"type": "ephemeral"}
            meter.cached = call.tool
        kwargs["system"] = [block]
        kwargs["messages"] = [user]
        kwargs["max_tokens"] = max_tokens
        if client.mode is instructor.Mode.TOOLS:  # a user's JSON-mode client sends no tool
            kwargs["tool_choice"] = shape.tool_choice_field(call.tool)
        if shape.thinking is not None:
            kwargs["thinking"] = dict(shape.thinking)
    else:
        kwargs["messages"] = [{"role": "system", "content": "{{ " + _SYSTEM + " }}"}, user]
    if model is not None:
        kwargs["model"] = model
    kwargs.update(create_kwargs)
    kwargs.update(
        tag_fields(
            tag,
            user_id,
            task=call.task.method,
            anthropic=provider(client) == "anthropic",
            given=create_kwargs,
        )
    )
    return kwargs


def check_sampling(client: object, model: str | None, create_kwargs: Mapping[str, Any]) -> None:
    """Refuse sampling parameters the model or the installed SDK would refuse.

    ``client`` is the client the summarizer was given (None: an Anthropic client).

    Raises:
        ConfigError: the family refuses them (HTTP 400), or the SDK has no such argument.
    """
    if provider(client) != "anthropic":
        return
    extra = create_kwargs.get("extra_body")
    extra_keys = set(extra) if isinstance(extra, Mapping) else set()
    given = [k for k in SAMPLING_PARAMETERS if k in create_kwargs or k in extra_keys]
    shape = shape_for(model)
    if given and not shape.sampling:
        names = ", ".join(given)
        raise ConfigError(
            f"create_kwargs sets {names}, which {shape.family} refuses with HTTP 400; drop "
            f"{names} (steer it with output_config={{'effort': 'low'}} instead), or pin a "
            "model that accepts them"
        )
    config = create_kwargs.get("output_config")
    effort = config.get("effort") if isinstance(config, Mapping) else None
    disabled = shape.thinking is not None and shape.thinking.get("type") == "disabled"
    if disabled and "thinking" not in create_kwargs and effort in ("xhigh", "max"):
        raise ConfigError(
            f"output_config effort={effort!r}: progsum turns thinking off on {shape.family} "
            "(so the update tool can be forced), which the API refuses above effort 'high'; "
            "use effort 'low', 'medium' or 'high'"
        )
    missing = [k for k in given if k in create_kwargs and k not in _SDK_ARGUMENTS]
    if missing:
        example = {k: create_kwargs[k] for k in missing}
        raise ConfigError(
            f"create_kwargs sets {', '.join(missing)}, which anthropic "
            f"{anthropic.__version__}'s messages.create() does not take; pass it in the "
            f"request body instead: create_kwargs={{'extra_body': {example!r}}}"
        )
