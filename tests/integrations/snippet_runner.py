"""Run one documentation snippet as a user's fresh interpreter would, offline.

    python snippet_runner.py CONFIG.json code FILE LABEL   # exec FILE's text as LABEL's __main__
    python snippet_runner.py CONFIG.json -m MODULE [ARG...]  # what `python -m MODULE ARG...` does

Used by tests/integrations/test_snippets.py. Before the snippet runs, three things are set up from
CONFIG (JSON):

* ``allowed``: the distributions the snippet's install line brings in. A module that only other
  installed distributions provide (by their RECORD files) cannot be imported: it raises
  `ModuleNotFoundError`, as when it is not installed, so a snippet needing a package its extra
  lacks fails here as it would after that ``pip install``, in a venv that has every extra.
* ``log``: every HTTP request is appended to this JSON-lines file, with the status it was given.
* The providers are faked at the HTTP boundary: every ``httpx2`` transport (the one the Anthropic
  and OpenAI SDKs, pydantic-ai and the Agents SDK's trace exporter all use) answers through
  `httpx2.MockTransport` with Messages API or Responses API JSON; any other request gets a 404
  naming it, and a socket connection to anything but a Unix socket is refused.
  ``tools`` maps a tool name to the input the fake model calls it with whenever a request offers
  that tool and its last message is not a tool result (the summarizer's forced tool call).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import json
import re
import runpy
import socket
import sys
import types
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx2

ANTHROPIC = ("api.anthropic.com", "/v1/messages")
RESPONSES = ("api.openai.com", "/v1/responses")
TRACES = ("api.openai.com", "/v1/traces/ingest")
REPLY = "Noted: five days in Lisbon, and no flight before 9am."
"""What the fake model answers to every turn of an agent."""


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def module_owners() -> dict[str, set[str]]:
    """Each module an installed distribution's RECORD lists, and the distributions listing it.

    Per module, not per top-level name: a namespace package (``langgraph``) is shared, and
    ``langgraph.checkpoint.sqlite`` belongs to langgraph-checkpoint-sqlite alone.
    """
    owners: dict[str, set[str]] = {}
    for dist in importlib.metadata.distributions():
        name = canonical(dist.metadata["Name"])
        for file in dist.files or []:
            parts = file.parts
            if not parts or parts[0] == ".." or not parts[-1].endswith((".py", ".so", ".pyd")):
                continue
            stem = parts[-1].split(".", 1)[0]
            dotted = [*parts[:-1]] if stem == "__init__" else [*parts[:-1], stem]
            if dotted and all(part.isidentifier() for part in dotted):
                owners.setdefault(".".join(dotted), set()).add(name)
    return owners


class OnlyAllowedDistributions(importlib.abc.MetaPathFinder):
    """Refuses modules that only distributions outside ``allowed`` provide."""

    def __init__(self, allowed: Collection[str]) -> None:
        self.allowed = {canonical(name) for name in allowed}
        self.owners = module_owners()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,  # noqa: ARG002 - the finder protocol's signature
        target: types.ModuleType | None = None,  # noqa: ARG002
    ) -> importlib.machinery.ModuleSpec | None:
        """None (let the next finder look) unless the module's distributions are all refused."""
        owners = self.owners.get(fullname, set())
        if owners and not owners & self.allowed:
            raise ModuleNotFoundError(
                f"No module named {fullname!r} (its distribution {', '.join(sorted(owners))} "
                "is not required by the snippet's install line)",
                name=fullname,
            )
        return None


class FakeProviders:
    """The providers' HTTP APIs, answering from canned JSON and logging every request."""

    def __init__(self, log: Path, tools: Mapping[str, Any]) -> None:
        self.log = log
        self.tools = dict(tools)
        self.count = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """Answer one request (the `httpx2.MockTransport` handler)."""
        self.count += 1
        body = json.loads(request.content) if request.content else None
        where = (request.url.host, request.url.path)
        if where == ANTHROPIC and isinstance(body, dict):
            response = self.anthropic(body)
        elif where == RESPONSES and isinstance(body, dict):
            response = self.responses(body)
        elif where == TRACES:
            response = httpx2.Response(204)
        else:
            message = f"the snippet test fakes no {request.method} {request.url}"
            response = httpx2.Response(404, json={"error": {"message": message}})
        entry = {"url": str(request.url), "status": response.status_code, "body": body}
        with self.log.open("a", encoding="utf-8") as file:
            file.write(json.dumps(entry) + "\n")
        return response

    def anthropic(self, body: Mapping[str, Any]) -> httpx2.Response:
        """A Messages API reply: the canned tool call where one is offered, else text."""
        offered = [tool.get("name") for tool in body.get("tools", [])]
        last = body["messages"][-1]["content"]
        answered = isinstance(last, list) and any(b.get("type") == "tool_result" for b in last)
        called = next((name for name in offered if name in self.tools), None)
        if called is not None and not answered:
            content: list[dict[str, Any]] = [
                {
                    "type": "tool_use",
                    "id": f"toolu_{self.count:04d}",
                    "name": called,
                    "input": self.tools[called],
                }
            ]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": REPLY}], "end_turn"
        usage = {
            "input_tokens": len(json.dumps(body)) // 4,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 20,
        }
        reply = {
            "id": f"msg_{self.count:04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if body.get("stream"):
            return httpx2.Response(
                200, content=stream(reply), headers={"content-type": "text/event-stream"}
            )
        return httpx2.Response(200, json=reply)

    def responses(self, body: Mapping[str, Any]) -> httpx2.Response:
        """A Responses API reply: one assistant message."""
        if body.get("stream"):
            error = {"message": "the fake does not stream", "type": "invalid_request_error"}
            return httpx2.Response(400, json={"error": error})
        text = {"type": "output_text", "text": REPLY, "annotations": []}
        message = {
            "type": "message",
            "id": f"msg_{self.count:04d}",
            "role": "assistant",
            "status": "completed",
            "content": [text],
        }
        usage = {
            "input_tokens": len(json.dumps(body)) // 4,
            "output_tokens": 20,
            "total_tokens": len(json.dumps(body)) // 4 + 20,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        reply = {
            "id": f"resp_{self.count:04d}",
            "object": "response",
            "created_at": 1_700_000_000,
            "model": body["model"],
            "status": "completed",
            "output": [message],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage,
        }
        return httpx2.Response(200, json=reply)


def stream(message: Mapping[str, Any]) -> bytes:
    """A Messages API reply as the server-sent events of a streamed response."""
    start = dict(message) | {"content": [], "stop_reason": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opened, delta = block | {"text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            partial = json.dumps(block["input"])
            opened, delta = (
                block | {"input": {}},
                {"type": "input_json_delta", "partial_json": partial},
            )
        events += [
            {"type": "content_block_start", "index": index, "content_block": opened},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    events += [
        {"type": "message_delta", "delta": stop, "usage": usage},
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def fake_the_network(handler: FakeProviders) -> None:
    """Every httpx2 transport answers through the fake; real sockets refuse to connect."""
    mock = httpx2.MockTransport(handler)

    def handle(_: httpx2.HTTPTransport, request: httpx2.Request) -> httpx2.Response:
        return mock.handle_request(request)

    async def handle_async(
        _: httpx2.AsyncHTTPTransport, request: httpx2.Request
    ) -> httpx2.Response:
        return await mock.handle_async_request(request)

    setattr(httpx2.HTTPTransport, "handle_request", handle)  # noqa: B010 - replaces the I/O
    setattr(httpx2.AsyncHTTPTransport, "handle_async_request", handle_async)  # noqa: B010

    local = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> None:
        if sock.family != socket.AF_UNIX:
            raise OSError(f"snippets run offline (a connection to {address!r} was refused)")
        local(sock, address)

    def create_connection(address: Any, *_: Any, **__: Any) -> socket.socket:
        raise OSError(f"snippets run offline (a connection to {address!r} was refused)")

    setattr(socket.socket, "connect", connect)  # noqa: B010
    setattr(socket, "create_connection", create_connection)  # noqa: B010


def main(argv: Sequence[str]) -> None:
    """Set up from the config file, then run the snippet or the module."""
    config = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    fake_the_network(FakeProviders(Path(config["log"]), config.get("tools", {})))
    sys.meta_path.insert(0, OnlyAllowedDistributions(config["allowed"]))
    if argv[1] == "code":
        path, label = Path(argv[2]), argv[3]
        code = compile(path.read_text(encoding="utf-8"), label, "exec")
        sys.argv, sys.path[0] = [label], str(Path.cwd())  # as `python script.py` run here
        exec(code, {"__name__": "__main__", "__file__": label})  # noqa: S102 - the snippet itself
    elif argv[1] == "-m":
        sys.argv, sys.path[0] = [argv[2], *argv[3:]], str(Path.cwd())
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        raise SystemExit(f"usage: {__doc__}")


if __name__ == "__main__":
    main(sys.argv[1:])
