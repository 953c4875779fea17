"""Drop-in adapters for agent frameworks, one module per framework, each behind an extra.

=====================================  ================================  =========================
module                                 what it gives                     install
=====================================  ================================  =========================
`progsum.integrations.langchain`       ``ProgsumMiddleware`` for         ``progsum[langchain]``
                                       ``create_agent`` (LangGraph)
`progsum.integrations.pydantic_ai`     ``ProgsumCapability`` for         ``progsum[pydantic-ai]``
                                       ``Agent(capabilities=[...])``
`progsum.integrations.openai_agents`   ``ProgsumSession``, an Agents     ``progsum[openai-agents]``
                                       SDK ``Session``
`progsum.integrations.claude_code`     a ``PreCompact``/``SessionStart`` (none)
                                       hook command
=====================================  ================================  =========================

Importing an adapter without its framework raises `ImportError` naming the extra to install.
progsum itself never imports this package. The package offers nothing itself: import the
adapter's module.
"""

__all__: list[str] = []
