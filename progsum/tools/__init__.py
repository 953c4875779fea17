"""What an agent and its harness call on a live conversation.

The recall and compact tools, and the retry when a provider says the prompt is too long.
"""

from progsum.tools._conversation import COMPACT_TOOL, RECALL_TOOL, ConversationTools
from progsum.tools._overflow import aretry_on_overflow, retry_on_overflow

__all__ = [
    "COMPACT_TOOL",
    "RECALL_TOOL",
    "ConversationTools",
    "aretry_on_overflow",
    "retry_on_overflow",
]
