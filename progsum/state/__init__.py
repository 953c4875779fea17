"""The conversation state: the append-only log, the cutoff, the summary and the model view.

`ConversationState` (offered by `progsum`) is the value every stage reads and returns.

Internal: the modules here are private (underscore names) and may change; use
`progsum.ConversationState`.
"""

__all__: list[str] = []
