"""A summarizer that asks a model, through Instructor: Claude by default, any Instructor client.

One call per compaction: a static, cached system prompt (``prompts/summarize.system.j2``), a user
prompt with the prior summary, the must-keep candidates and the delimited segment
(``prompts/summarize.user.j2``, `progsum.messages._transcript`), and a tool whose input is the
update. Instructor validates the tool input and re-asks the model with the error, up to
``max_retries`` times, when

* a retired id is not an item of the prior summary,
* a binding item (a decision or constraint) is retired without a reason, or
* a new item (or objective) carries an exact value (`progsum.judge._values.exact_values`) found
  verbatim neither in the segment's full text nor in the prior summary.

When the summary outgrows its header budget, `AnthropicSummarizer.consolidate` makes one call of
the same shape (``prompts/consolidate.system.j2``, cached, and ``prompts/consolidate.user.j2``)
whose tool retires near-duplicate and verbose items of non-binding fields and adds shorter
replacements; the checks of `progsum.summarizers.prompt._consolidation.consolidation_model` are
re-asked the
same way.

The request is shaped per model family (`progsum.summarizers._shapes`): the update tool is forced
only where the family allows it with thinking off; elsewhere ``tool_choice`` is ``auto`` and a
reply without the tool call is re-asked. The static prefix (tool and system prompt) carries
``cache_control`` only when it reaches the model's documented cache minimum; each event records
the cache counters, and says once when a cache asked for is never read. A segment whose prompt
would pass the model's long-prompt price threshold is summarized in chunks
(`progsum.summarizers._chunking`).

Failures are translated in one place (`progsum.summarizers.anthropic._errors.translate`): rate
limits, overloads, server errors, timeouts, connection failures, other HTTP errors and malformed
response bodies raise `progsum.errors.ProviderError`; output still invalid after every re-ask (or
cut off at ``max_tokens``) raises `progsum.errors.SummaryValidationError`.

The package is the only place in progsum that imports ``instructor`` or ``anthropic`` (ruff
TID251). Its modules: `summarizer` (`AnthropicSummarizer`: the calls, sync and async),
`clients` (the clients it accepts), `call` (what one call asks), `request` (the keyword arguments
of ``create``, per model family), `sizes` and `cache` (prefix size, chunking, the prompt cache),
`usage` (metering), `errors` (the translation) and `logs` (Instructor's loggers).

Internal: the modules here are private (underscore names) and may change; use
`progsum.summarizers.AnthropicSummarizer`.
"""

__all__: list[str] = []
