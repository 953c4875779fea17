"""progsum as a LangChain v1 agent middleware: ``middleware=[ProgsumMiddleware(compactor)]``.

The graph's ``messages`` stay the full log (LangGraph's checkpointer keeps every message, as
progsum's log does); the middleware compacts what each model call is sent, never the stored
history. Per model call it:

1. reads progsum's snapshot from the graph state (key ``progsum``: summary, cutoff, events; no
   messages), or its in-process copy of the same conversation, and appends only the messages
   added since (O(new messages); after a restart, the first call rebuilds once from the
   checkpoint);
2. runs `Compactor.maybe_compact`;
3. sends the kept first task message and the verbatim tail (the graph's own message objects; old
   tool output cleared by the cheap reduction shows as a placeholder, and each recall block opens
   the message it answers, in copies), with the summary header as a text block after the agent's
   own system prompt: between compactions each request is the previous one plus new messages;
   on a model that binds thinking to its prefix, the thinking blocks a compaction invalidated
   are left out (``thinking=``; docs/integrations.md);
4. returns the model's reply with a ``Command`` that stores the new snapshot in the graph state
   when a compaction happened, so the checkpointer persists it.

``compact_conversation`` and ``recall`` (`progsum.tools._conversation`) are registered as
agent tools. With an archive (``Compactor(archive=...)``), folded messages are filed under the
graph's ``thread_id`` (progsum's own key when called outside a graph run).

LangChain messages are read as OpenAI Chat Completions messages (one per LangChain message, so
tool calls pair with their ``ToolMessage``s by position). Reasoning blocks are not tracked by the
cut: with extended thinking on an older model, keep at least one whole tool turn
(``keep=("messages", n)`` large enough).
"""

from progsum.integrations._langchain import (
    STATE_KEY,
    ProgsumMiddleware,
    ProgsumState,
    author_of,
    to_openai,
)

__all__ = ["STATE_KEY", "ProgsumMiddleware", "ProgsumState", "author_of", "to_openai"]
