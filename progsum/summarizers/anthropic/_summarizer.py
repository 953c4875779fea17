"""`AnthropicSummarizer`: one model call per compaction (or per chunk), sync and async.

The summarizer holds the configuration and the clients; a call is built by
`progsum.summarizers.anthropic._call`, its keyword arguments by
`progsum.summarizers.anthropic._request`, and its failure translated by
`progsum.summarizers.anthropic._errors`. Each call is metered, put on a span and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeAlias

import anthropic
import instructor
from instructor.core import InstructorError

from progsum._observe import SUMMARIZERS_LOGGER, ModelCall, model_span
from progsum.errors import ConfigError, ProgsumError
from progsum.messages._formats import field as read
from progsum.summarizers._chunking import advance, combine, sub_request
from progsum.summarizers._steps import Asks, arun, run
from progsum.summarizers._tags import DEFAULT_TAG, check_tag, check_user_id
from progsum.summarizers.anthropic._cache import CacheNotes
from progsum.summarizers.anthropic._call import (
    Call,
    Task,
    condensable,
    consolidation_call,
    summary_call,
)
from progsum.summarizers.anthropic._clients import Client, provider, provider_name, wrap
from progsum.summarizers.anthropic._errors import credentials, translate
from progsum.summarizers.anthropic._logs import quiet_instructor
from progsum.summarizers.anthropic._request import check_sampling, create_arguments
from progsum.summarizers.anthropic._sizes import chunks
from progsum.summarizers.anthropic._usage import Meter
from progsum.summarizers.prompt._update import to_update
from progsum.summary._request import ConsolidationRequest, SummaryRequest
from progsum.summary._update import SummarizerUsage, SummaryUpdate

__all__ = [
    "DEFAULT_CLIP_CHARS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "AnthropicSummarizer",
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

Answer: TypeAlias = tuple[object, SummarizerUsage]
"""What one call gives: the validated tool input and the call's metered usage."""
Ask: TypeAlias = Callable[[Call], Answer] | Callable[[Call], Awaitable[Answer]]
"""How a body's call is made: `AnthropicSummarizer._ask`, or `_aask` to be awaited."""


class AnthropicSummarizer:
    """Summarizes a segment with a model through Instructor (Claude Haiku by default).

    It also consolidates a summary that outgrew its header budget (`consolidate`, the optional
    `progsum.summary._request.Consolidator` protocol), with the same client, model and limits.

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
            (`progsum.summarizers._tags`).
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
        self._sync, self._async = wrap(client)
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
        check_sampling(client, self.model, self.create_kwargs)
        self._cache = CacheNotes()
        quiet_instructor()

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
        return run(self._summarizing(request, self._ask))

    async def asummarize(self, request: SummaryRequest[Any]) -> SummaryUpdate:
        """Async `summarize`: awaits an async client; a sync client runs in a worker thread.

        Raises:
            ConfigError: no credentials exist.
            ProviderError: see `summarize`.
            SummaryValidationError: see `summarize`.
        """
        if self._async is None and self._given is not None:
            return await asyncio.to_thread(self.summarize, request)
        return await arun(self._summarizing(request, self._aask))

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
        return run(self._consolidating(request, self._ask))

    async def aconsolidate(self, request: ConsolidationRequest[Any]) -> SummaryUpdate:
        """Async `consolidate`: awaits an async client; a sync client runs in a worker thread.

        Raises:
            ConfigError: no credentials exist.
            ProviderError: see `summarize`.
            SummaryValidationError: see `consolidate`.
        """
        if self._async is None and self._given is not None:
            return await asyncio.to_thread(self.consolidate, request)
        return await arun(self._consolidating(request, self._aask))

    # -- what a method asks, written once for both drivers ---------------------------------------

    def _summarizing(self, request: SummaryRequest[Any], ask: Ask) -> Asks[SummaryUpdate]:
        """`summarize`'s body: the segment in one call, or chunk by chunk, the prior advanced."""
        call = summary_call(request, clip_chars=self.clip_chars)
        bounds = chunks(request, call, self.model)
        if len(bounds) == 1:
            parsed, usage = yield functools.partial(ask, call)
            return to_update(parsed, request.spec, usage)
        prior, usages = request.prior, list[SummarizerUsage | None]()
        for chunk in bounds:
            part = sub_request(request, chunk, prior)
            parsed, usage = yield functools.partial(
                ask, summary_call(part, clip_chars=self.clip_chars)
            )
            update = to_update(parsed, part.spec, usage)
            prior, usages = advance(prior, update, chunk), [*usages, update.usage]
        return combine(request.prior, prior, usages, bounds)

    def _consolidating(self, request: ConsolidationRequest[Any], ask: Ask) -> Asks[SummaryUpdate]:
        """`consolidate`'s body: no call for a summary without non-binding items."""
        if not condensable(request):
            return SummaryUpdate()
        parsed, usage = yield functools.partial(ask, consolidation_call(request))
        return to_update(parsed, request.spec, usage)

    # -- calls -----------------------------------------------------------------------------------

    def _ask(self, call: Call) -> tuple[object, SummarizerUsage]:
        """The validated tool input of one call (re-asks included) and its metered usage."""
        client = self._sync_client(call.task.method)
        with self._calling(call, client) as (kwargs, done):
            return done(client.create(**kwargs))

    async def _aask(self, call: Call) -> tuple[object, SummarizerUsage]:
        """Async `_ask`."""
        client = self._async_client()
        with self._calling(call, client) as (kwargs, done):
            return done(await client.create(**kwargs))

    @contextlib.contextmanager
    def _calling(
        self, call: Call, client: instructor.Instructor | instructor.AsyncInstructor
    ) -> Iterator[tuple[dict[str, Any], Callable[[object], tuple[object, SummarizerUsage]]]]:
        """One metered call on its span: the ``create`` arguments, and what gives its answer.

        The block makes the call and passes the parsed tool input to the second item, which
        returns it with the call's usage; a provider or validation failure in the block is
        raised as the progsum error (`_failed`).
        """
        meter = Meter()
        kwargs = self._create_kwargs(call, client, meter)
        with model_span(provider(client), self.model, max_tokens=self.max_tokens) as span:
            try:
                yield kwargs, lambda parsed: (parsed, self._done(meter, span))
            except (InstructorError, anthropic.AnthropicError) as exc:
                raise self._failed(exc, meter, call.task, span) from exc

    def _done(self, meter: Meter, span: ModelCall) -> SummarizerUsage:
        """The call's usage, put on its span and logged at DEBUG."""
        usage = self._cache.noted(meter, self.model)
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

    def _failed(self, exc: Exception, meter: Meter, task: Task, span: ModelCall) -> ProgsumError:
        """The progsum error for ``exc``, noted on the span and logged at WARNING."""
        error = translate(
            exc,
            meter,
            task,
            who=f"{provider_name(self._given)} ({self.model or 'the client model'})",
            max_tokens=self.max_tokens,
            max_retries=self.max_retries,
        )
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
            with self._lock, credentials():
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
            with self._lock, credentials():
                if self._async is None:
                    self._async = instructor.from_anthropic(anthropic.AsyncAnthropic())
        return self._async

    # -- the request -----------------------------------------------------------------------------

    def _create_kwargs(
        self, call: Call, client: instructor.Instructor | instructor.AsyncInstructor, meter: Meter
    ) -> dict[str, Any]:
        """Keyword arguments of ``client.create`` for ``call``, with this summarizer's settings."""
        return create_arguments(
            call,
            client,
            meter,
            model=self.model,
            max_tokens=self.max_tokens,
            max_retries=self.max_retries,
            create_kwargs=self.create_kwargs,
            tag=self.tag,
            user_id=self.user_id,
        )


def _require_int(name: str, value: object, *, minimum: int, example: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(
            f"{name}={value!r} must be an integer of at least {minimum}; use e.g. {name}={example}"
        )
