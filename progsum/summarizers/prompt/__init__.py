"""What a model summarizer asks and how its answer is checked: prompts and the response models.

Pure (pydantic and Jinja, no provider SDK), so any model summarizer can reuse it.

**Summarizing a segment.** The response model is derived from the schema: one list of new item
texts per list field, retirements with reasons, and an optional new objective. Its validator, given
the request's `Checks` through the validation context (``{CHECKS_KEY: checks(request)}``), rejects

* a retired id that is not an item of the prior summary,
* a binding item (a decision or constraint) retired without a reason,
* a new item (or objective) carrying an exact value (`progsum.judge._values.exact_values`) found
  verbatim neither in the segment's full text nor in the prior summary,

so that Instructor re-asks the model with the error.

**Consolidating a summary that outgrew its budget.** `consolidation_model` has one list per
non-binding list field (condensed replacements) and retirements, and no objective. Given
`ConsolidationChecks` (``{CHECKS_KEY: consolidation_checks(request)}``), it rejects

* a retired id that is not an item of the summary, a binding item, a retirement without a reason,
  or the same id retired twice,
* an added item carrying an exact value the summary does not hold,
* an added item in a field none of whose items it retires, and additions no shorter than what
  they retire,
* a retired (or keyed-superseded) item whose exact values would then appear in no added or
  remaining item.

Its modules: `update` (the update tool), `consolidation` (the consolidation tool), `tool` (what
the two share) and `text` (the prompts).

Internal: the modules here are private (underscore names) and may change;
`progsum.testing.summarizer_prompt` shows what a model is sent.
"""

__all__: list[str] = []
