"""Provider-fidelity guarantees over every transcript of the shared data.

Byte stability after a reload, cache breakpoints, and chunks under Claude Haiku 5.5's long-prompt
price threshold.

Usage: ``python bench/provider_fidelity.py DATA_DIR`` (the folder described in its README.md).

For each conversation (read in place with `progsum.replay.importers.read_conversations`):

1. the state is saved (``to_json``) and loaded, and the Anthropic or OpenAI request it renders is
   compared byte for byte with the one before saving;
2. ``render_anthropic(..., cache=True)`` is checked to send at most 4 breakpoints and to leave the
   log's bytes unchanged;
3. the whole conversation (either format) is folded as one segment by ``AnthropicSummarizer`` on
   ``claude-haiku-5-5`` over a fake transport that answers with an empty update, and every
   request it sends is measured (characters / 2.7, for the newer tokenizer's ~30% more
   tokens): none may pass the 100,000-token threshold. A chunked fold is also priced beside the
   same fold as one request (on ``claude-haiku-5``, which never chunks), input tokens only.

It prints the counts per corpus; any violation is listed and makes the exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import anthropic  # noqa: TID251 - the real SDK client over a fake transport, as the tests do
import httpx2

from progsum import ConversationState, render_anthropic, render_openai
from progsum.errors import ProgsumError
from progsum.messages.formats import to_record
from progsum.policy.windows import find_profile
from progsum.render.breakpoints import MAX_BREAKPOINTS, count
from progsum.replay.importers import read_conversations
from progsum.summarizers.anthropic.summarizer import AnthropicSummarizer
from progsum.testing import summary_request

sys.path.insert(0, str(Path(__file__).resolve().parent))
from transcripts import corpus_files

THRESHOLD = 100_000
CHARS_PER_TOKEN = 2.7
"""~3.5 characters per token of English, divided by the newer tokenizer's 1.3."""
HAIKU = find_profile("claude-haiku-5-5")


def rendered(state: ConversationState[Any], *, cache: bool = False) -> str:
    """The request fields progsum renders for ``state``, as JSON text."""
    if state.format == "openai":
        return json.dumps(to_record(render_openai(state)))
    system, messages = render_anthropic(state, system="You are an agent.", cache=cache)
    return json.dumps([to_record(system), to_record(messages)])


class EmptyUpdates:
    """A Messages API transport answering every request with an empty update; keeps sizes."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Record the request's estimated tokens and answer with an empty tool call."""
        body = json.loads(request.content)
        self.sizes.append(int(len(request.content.decode()) / CHARS_PER_TOKEN))
        tool = body["tools"][0]["name"]
        return httpx2.Response(
            200,
            json={
                "id": "msg",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "tool_use", "id": "t", "name": tool, "input": {}}],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )


def fold_sizes(messages: list[Any], model: str | None = None) -> list[int]:
    """Estimated tokens of each request that folds ``messages`` as one segment on ``model``."""
    fake = EmptyUpdates()
    http = httpx2.Client(transport=httpx2.MockTransport(fake))
    client = anthropic.Anthropic(api_key="k", max_retries=0, http_client=http)
    AnthropicSummarizer(client, model=model, max_retries=0).summarize(summary_request(messages))
    return fake.sizes


def input_dollars(sizes: list[int]) -> float:
    """Haiku 5.5 list price of the prompts ``sizes``, each in its price band."""
    if HAIKU is None or HAIKU.price is None or HAIKU.long_price is None:
        raise SystemExit("progsum's model table lost Claude Haiku 5.5's prices")
    short, long = HAIKU.price.input, HAIKU.long_price.input
    return sum(size * (long if size > THRESHOLD else short) for size in sizes) / 1e6


def main() -> int:
    """Run the checks over every corpus in the data folder; print one line per corpus."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    args = parser.parse_args()
    problems: list[str] = []
    for corpus, files in corpus_files(args.data):
        conversations = stable = chunked = requests = over = 0
        largest = 0
        chunked_cost = whole_cost = 0.0
        whole_sizes: list[int] = []
        for path in files:
            for conversation in read_conversations(path):
                try:
                    state = ConversationState(conversation.messages)
                except ProgsumError:
                    continue
                conversations += 1
                before = rendered(state)
                again = ConversationState.from_json(state.to_json())
                if rendered(again) == before:
                    stable += 1
                else:
                    problems.append(f"{conversation.name}: request bytes changed after a reload")
                log = state.to_json()
                cached = json.loads(rendered(state, cache=True))
                if state.format != "openai" and count(cached) > MAX_BREAKPOINTS:
                    problems.append(f"{conversation.name}: more than 4 breakpoints")
                if state.to_json() != log:
                    problems.append(f"{conversation.name}: cache=True changed the log")
                if len(conversation.messages) < 2:  # noqa: PLR2004 - nothing to fold
                    continue
                sizes = fold_sizes(list(conversation.messages))
                requests += len(sizes)
                if len(sizes) > 1:
                    chunked += 1
                    # the same fold in one request: what it would cost without chunks
                    whole = fold_sizes(list(conversation.messages), model="claude-haiku-5")
                    whole_sizes += whole
                    chunked_cost += input_dollars(sizes)
                    whole_cost += input_dollars(whole)
                largest = max(largest, *sizes)
                over += sum(size > THRESHOLD for size in sizes)
        print(
            f"{corpus}: {conversations} conversations, {stable} byte-stable after a reload; "
            f"Haiku 5.5 folds: {requests} requests, {chunked} conversations chunked, largest "
            f"request ~{largest:,} tokens, {over} over {THRESHOLD:,}"
        )
        if chunked:
            print(
                f"  chunked folds' input at list price: ${chunked_cost:.4f} in chunks vs "
                f"${whole_cost:.4f} as one request of ~{max(whole_sizes):,} tokens "
                f"({whole_cost / chunked_cost:.2f}x)"
            )
        if over:
            problems.append(f"{corpus}: {over} request(s) over the threshold")
    for problem in problems:
        print(f"PROBLEM {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
