"""progsum as a pydantic-ai 2.x capability: ``Agent(model, capabilities=[ProgsumCapability(c)])``.

pydantic-ai runs `prepare_model_request` before each attempt at a model request, once the serving
model is known; changes to the request context shape that request only, while the run's message
history (``RunContext.messages``) stays as it was. So progsum compacts the *request*, not the
stored history, as pydantic-ai's capability guide asks of compaction:

* the messages sent are the kept first request (the agent's system prompt parts and the task)
  and the verbatim tail, pydantic-ai's own message objects (cleared tool output, and each recall
  block as a prompt part of its own, in copies): between compactions each request is the
  previous one plus new messages; on a model that binds thinking to its prefix, the Anthropic
  thinking a compaction invalidated is left out (``thinking=``; docs/integrations.md);
* the summary header is appended as an instruction part after the agent's own instructions, so
  the static prefix (tools, instructions) keeps its cache;
* after a compaction or a recall, progsum's state (summary, cutoff, events, recalls; no
  messages) is written into the ``metadata`` of the request being sent, which pydantic-ai never
  sends to a model and stores with the history (``result.all_messages()``,
  ``ModelMessagesTypeAdapter``, a conversation store); a later run given that history resumes
  from the newest such snapshot;
* once a run has succeeded, every older snapshot is removed from its history, so the history
  holds one: the current state. A run that fails removes nothing, so the history it was given
  still resumes. The messages keep their identity, and those a conversation store already holds
  are left as they are (it keeps each message as it was saved, one snapshot per compaction).

With an archive (``Compactor(archive=...)``), folded messages are filed under pydantic-ai's
``conversation_id`` and the agent gets a ``recall`` tool that reads them back.

Each pydantic-ai message is read as one Anthropic-shaped message (a request as a user turn with
its tool returns as ``tool_result`` blocks, a response as an assistant turn with ``thinking``,
``text`` and ``tool_use`` blocks), so progsum's cuts keep tool calls with their returns and
thinking with its tool turn. Appending is O(new messages) per request.
"""

from progsum.integrations._pydantic_ai import (
    METADATA_KEY,
    ProgsumCapability,
    keep_newest_snapshot,
    restore,
    to_anthropic,
)

__all__ = ["METADATA_KEY", "ProgsumCapability", "keep_newest_snapshot", "restore", "to_anthropic"]
