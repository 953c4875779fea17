"""The contract every summary update is held to: provenance, evidence, exact values, budgets.

The engine runs it after each summarizer call, whatever the summarizer (docs/contract.md).

Internal: the modules here are private (underscore names) and may change; nothing here is called
directly.
"""

__all__: list[str] = []
