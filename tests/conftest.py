"""Shared fixtures: no network in tests, Markdown snapshots, fixed clock."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import settings

pytest_plugins = [
    "progsum.testing.snapshot",  # the snapshot_md fixture, as users get it
    "tests.postgres",  # a throwaway PostgreSQL server for the store tests
]

# CI (.ci/run sets HYPOTHESIS_PROFILE=ci) replays a fixed set of examples, so a landing never
# depends on luck; elsewhere Hypothesis explores new examples on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

FIXED_TIME = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that tries to open a network connection (models are faked at the boundary)."""

    def refuse(*args: Any, **_: Any) -> None:
        message = f"tests must not touch the network (tried to connect with {args!r})"
        raise RuntimeError(message)

    local = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> None:
        if sock.family != socket.AF_UNIX:  # Unix sockets are local IPC (the fork server)
            refuse(sock, address)
        local(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def fixed_clock() -> datetime:
    """A clock for deterministic event timestamps."""
    return FIXED_TIME
