"""Message formats: Anthropic, OpenAI Chat Completions and Responses, read into one shape.

Validation, author classes, delimited transcripts for the summarizer (docs/messages.md).

Internal: the modules here are private (underscore names) and may change; pass messages to
`progsum.ConversationState`.
"""

__all__: list[str] = []
