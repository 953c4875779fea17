"""The model view: a conversation state as provider input, with the summary as its header."""

from progsum.render._requests import render_anthropic, render_openai
from progsum.render._responses import render_responses
from progsum.render._view import DROP_BLOCK_BETA, Thinking, drop_block_thinking

__all__ = [
    "DROP_BLOCK_BETA",
    "Thinking",
    "drop_block_thinking",
    "render_anthropic",
    "render_openai",
    "render_responses",
]
