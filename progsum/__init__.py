"""progsum: schema-driven progressive summarization for long-running LLM agents.

Call `Compactor.maybe_compact` (or `maybe_compact`) once per turn: it does nothing until the
context crosses the policy's trigger, then folds the older middle of the conversation into a typed
`Summary` and keeps the first task message and a verbatim tail. `render_anthropic` and
`render_openai` turn the state into provider input with the summary as a binding system header.
"""

from progsum._version import __version__ as __version__
from progsum.engine._compactor import Compactor, amaybe_compact, maybe_compact
from progsum.errors import ConfigError, MessageFormatError, ProgsumError, SummarizerError
from progsum.policy._policy import Policy
from progsum.render._requests import render_anthropic, render_openai
from progsum.state._conversation import ConversationState
from progsum.summary._files import load_schema, schemas
from progsum.summary._request import Summarizer, SummaryRequest
from progsum.summary._schema import BaseSummary, Items, Summary, summary_field
from progsum.summary._update import SummaryUpdate

__all__ = [
    "BaseSummary",
    "Compactor",
    "ConfigError",
    "ConversationState",
    "Items",
    "MessageFormatError",
    "Policy",
    "ProgsumError",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "SummaryRequest",
    "SummaryUpdate",
    "amaybe_compact",
    "load_schema",
    "maybe_compact",
    "render_anthropic",
    "render_openai",
    "schemas",
    "summary_field",
]
