"""A summarizer that asks a model, through Instructor: Claude by default, any Instructor client.

The only module of progsum that imports ``instructor`` or ``anthropic`` (ruff TID251). One call per
compaction: a static, cached system prompt (``prompts/summarize.system.j2``), a user prompt with the
prior summary, the must-keep candidates and the delimited segment (``prompts/summarize.user.j2``,
`progsum.messages.transcript`), and a tool whose input is the update. Instructor validates the tool input and
re-asks the model with the error, up to ``max_retries`` times, when

* a retired id is not an item of the prior summary,
* a binding item (a decision or constraint) is retired without a reason, or
* a new item (or objective) carries an exact value (`progsum.judge.values.exact_values`) found verbatim
  neither in the segment's full text nor in the prior summary.

When the summary outgrows its header budget, `AnthropicSummarizer.consolidate` makes one call of
the same shape (``prompts/consolidate.system.j2``, cached, and ``prompts/consolidate.user.j2``)
whose tool retires near-duplicate and verbose items of non-binding fields and adds shorter
replacements; the checks of `progsum.summarizers.prompt.consolidation_model` are re-asked the
same way.

The request is shaped per model family (`progsum.summarizers.shapes`): the update tool is forced
only where the family allows it with thinking off; elsewhere ``tool_choice`` is ``auto`` and a
reply without the tool call is re-asked. The static prefix (tool and system prompt) carries
``cache_control`` only when it reaches the model's documented cache minimum; each event records
the cache counters, and says once when a cache asked for is never read. A segment whose prompt
would pass the model's long-prompt price threshold is summarized in chunks (`progsum.summarizers.chunking`).

Failures are translated in one place (`_translate`): rate limits, overloads, server errors,
timeouts, connection failures, other HTTP errors and malformed response bodies raise
`progsum.errors.ProviderError`; output still invalid after every re-ask (or cut off at
``max_tokens``) raises `progsum.errors.SummaryValidationError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

# The one module allowed to import the provider SDKs (DESIGN.md "Layers"): pyproject.toml exempts
# it from the TID251 ban that keeps every other module free of them.
import anthropic
import instructor
from instructor.core import (
    Hooks,
    IncompleteOutputException,
    InstructorError,
    InstructorRetryException,
    ResponseParsingError,
)
from instructor.core import ValidationError as InstructorValidationError
from instructor.v2.providers.anthropic.schema import generate_anthropic_schema
from pydantic import (
    BaseModel,
    ValidationError,
)

from progsum.errors import (
    ConfigError,
    ProgsumError,
    ProviderError,
    SummarizerError,
    SummaryValidationError,
)
from progsum.messages.formats import field as read
from progsum.observe import SUMMARIZERS_LOGGER, ModelCall, model_span
from progsum.policy.tokens import HeuristicCounter
from progsum.policy.windows import find_profile
from progsum.summarizers.chunking import advance, chunk_bounds, combine, sub_request
from progsum.summarizers.prompt import (
    CHECKS_KEY,
    checks,
    consolidation_checks,
    consolidation_model,
    consolidation_system_prompt,
    consolidation_user_prompt,
    response_model,
    system_prompt,
    to_update,
    user_prompt,
)
from progsum.summarizers.shapes import SAMPLING_PARAMETERS, shape_for
from progsum.summarizers.tags import DEFAULT_TAG, check_tag, check_user_id, tag_fields
from progsum.summary.request import ConsolidationRequest, SummaryRequest
from progsum.summary.schema import BaseSummary
from progsum.summary.update import SummarizerUsage, SummaryUpdate

__all__ = [
    "DEFAULT_CLIP_CHARS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "AnthropicSummarizer",
    "Client",
]

DEFAULT_MODEL = "claude-haiku-5-5"
"""The summary model for Anthropic clients: the current small Claude (released 2026-10-07), with
a 1M window, a 512-token cache minimum that progsum's cached prefix passes, and list prices of
$0.10/$0.50 per million tokens for prompts up to 100,000 tokens."""
DEFAULT_MAX_TOKENS = 8_192
"""Output limit of one call; an update cut off at it raises SummaryValidationError."""
DEFAULT_MAX_RETRIES = 2
"""Re-asks after invalid output (so up to three calls per compaction)."""
DEFAULT_CLIP_CHARS = 2_000
"""Tool inputs and results longer than this are shown as head + tail around a clip marker."""

_LONG_PROMPT_MARGIN = 0.9
"""Chunks aim at 90% of a long-prompt threshold: the token estimate is a heuristic."""
_PROMPT = "progsum_prompt"
_SYSTEM = "progsum_system"
_MAX_ERROR_CHARS = 800
_INVALID_OUTPUT = (ValidationError, ResponseParsingError, InstructorValidationError)
"""Causes that mean the model's output (not the provider) was at fault."""
_SDK_ARGUMENTS = frozenset(inspect.signature(anthropic.resources.Messages.create).parameters)
"""The keyword arguments the installed SDK's ``messages.create`` takes."""
_TIMEOUTS = frozenset({"APITimeoutError", "TimeoutException", "ReadTimeout", "TimeoutError"})
_CONNECTION = frozenset({"APIConnectionError", "ConnectError", "ConnectionError"})


@dataclass(frozen=True, slots=True)
class _Task:
    """What a call asks for, in the words its error messages use."""

    method: str
    """The public method: "summarize"."""
    answer: str
    """What the model returns: "summary update"."""
    nothing: str
    """What a failure left undone: "nothing was summarized"."""
    smaller: str
    """How to need fewer output tokens, after "raise max_tokens": " or fold smaller segments"."""


_SUMMARIZE = _Task(
    "summarize", "summary update", "nothing was summarized", " or fold smaller segments"
)
_CONSOLIDATE = _Task("consolidate", "consolidation", "nothing was consolidated", "")


@dataclass(frozen=True, slots=True)
class _Call:
    """One model call: the tool's input model, the two prompts and the validator's checks."""

    task: _Task
    response_model: type[BaseModel]
    system: str
    prompt: str
    checks: object

    @property
    def tool(self) -> str:
        """The name of the tool whose input is the answer."""
        return self.response_model.__name__


# -- metering ------------------------------------------------------------------------------------


@dataclass
class _Meter:
    """Meters every API response of one summary call (the first attempt and each re-ask).

    Usage is read inside Instructor's ``completion:response`` hook, because Instructor later
    overwrites each response's ``usage`` with the running total of the call.
    """

    usages: list[SummarizerUsage] = field(default_factory=list)
    cached: str | None = None
    """The tool whose request asked for a prompt cache (``cache_control`` on the system block)."""
    last: object = None
    """The last response received (None before any): kept to tell a malformed body."""
    started: float = field(default_factory=time.perf_counter)

    def hooks(self) -> Hooks:
        """Per-call Instructor hooks that meter each response."""
        hooks = Hooks()
        hooks.on("completion:response", self.record)
        return hooks

    def record(self, response: object) -> None:
        """Note one response and its own usage."""
        self.usages.append(_usage_of(read(response, "usage")))
        self.last = response

    def usage(self) -> SummarizerUsage:
        """Tokens summed over every response, wall-clock latency, number of calls."""
        total = SummarizerUsage(latency_s=time.perf_counter() - self.started, calls=0)
        for usage in self.usages:
            total += usage
        return total


def _usage_of(usage: object) -> SummarizerUsage:
    """Anthropic usage as is; OpenAI usage mapped to Anthropic's meaning (cache reads apart)."""
    if read(usage, "prompt_tokens") is not None:
        cached = _int(read(read(usage, "prompt_tokens_details"), "cached_tokens"))
        return SummarizerUsage(
            input_tokens=_int(read(usage, "prompt_tokens")) - cached,
            output_tokens=_int(read(usage, "completion_tokens")),
            cache_read_input_tokens=cached,
        )
    return SummarizerUsage(
        input_tokens=_int(read(usage, "input_tokens")),
        output_tokens=_int(read(usage, "output_tokens")),
        cache_creation_input_tokens=_int(read(usage, "cache_creation_input_tokens")),
        cache_read_input_tokens=_int(read(usage, "cache_read_input_tokens")),
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -- the summarizer ------------------------------------------------------------------------------

AnthropicClient = anthropic.Anthropic | anthropic.AnthropicBedrock | anthropic.AnthropicVertex
"""Sync Anthropic SDK clients, wrapped with ``instructor.from_anthropic``."""
AsyncAnthropicClient = (
    anthropic.AsyncAnthropic | anthropic.AsyncAnthropicBedrock | anthropic.AsyncAnthropicVertex
)
"""Async Anthropic SDK clients, wrapped with ``instructor.from_anthropic``."""
Client = AnthropicClient | AsyncAnthropicClient | instructor.Instructor | instructor.AsyncInstructor
"""Every client `AnthropicSummarizer` accepts."""


class AnthropicSummarizer:
    """Summarizes a segment with a model through Instructor (Claude Haiku by default).

    It also consolidates a summary that outgrew its header budget (`consolidate`, the optional
    `progsum.summary.request.Consolidator` protocol), with the same client, model and limits.

    Example:
        ``Compactor(policy=Policy(model="claude-sonnet-5-5"), summarizer=AnthropicSummarizer())``
        reads ``ANTHROPIC_API_KEY`` (through the SDK) on the first compaction and summarizes
        with `DEFAULT_MODEL`; ``AnthropicSummarizer(model="claude-sonnet-5-5")`` pins another.

    Args:
        client: ``anthropic.Anthropic`` or ``AsyncAnthropic`` (Bedrock and Vertex variants too),
            or any Instructor client, e.g. ``instructor.from_provider("openai/gpt-5-mini")``.
            None: an Anthropic client built from the environment on first use, sync for
            `summarize` and async for `asummarize`.
        model: The model; None means `DEFAULT_MODEL` for Anthropic clients, and the client's own
            model for an Instructor client (give one when it was built without a model).
        max_tokens: Output limit per call (sent to Anthropic-provider clients; other providers
            take their limit from ``create_kwargs``, e.g. ``{"max_completion_tokens": 4096}``).
        max_retries: Re-asks after invalid output; ``0`` accepts only a first valid answer.
        clip_chars: Longest tool input or result shown whole in the prompt; None never clips.
        create_kwargs: Extra keyword arguments for every create call (e.g. ``temperature``
            where the model accepts it, or ``output_config={"effort": "low"}``).
        tag: Sent as the ``X-Progsum-Tag`` header (with ``X-Progsum-Task``) on every request,
            so gateways and logs can tell summarization traffic apart; None sends no header
            (`progsum.summarizers.tags`).
        user_id: An opaque id (uuid or hash, at most 512 characters) sent as Anthropic's
            ``metadata.user_id``; None (the default) sends no metadata.

    Raises:
        ConfigError: a limit is not a positive integer, the client is of an unknown kind, or
            ``create_kwargs`` sets a sampling parameter the model refuses.
    """

    def __init__(
        self,
        client: Client | None = None,
        *,
        model: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        clip_chars: int | None = DEFAULT_CLIP_CHARS,
        create_kwargs: Mapping[str, Any] | None = None,
        tag: str | None = DEFAULT_TAG,
        user_id: str | None = None,
    ) -> None:
        _require_int("max_tokens", max_tokens, minimum=1, example=DEFAULT_MAX_TOKENS)
        _require_int("max_retries", max_retries, minimum=0, example=DEFAULT_MAX_RETRIES)
        if clip_chars is not None:
            _require_int("clip_chars", clip_chars, minimum=0, example=DEFAULT_CLIP_CHARS)
        self._sync, self._async = _wrap(client)
        self._given = client
        self._lock = threading.Lock()
        sdk_client = not isinstance(client, instructor.Instructor)
        self.model: str | None = model or (DEFAULT_MODEL if sdk_client else None)
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.clip_chars = clip_chars
        self.create_kwargs: Mapping[str, Any] = dict(create_kwargs or {})
        self.tag = check_tag(tag)
        self.user_id = check_user_id(user_id)
        if self.user_id is not None and "metadata" in self.create_kwargs:
            raise ConfigError(
                "user_id and create_kwargs['metadata'] both set the request metadata; pass one"
            )
        self._check_sampling()
        self._cache_lock = threading.Lock()
        self._cache_reads: set[str] = set()
        self._cache_writes: dict[str, int] = {}
        self._cache_noted = False
        _quiet_instructor()

    def __repr__(self) -> str:
        return f"AnthropicSummarizer(model={self.model!r}, max_retries={self.max_retries})"

    def summarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Ask the model for the update of ``request.segment`` (needs a sync client).

        Raises:
            ConfigError: the summarizer was given an async client, or no credentials exist.
            ProviderError: the provider failed (rate limit, overload, 5xx, timeout, connection,
                other HTTP error, malformed response body).
            SummaryValidationError: the model's update was still invalid after every re-ask.
        """
        call = self._summary_call(request)
        bounds = self._chunks(request, call)
        if len(bounds) == 1:
            parsed, usage = self._ask(call)
            return to_update(parsed, request.spec, usage)
        prior, usages = request.prior, list[SummarizerUsage | None]()
        for chunk in bounds:
            part = sub_request(request, chunk, prior)
            parsed, usage = self._ask(self._summary_call(part))
            update = to_update(parsed, part.spec, usage)
            prior, usages = advance(prior, update, chunk), [*usages, update.usage]
        return combine(request.prior, prior, usages, bounds)

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Async `summarize`: awaits an async client; a sync client runs in a worker thread.

        Raises:
            ConfigError: no credentials exist.
            ProviderError: see `summarize`.
            SummaryValidationError: see `summarize`.
        """
        if self._async is None and self._given is not None:
            return await asyncio.to_thread(self.summarize, request)
        call = self._summary_call(request)
        bounds = self._chunks(request, call)
        if len(bounds) == 1:
            parsed, usage = await self._aask(call)
            return to_update(parsed, request.spec, usage)
        prior, usages = request.prior, list[SummarizerUsage | None]()
        for chunk in bounds:
            part = sub_request(request, chunk, prior)
            parsed, usage = await self._aask(self._summary_call(part))
            update = to_update(parsed, part.spec, usage)
            prior, usages = advance(prior, update, chunk), [*usages, update.usage]
        return combine(request.prior, prior, usages, bounds)

    def consolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
        """Ask the model to condense a summary that outgrew its budget (needs a sync client).

        The update retires near-duplicate and verbose items of non-binding fields, each with a
        reason, and adds shorter items in the same fields that keep every exact value of what
        they replace; it never changes the objective. A summary without non-binding items gives
        an empty update without a call.

        Raises:
            ConfigError: the summarizer was given an async client, or no credentials exist.
            ProviderError: the provider failed (see `summarize`).
            SummaryValidationError: the model's consolidation was still invalid after every
                re-ask.
        """
        if not _condensable(request):
            return SummaryUpdate()
        parsed, usage = self._ask(self._consolidation_call(request))
        return to_update(parsed, request.spec, usage)

    async def aconsolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
        """Async `consolidate`: awaits an async client; a sync client runs in a worker thread.

        Raises:
            ConfigError: no credentials exist.
            ProviderError: see `summarize`.
            SummaryValidationError: see `consolidate`.
        """
        if self._async is None and self._given is not None:
            return await asyncio.to_thread(self.consolidate, request)
        if not _condensable(request):
            return SummaryUpdate()
        parsed, usage = await self._aask(self._consolidation_call(request))
        return to_update(parsed, request.spec, usage)

    # -- calls -----------------------------------------------------------------------------------

    def _summary_call(self, request: SummaryRequest[Any]) -> _Call:
        return _Call(
            task=_SUMMARIZE,
            response_model=response_model(cast("type[BaseSummary]", request.schema)),
            system=system_prompt(),
            prompt=user_prompt(request, clip_chars=self.clip_chars),
            checks=checks(request),
        )

    def _consolidation_call(self, request: ConsolidationRequest[Any]) -> _Call:
        return _Call(
            task=_CONSOLIDATE,
            response_model=consolidation_model(cast("type[BaseSummary]", request.schema)),
            system=consolidation_system_prompt(),
            prompt=consolidation_user_prompt(request),
            checks=consolidation_checks(request),
        )

    def _ask(self, call: _Call) -> tuple[object, SummarizerUsage]:
        """The validated tool input of one call (re-asks included) and its metered usage."""
        client = self._sync_client(call.task.method)
        meter = _Meter()
        kwargs = self._create_kwargs(call, client, meter)
        with model_span(_provider(client), self.model, max_tokens=self.max_tokens) as span:
            try:
                parsed = client.create(**kwargs)
            except (InstructorError, anthropic.AnthropicError) as exc:
                raise self._failed(exc, meter, call.task, span) from exc
            return parsed, self._done(meter, span)

    async def _aask(self, call: _Call) -> tuple[object, SummarizerUsage]:
        """Async `_ask`."""
        client = self._async_client()
        meter = _Meter()
        kwargs = self._create_kwargs(call, client, meter)
        with model_span(_provider(client), self.model, max_tokens=self.max_tokens) as span:
            try:
                parsed = await client.create(**kwargs)
            except (InstructorError, anthropic.AnthropicError) as exc:
                raise self._failed(exc, meter, call.task, span) from exc
            return parsed, self._done(meter, span)

    def _done(self, meter: _Meter, span: ModelCall) -> SummarizerUsage:
        """The call's usage, put on its span and logged at DEBUG."""
        usage = self._noted(meter)
        last = meter.last
        span.done(
            usage,
            response_model=read(last, "model"),
            response_id=read(last, "id"),
            finish_reason=read(last, "stop_reason"),
        )
        SUMMARIZERS_LOGGER.debug(
            "%s: %d request(s), %d input + %d cache-write + %d cache-read, %d output tokens, %.2fs",
            self,
            len(meter.usages),
            usage.input_tokens,
            usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens,
            usage.output_tokens,
            usage.latency_s,
        )
        return usage

    def _failed(self, exc: Exception, meter: _Meter, task: _Task, span: ModelCall) -> ProgsumError:
        """The progsum error for ``exc``, noted on the span and logged at WARNING."""
        error = self._translate(exc, meter, task)
        span.failed(error)
        SUMMARIZERS_LOGGER.warning("%s %s failed: %s", self, task.method, error)
        return error

    # -- clients ---------------------------------------------------------------------------------

    def _sync_client(self, method: str) -> instructor.Instructor:
        if self._sync is None:
            if self._given is not None:
                raise ConfigError(
                    f"AnthropicSummarizer was given an async client ({type(self._given).__name__})"
                    f" but {method}() is sync; pass anthropic.Anthropic() (or a sync Instructor "
                    f"client), or call await summarizer.a{method}() / compactor.amaybe_compact()"
                )
            with self._lock, _credentials():
                if self._sync is None:
                    self._sync = instructor.from_anthropic(anthropic.Anthropic())
        return self._sync

    def _async_client(self) -> instructor.AsyncInstructor:
        if self._async is None:
            if self._given is not None:
                raise ConfigError(
                    f"AnthropicSummarizer was given a sync client ({type(self._given).__name__}) "
                    "but asummarize() is async; pass anthropic.AsyncAnthropic() (or an async "
                    "Instructor client), or call summarizer.summarize() / compactor.maybe_compact()"
                )
            with self._lock, _credentials():
                if self._async is None:
                    self._async = instructor.from_anthropic(anthropic.AsyncAnthropic())
        return self._async

    # -- the request -----------------------------------------------------------------------------

    def _create_kwargs(
        self, call: _Call, client: instructor.Instructor | instructor.AsyncInstructor, meter: _Meter
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
            "max_retries": self.max_retries,
            "context": context,
            "hooks": meter.hooks(),
        }
        user = {"role": "user", "content": "{{ " + _PROMPT + " }}"}
        if _provider(client) == "anthropic":
            shape = shape_for(self.model)
            block: dict[str, Any] = {"type": "text", "text": system}
            if self._caches(call):
                block["cache_control"] = {"type": "ephemeral"}
                meter.cached = call.tool
            kwargs["system"] = [block]
            kwargs["messages"] = [user]
            kwargs["max_tokens"] = self.max_tokens
            if client.mode is instructor.Mode.TOOLS:  # a user's JSON-mode client sends no tool
                kwargs["tool_choice"] = shape.tool_choice_field(call.tool)
            if shape.thinking is not None:
                kwargs["thinking"] = dict(shape.thinking)
        else:
            kwargs["messages"] = [{"role": "system", "content": "{{ " + _SYSTEM + " }}"}, user]
        if self.model is not None:
            kwargs["model"] = self.model
        kwargs.update(self.create_kwargs)
        kwargs.update(
            tag_fields(
                self.tag,
                self.user_id,
                task=call.task.method,
                anthropic=_provider(client) == "anthropic",
                given=self.create_kwargs,
            )
        )
        return kwargs

    # -- sizes and caching -----------------------------------------------------------------------

    def _counter(self) -> HeuristicCounter:
        return HeuristicCounter.for_model(self.model)

    def _prefix_tokens(self, call: _Call) -> int:
        """Estimated tokens of the static prefix: the tool definition and the system prompt."""
        counter = self._counter()
        return counter.count_text(_tool_json(call.response_model)) + counter.count_text(call.system)

    def _caches(self, call: _Call) -> bool:
        """Whether to mark the prefix for caching: unless it is below the model's minimum."""
        found = find_profile(self.model) if self.model else None
        minimum = found.cache_minimum if found is not None else None
        return minimum is None or self._prefix_tokens(call) >= minimum

    def _chunks(self, request: SummaryRequest[Any], call: _Call) -> list[tuple[int, int]]:
        """Log ranges summarized one call each: the whole segment, or chunks under the threshold.

        Chunks only when the segment's prompt would pass the model's long-prompt price threshold
        (`progsum.policy.windows.ModelProfile.long_prompt`).
        """
        segment = request.segment
        whole = [(segment.start, segment.end)]
        found = find_profile(self.model) if self.model else None
        if found is None or found.long_prompt is None or len(segment) < 2:  # noqa: PLR2004 - a pair
            return whole
        counter = self._counter()
        prefix = self._prefix_tokens(call)
        total = prefix + counter.count_text(call.prompt)
        limit = int(found.long_prompt * _LONG_PROMPT_MARGIN)
        if total <= limit:
            return whole
        costs = [counter.count_message(message) for message in segment.messages]
        overhead = total - sum(costs)  # prefix, instructions, prior summary, framing
        return chunk_bounds(segment, costs, max(1, limit - overhead))

    def _noted(self, meter: _Meter) -> SummarizerUsage:
        """The call's usage, with the one note that a cache asked for is not being read.

        Each prefix (the summary and the consolidation tool) is followed apart: a note when its
        first call neither wrote nor read the cache (below the model's minimum), or when it was
        written again instead of read. Said once per summarizer.
        """
        usage = meter.usage()
        key = meter.cached
        if key is None:
            return usage
        with self._cache_lock:
            if self._cache_noted:
                return usage
            if usage.cache_read_input_tokens:
                self._cache_reads.add(key)
                return usage
            writes = self._cache_writes.get(key, 0)
            self._cache_writes[key] = writes + 1
            note = ""
            if key in self._cache_reads:
                return usage
            if not usage.cache_creation_input_tokens:
                note = (
                    f"{self.model} neither wrote nor read the prompt cache although the request "
                    "asked for it (cache_control on the system prompt): the prefix is below the "
                    "model's cache minimum, so each call pays full input price"
                )
            elif writes:
                note = (
                    f"{self.model} wrote the prompt cache again instead of reading it: the "
                    "cached prefix changes between calls, or calls are more than the cache "
                    "lifetime (5 minutes) apart"
                )
            if not note:
                return usage
            self._cache_noted = True
        return usage.model_copy(update={"cache_note": note})

    def _check_sampling(self) -> None:
        """Refuse sampling parameters the model or the installed SDK would refuse.

        Raises:
            ConfigError: the family refuses them (HTTP 400), or the SDK has no such argument.
        """
        if _provider(self._given) != "anthropic":
            return
        extra = self.create_kwargs.get("extra_body")
        extra_keys = set(extra) if isinstance(extra, Mapping) else set()
        given = [k for k in SAMPLING_PARAMETERS if k in self.create_kwargs or k in extra_keys]
        shape = shape_for(self.model)
        if given and not shape.sampling:
            names = ", ".join(given)
            raise ConfigError(
                f"create_kwargs sets {names}, which {shape.family} refuses with HTTP 400; drop "
                f"{names} (steer it with output_config={{'effort': 'low'}} instead), or pin a "
                "model that accepts them"
            )
        config = self.create_kwargs.get("output_config")
        effort = config.get("effort") if isinstance(config, Mapping) else None
        disabled = shape.thinking is not None and shape.thinking.get("type") == "disabled"
        if disabled and "thinking" not in self.create_kwargs and effort in ("xhigh", "max"):
            raise ConfigError(
                f"output_config effort={effort!r}: progsum turns thinking off on {shape.family} "
                "(so the update tool can be forced), which the API refuses above effort 'high'; "
                "use effort 'low', 'medium' or 'high'"
            )
        missing = [k for k in given if k in self.create_kwargs and k not in _SDK_ARGUMENTS]
        if missing:
            example = {k: self.create_kwargs[k] for k in missing}
            raise ConfigError(
                f"create_kwargs sets {', '.join(missing)}, which anthropic "
                f"{anthropic.__version__}'s messages.create() does not take; pass it in the "
                f"request body instead: create_kwargs={{'extra_body': {example!r}}}"
            )

    # -- errors ----------------------------------------------------------------------------------

    def _translate(self, exc: Exception, meter: _Meter, task: _Task) -> ProgsumError:
        """The one place where provider and Instructor failures become progsum errors."""
        who = f"{_provider_name(self._given)} ({self.model or 'the client model'})"
        if isinstance(exc, IncompleteOutputException):
            return SummaryValidationError(
                f"{who} stopped at max_tokens={self.max_tokens} before finishing the "
                f"{task.answer}; raise max_tokens (e.g. to {self.max_tokens * 2}){task.smaller}"
            )
        cause = exc.__cause__ if isinstance(exc, InstructorRetryException) else exc
        cause = cause if isinstance(cause, BaseException) else exc
        if isinstance(cause, anthropic.CredentialsError):
            return _no_credentials(cause)
        malformed = _malformed(cause, meter)
        if malformed:
            return ProviderError(
                f"{who} returned a response body that is not an API message ({malformed}); "
                f"{task.nothing}. This is a provider or proxy fault: try again later, and check "
                "the client's base_url and any proxy in between"
            )
        status = getattr(cause, "status_code", None)
        if isinstance(status, int):
            return ProviderError(_status_message(who, status, cause, task), status=status)
        names = {cls.__name__ for cls in type(cause).__mro__}
        if names & _TIMEOUTS:
            return ProviderError(
                f"{who} timed out; {task.nothing}. Try again later, or give the client a longer "
                "timeout (anthropic.Anthropic(timeout=...))"
            )
        if names & _CONNECTION:
            return ProviderError(
                f"{who} could not be reached ({cause}); {task.nothing}. Check the network and "
                "the client's base_url, then try again"
            )
        if isinstance(cause, _INVALID_OUTPUT):
            attempts = getattr(exc, "n_attempts", self.max_retries + 1)
            return SummaryValidationError(
                f"{who} returned an invalid {task.answer} {attempts} time(s) "
                f"(max_retries={self.max_retries}); last error: {_short(cause)}. The summary was "
                "not changed: raise max_retries, use a stronger model, or wrap the summarizer in "
                "a fallback"
            )
        return SummarizerError(
            f"{who} failed: {type(cause).__name__}: {_short(cause)}; check the client's "
            "configuration (credentials such as ANTHROPIC_API_KEY, model name)"
        )


@contextlib.contextmanager
def _credentials() -> Iterator[None]:
    """Turn the SDK's failure to find credentials while building a client into a ConfigError."""
    try:
        yield
    except anthropic.CredentialsError as exc:
        raise _no_credentials(exc) from exc


def _no_credentials(exc: BaseException) -> ConfigError:
    return ConfigError(
        f"no Anthropic credentials were found ({_short(exc)}); set ANTHROPIC_API_KEY, or pass "
        "AnthropicSummarizer(client=anthropic.Anthropic(api_key=...))"
    )


def _status_message(who: str, status: int, cause: BaseException, task: _Task) -> str:
    detail = _api_message(cause)
    if status == 429:  # noqa: PLR2004 - HTTP status
        response = getattr(cause, "response", None)
        after = read(getattr(response, "headers", None), "retry-after")
        wait = f" (retry-after: {after}s)" if after else ""
        return (
            f"{who} is rate-limited: HTTP 429{wait}: {detail}; {task.nothing}. Try again later, "
            "compact less often, or raise the account's rate limit"
        )
    if status == 529:  # noqa: PLR2004 - HTTP status
        return (
            f"{who} is overloaded: HTTP 529: {detail}; {task.nothing}. Try again later or use a "
            "fallback summarizer"
        )
    if status >= 500:  # noqa: PLR2004 - HTTP status
        return (
            f"{who} had a server error: HTTP {status}: {detail}; {task.nothing}. Try again "
            "later or use a fallback summarizer"
        )
    return (
        f"{who} refused the request: HTTP {status}: {detail}; retrying will not help. Check the "
        "API key, the model name and max_tokens"
    )


def _api_message(cause: BaseException) -> str:
    body = getattr(cause, "body", None)
    error = read(body, "error") if isinstance(body, Mapping) else None
    message = read(error, "message") if isinstance(error, Mapping) else None
    return str(message) if message else _short(cause)


def _malformed(cause: BaseException, meter: _Meter) -> str:
    """Why the provider's response was not an API message, or "" when it was."""
    if isinstance(cause, json.JSONDecodeError):
        return f"invalid JSON: {cause.msg} at character {cause.pos}"
    if not meter.usages:
        return ""
    last = meter.last
    if last is None or isinstance(last, str | bytes):
        return f"a {type(last).__name__} instead of a message: {str(last)[:80]!r}"
    if isinstance(last, anthropic.types.Message) and not isinstance(last.content, list):
        return "a JSON object without 'content'"
    return ""


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


# -- helpers -------------------------------------------------------------------------------------


def _condensable(request: ConsolidationRequest[Any]) -> bool:
    """Whether ``request``'s summary has an item of a non-binding field to consolidate."""
    summary = request.summary
    return any(getattr(summary, f.name) for f in request.spec.lists if not f.binding)


def _wrap(
    client: Client | None,
) -> tuple[instructor.Instructor | None, instructor.AsyncInstructor | None]:
    """Sync and async Instructor clients for ``client`` (only the matching one is set)."""
    if client is None:
        return None, None
    if isinstance(client, instructor.AsyncInstructor):
        return None, client
    if isinstance(client, instructor.Instructor):
        return client, None
    if isinstance(client, AsyncAnthropicClient):
        return None, instructor.from_anthropic(client)
    if isinstance(client, AnthropicClient):
        return instructor.from_anthropic(client), None
    raise ConfigError(
        f"client={type(client).__name__} is neither an Anthropic nor an Instructor client; pass "
        "anthropic.Anthropic(), anthropic.AsyncAnthropic(), an Instructor client such as "
        "instructor.from_provider('openai/gpt-5-mini'), or None to use ANTHROPIC_API_KEY"
    )


def _provider(client: object) -> str:
    """The Instructor provider of ``client`` (``anthropic`` for Anthropic SDK clients)."""
    if isinstance(client, instructor.Instructor):
        return str(getattr(client.provider, "value", client.provider))
    return "anthropic"


def _provider_name(client: object) -> str:
    provider = _provider(client)
    return "Anthropic" if provider == "anthropic" else provider


def _require_int(name: str, value: object, *, minimum: int, example: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(
            f"{name}={value!r} must be an integer of at least {minimum}; use e.g. {name}={example}"
        )


@functools.cache
def _tool_json(response_model: type[BaseModel]) -> str:
    """The tool definition Instructor sends for ``response_model``, as JSON text."""
    return json.dumps(generate_anthropic_schema(response_model), ensure_ascii=False)


class _AtMostWarning(logging.Filter):
    """Lowers Instructor's ERROR records to WARNING: progsum raises (or falls back) on them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


@functools.cache
def _quiet_instructor() -> None:
    """Keep Instructor's loggers at most at WARNING and off stderr unless logging is configured.

    Instructor logs each failed attempt at ERROR, with the rejected output, although progsum
    translates the failure into its own error or a fallback. A logger a user set a level on
    (``logging.getLogger("instructor").setLevel(logging.DEBUG)``) is left alone; a NullHandler
    keeps Python's last-resort handler from printing records nobody configured logging for.
    """
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] == "instructor"]
    root = logging.getLogger("instructor")
    if root.level != logging.NOTSET:
        return
    root.addHandler(logging.NullHandler())
    for name in {"instructor", *names}:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.addFilter(_AtMostWarning())
