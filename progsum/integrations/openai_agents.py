"""progsum as an OpenAI Agents SDK session: ``Runner.run(agent, text, session=ProgsumSession())``.

A `ProgsumSession` wraps any Agents SDK ``Session`` (``SQLiteSession``, SQLAlchemy, Redis, ...),
which keeps every item the runner adds: the log, never rewritten. What ``get_items`` hands the
runner is progsum's view of it (`progsum.messages._responses.render_responses`): the summary header
as a developer message, the first task message and the verbatim tail, with function calls, their
outputs and reasoning items (ids and ``encrypted_content`` intact) kept together. The agent's own
``instructions`` are sent by the SDK before all of it, unchanged.

The runner reads the session once per run, so progsum compacts there, in ``get_items``: what it
returns is what the model is sent for the whole run. ``add_items`` only records. The run's own
items reach the model as the runner has them; with ``RunConfig(call_model_input_filter=
session.input_filter)`` each model call's input is rendered by progsum too, so the run's question
gets its recall block. Every block stays with its item in every later request until the next
fold, saved in progsum's state (requests only grow between compactions). Reasoning items are
always sent as they were stored (OpenAI, "Keep the prefix unchanged": the API drops those a
prefix change invalidated; docs/integrations.md).

The session takes the runner's context (the SDK passes ``wrapper=`` to a session whose four
methods accept it), whose ``usage.request_usage_entries`` holds each model response's reported
usage; each new report anchors progsum's token count after the response's own items, before the
tool outputs that follow them, as it measured the context the model was sent plus its reply.

``session.tools`` is the ``recall`` tool when the compactor has an archive: give it to the agent
(``Agent(tools=[..., *session.tools])``) and the model can read folded messages back.

progsum's own state (summary, cutoff, events, recalls; no items) is saved after each compaction
and each recall in a second session of the same backend (``state_session``;
`ProgsumSession.sqlite` sets both up in one SQLite file), one item replaced each time, so a new
process resumes the summary instead of summarizing again, and quotes what the last one quoted.
Appending is O(new items); the first ``get_items`` of a process reads the stored items once.
"""

from progsum.integrations._openai_agents import STATE_ITEM, USAGE_ITEM, ProgsumSession, anchored

__all__ = ["STATE_ITEM", "USAGE_ITEM", "ProgsumSession", "anchored"]
