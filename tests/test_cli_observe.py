"""The CLI's observability: ``-v`` log lines and the replay's summarization share."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from progsum import Compactor, ConversationState, Policy, SummaryUpdate
from progsum.cli._output import share_line as _share_line
from progsum.cli.main import main
from progsum.policy._usage import AgentUsage
from progsum.summary._update import SummarizerUsage
from progsum.testing import QueuedSummarizer
from tests.conversations import TRIP_RULE, trip_planning

ROOT = Path(__file__).resolve().parent.parent
TRIP = ROOT / "examples" / "conversations" / "trip-planning.json"
SONNET_4_5 = (3.00, 15.00)
"""claude-sonnet-4-5 list price, US dollars per million input and output tokens (Anthropic's
pricing page, as docs/models.md cites it)."""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return the exit status, stdout and stderr."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_replay_prints_the_summarization_share(capsys: pytest.CaptureFixture[str]) -> None:
    """Replay ends its report with the share of tokens spent summarizing (none offline)."""
    status, out, _ = run(capsys, "replay", str(TRIP), "--budget", "2000")
    assert status == 0
    (line,) = [line for line in out.splitlines() if line.startswith("summarization share: ")]
    found = re.fullmatch(
        r"summarization share: 0\.0% of all tokens \(summarizer 0 tokens, agent ([\d,]+) in "
        r"(\d+) call\(s\), estimated\)",
        line,
    )
    assert found is not None, line
    assert int(found.group(2)) == 23  # the trip's assistant messages
    assert int(found.group(1).replace(",", "")) > 0


def test_replay_with_a_priced_model_prints_the_agents_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With --model, the share line prices the agent's tokens at that model's list price."""
    status, out, _ = run(capsys, "replay", str(TRIP), "--model", "claude-sonnet-4-5")
    assert status == 0
    (line,) = [line for line in out.splitlines() if line.startswith("summarization share: ")]
    assert "; agent cost $" in line
    assert line.endswith(" at claude-sonnet-4-5 list price")


def test_verbose_shows_the_engine_log_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """-v prints progsum.engine's INFO line for each compaction on stderr.

    Only with -v.
    """
    _, quiet_out, quiet_err = run(capsys, "replay", str(TRIP), "--budget", "2000")
    assert "progsum.engine" not in quiet_err
    status, out, err = run(capsys, "replay", str(TRIP), "--budget", "2000", "-v")
    assert status == 0
    assert out == quiet_out
    logged = [
        line
        for line in err.splitlines()
        if line.startswith("progsum.engine INFO: ") and " compacted: " in line
    ]
    compactions = [line for line in out.splitlines() if " into the summary, " in line]
    assert len(logged) == len(compactions) >= 1
    assert logged[0].startswith("progsum.engine INFO: event 1 compacted: ")
    _, _, before_command = run(capsys, "-v", "replay", str(TRIP), "--budget", "2000")
    assert before_command == err  # -v works before the command too


def test_the_share_line_uses_reported_usage_and_prices_it() -> None:
    """Reported agent usage wins over the estimate; the cost follows the model's list price."""
    usage = SummarizerUsage(input_tokens=1_500, output_tokens=500)
    fake = QueuedSummarizer(SummaryUpdate(add={"constraints": [TRIP_RULE]}, usage=usage))
    state = ConversationState(trip_planning(12)).record_usage(
        {"input_tokens": 16_000, "output_tokens": 2_000}
    )
    state = Compactor(policy=Policy(context_window=200_000), summarizer=fake).compact(
        state, force=True
    )
    estimate = AgentUsage(input_tokens=1, reports=1)
    dollars = (16_000 * SONNET_4_5[0] + 2_000 * SONNET_4_5[1]) / 1_000_000
    assert _share_line(state, estimate, "claude-sonnet-4-5") == (
        "summarization share: 10.0% of all tokens (summarizer 2,000 tokens, agent 18,000 in 1 "
        f"call(s), reported); agent cost ${dollars:.4f} at claude-sonnet-4-5 list price"
    )
    assert _share_line(state, estimate, "gpt-unknown-model").endswith(
        "; agent cost unknown (no list price for gpt-unknown-model)"
    )
