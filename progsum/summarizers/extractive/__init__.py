"""The extractive summarizer: a complete summary update from the segment's own sentences, no model.

`ExtractiveSummarizer` is the offline default (no API key) and the last resort of a fallback chain.
It writes no new content: every item it proposes is a whole sentence of the segment
(`progsum.judge._segment.sentences`: code blocks, markup tags, logs, stack traces and fragments are
never sentences), so exact values survive by construction. In an agent's conversation a fact is
the speaker's whole sentence, one per item, with the speaker in front: ``Assistant: The nightly
export writes about 12,000 rows to /data/out.csv.``, its values in their sentence. In a chat
between people (`progsum.judge._seam.conversation`) facts are written as terse, self-contained
notes (`progsum.judge._notes`): ``Caroline (8 May 2023): went to LGBTQ support group``, the
speaker's ``name`` (else User/Assistant) and the message's day (``timestamp``) in front, a
leading "I" resolved into them, and fillers, hedges, articles and end marks left out
(`progsum.judge._notes.terse`: words are only removed, never changed, so every value stays
token-exact); the notes of one speaker and day in one update share one item and one label,
``Speaker 1: has jeep; works in marketing`` (at most `notes.GROUP_CHARS` characters each).
Binding items, questions and keyed fields keep the wording verbatim. It is deterministic: the same
request always gives an equal update.

How a sentence is sorted (only ``user`` and ``assistant`` prose is read; tool data and thinking
are not): the judge (`progsum.judge._seam`, docs/judge.md) labels every sentence in its context,
and the label decides the field, in this order, among the fields the schema has:

1. **question**: kept only if *unanswered*: no later message of the other speaker says more
   than chatter in the segment. The user's unanswered questions are kept whatever the share.
2. **constraint**: a user sentence the extractive pass marked as a rule
   (``request.extraction``), or one the judge labels ``rule``.
3. **decision**: a sentence labelled ``decision`` or ``revision``.
4. **rejected**: a decision or fact naming a ruled-out option (the lexicon's ``kinds.rejected``).
5. **open thread**: a ``todo`` of the user's (work asked for), kept whatever the share until it is
   done or dropped; the assistant's own intention ("Let me check …") is narration and no item,
   its question to the user an open question.
6. **fact**: a ``fact`` or ``preference``.
7. **answer**: the first sentence of a reply to the other speaker's question, when it fits none
   of the above and is an item at all, is a fact joined to its question, both verbatim.

A sentence with no content word (3+ letters, not on the stop-list) is skipped, and so is one
labelled ``remark``, ``chatter`` or ``machine``, unless the user's rule was marked in it.

A fact is then sorted further when the schema declares a field for it (``extract = [...]``,
`progsum.summary._schema.EXTRACTORS`): **dates** (a date or a dated event: birthday, appointment),
**people** (my sister, our neighbour, ...), **preferences** (a sentence labelled
``preference``), **profile** (the user's own first-person statement), else **facts**; an answer
joined to its question is **answers**. A kind with no field of its own goes to the facts field.

Which field gets which kind, for any schema: a field that declares the kind (``extract``) takes it
first; for the rest, constraints go to `progsum.contract._guards.constraint_field`
(``constraints``, else a binding field named like rules, policies or requirements), the same
field the engine's prohibition guard writes to. Every other field is matched on its name and label,
then on its description: ``reject``/``ruled out`` takes rejected; ``question``, ``thread``,
``open``, ``todo``, ``pending``, ``unresolved`` take questions; ``decision``, ``choice`` take
decisions; ``fact``, ``finding``, ``result``, ``known``, ``observation`` take facts and answers.
Each kind goes to the first field (in declaration order) that takes it; a field no rule matches
gets nothing.

Deduplication: a sentence equal (after `progsum.summary._merge.normalise`) to a live item of the
prior summary or to one chosen earlier in this update is skipped, and so is a restatement of an
item of the same field (all its content words and exact values already in that item). Across
fields such a sentence may say something new: a decision taken among options that were listed as
facts.

Salience, not first-come: candidates are ranked by `progsum.judge._salience.salience` (exact values,
named entities, the speaker's own statements, answers, novelty against the prior summary, less for
hedges), the shorter first among equals. ``max_per_field`` (default None) may cap the count per
field; without it the most salient items of non-binding fields fill
``max_share`` of the segment's prose characters together (a note is charged its body; binding
items are never dropped for length), so a compaction frees tokens: by default 35% in an agent's
conversation and 60% in a chat, where the notes are the point and consolidation chooses among
them. Items are listed in log order.
When the header outgrows its budget, the engine's consolidation retires what adds least per
character first, one note of a joined note at a time (the rest of it lives on under a new id;
`progsum.contract._consolidation.least_telling`, `progsum.contract._consolidation.retire_parts`),
never a note that is the last carrier of a value the user stated.

Retirement follows the rule for questions: a prior item of the questions field that is a verbatim
question (ends with ``?`` and comes from one message before the segment) is retired as answered
when the segment holds prose of both speakers, since the other speaker has then replied after it.
That is what becomes of the question that ended the previous segment once its reply is folded.
Nothing else is retired: whether a sentence resolves a written item cannot be told by rule.
The objective is left alone (the engine keeps the first task message verbatim), and ``usage`` is
None, since no model is called.

The modules follow these steps: `routing` (which field takes which kind), `kinds`
(the judge's label as a kind), `candidates` (the segment's sentences that fit a field, weighed),
`selection` (dedupe and bound), `notes` (notes of one speaker and day joined), `retirement`
(answered questions) and `summarizer` (`ExtractiveSummarizer`, which runs them).

Internal: the modules here are private (underscore names) and may change; use
`progsum.summarizers.ExtractiveSummarizer`.
"""

__all__: list[str] = []
