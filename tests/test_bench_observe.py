"""bench/observe.py's checks run on the small bench fixtures, so the script cannot rot."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import observe
import pytest
import transcripts

from progsum import Policy
from progsum.replay._importers import read_conversations

pytestmark = pytest.mark.bench  # outside the default run: python -m pytest -m bench

FIXTURES = Path(__file__).parent / "fixtures" / "bench"


def test_every_event_is_reported_once_on_the_fixture_corpora(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Replaying the fixtures, the hook and the log see each event once and quiet turns nothing."""
    caplog.set_level(logging.INFO, logger="progsum")
    policy = Policy(context_window=2_000, trigger=("tokens", 300), keep=("messages", 2))
    lines = observe.Lines()
    total = 0
    for _, files in transcripts.corpus_files(FIXTURES):
        for path in files:
            for conversation in read_conversations(path):
                logging.getLogger("progsum").addHandler(lines)
                try:
                    events, _, problems = observe.check(conversation.messages, policy, lines)
                finally:
                    logging.getLogger("progsum").removeHandler(lines)
                assert problems == [], conversation.name
                total += events
    assert total > 0
