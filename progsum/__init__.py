"""progsum: schema-driven progressive summarization for long-running LLM agents.

Call `Compactor.maybe_compact` (or `maybe_compact`) once per turn: it does nothing until the
context crosses the policy's trigger, then folds the older middle of the conversation into a typed
`Summary` and keeps the first task message and a verbatim tail. `render_anthropic` and
`render_openai` turn the state into provider input with the summary as a binding system header.
"""

from progsum.engine import Compactor, amaybe_compact, maybe_compact
from progsum.errors import ConfigError, MessageFormatError, ProgsumError, SummarizerError
from progsum.policy import Policy
from progsum.render import render_anthropic, render_openai
from progsum.schema import BaseSummary, Items, Summary, summary_field
from progsum.schema_files import load_schema, schemas
from progsum.state import ConversationState
from progsum.summarizer import Summarizer, SummaryRequest
from progsum.update import SummaryUpdate

__version__ = "0.1.0"

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
