"""The model view: a conversation state as provider input, with the summary as its header."""

from progsum.render.requests import render_anthropic, render_openai
from progsum.render.responses import render_responses

__all__ = ["render_anthropic", "render_openai", "render_responses"]
