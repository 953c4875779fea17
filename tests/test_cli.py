"""The progsum command line, run in-process (and once as ``python -m progsum``)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import progsum
from progsum import ConversationState
from progsum.cli._output import PRICES
from progsum.cli._output import cost as _cost
from progsum.cli.main import main
from progsum.policy._windows import MODELS
from progsum.summary._update import SummarizerUsage

ROOT = Path(__file__).resolve().parent.parent
TRIP = ROOT / "examples" / "conversations" / "trip-planning.json"
TRIP_PROBES = ROOT / "examples" / "conversations" / "trip-planning.probes.json"
CODING = ROOT / "examples" / "conversations" / "coding-agent.json"
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
OFFLINE = (
    "progsum: no ANTHROPIC_API_KEY, so summarizing offline with the extractive summarizer "
    "(the conversation's own sentences as terse notes, no model)\n"
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return the exit status, stdout and stderr."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_version_runs_as_a_module() -> None:
    """``python -m progsum --version`` prints the package version."""
    done = subprocess.run(
        [sys.executable, "-m", "progsum", "--version"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"progsum {progsum.__version__}\n",
        "",
    )


def test_compact_prints_the_header_and_tail_and_reports_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Offline compaction of the trip example: header and kept messages out, report on stderr.

    The newest user message opens with the recall block (escaped, as all quoted markup is).
    """
    status, out, err = run(capsys, "compact", str(TRIP), "--budget", "2000")
    assert status == 0
    assert out.startswith("# Earlier conversation (compressed)\nMessages 2\N{EN DASH}32 of this")
    assert "- [C1] Total budget is $6,500 for both of us, flights included.\n" in out
    assert '<message index="1" role="user">\nHi! My partner Sam' in out
    assert '<message index="2" role="assistant">' not in out  # folded
    assert out.rstrip().endswith("what's left to decide?\n</message>")
    lines = err.splitlines()
    assert err.startswith(OFFLINE)
    assert lines[1].startswith("trip-planning (anthropic-json, 45 messages): 2,809 tokens before, ")
    assert lines[1].endswith("trigger 2,000")
    assert lines[2].startswith("folded messages 2-32 into the summary, +")
    assert lines[2].endswith(" items, 0 retired")
    assert lines[3].startswith("consolidated the summary over its header budget: ")  # 500 tokens
    assert lines[4] == "kept 14 messages verbatim"
    assert lines[5] == "recalled 2 excerpts of folded messages (messages 26, 27) before message 45"
    assert '<message index="45" role="user">\n&lt;recalled_history note=' in out
    assert "Booked: Mitsui Garden Hotel Ginza Premier, April 4 to 8" in out
    assert lines[6].startswith("summary items: decisions ")
    assert lines[7] == "summarizer: ExtractiveSummarizer, 0 model call(s), no cost"


def test_compact_no_recall_adds_no_block_and_keeps_an_agent_s_tail(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--no-recall: no block; the trip is an agent's conversation, so the tail is as with recall.

    An agent's fitted tail leaves the recall block no room of its own (`Policy.tail_recall`).
    """
    status, out, err = run(capsys, "compact", str(TRIP), "--budget", "2000", "--no-recall")
    assert status == 0
    assert "recalled_history" not in out
    assert "recalled" not in err
    assert "kept 14 messages verbatim" in err
    assert out.rstrip().endswith(
        "That looks great. Can you send me a summary of everything booked and what's left to "
        "decide?\n</message>"
    )


def test_compact_clears_old_tool_output_before_summarizing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Large old tool results are cleared (no model call) and shown as the model sees them."""
    messages: list[dict[str, object]] = [{"role": "user", "content": "Audit the logs."}]
    for n in range(6):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "cat", "arguments": "{}"},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"LOG{n} " * 800})
        messages.append({"role": "assistant", "content": f"Log {n} looks fine."})
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    status, out, err = run(capsys, "compact", str(path), "--budget", "6000", "--keep", "4")
    assert status == 0
    assert "\ncleared old tool results in 4 messages, no model call: " in err
    assert "into the summary" not in err  # clearing was enough
    assert '<message index="3" role="tool">' in out  # still in context ...
    assert "LOG0 LOG0" not in out  # ... as the model sees it: a placeholder, not the output
    assert "LOG5 LOG5" in out  # the most recent results stay whole


def test_compact_json_is_a_provider_request(capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints Anthropic system blocks and messages: the header is the last system block."""
    status, out, _ = run(capsys, "compact", str(TRIP), "--budget", "2000", "--json")
    request = json.loads(out)
    assert status == 0
    assert set(request) == {"system", "messages"}
    assert request["system"][-1]["text"].startswith("# Earlier conversation (compressed)")
    assert request["messages"][0]["role"] == "user"


def test_compact_openai_keeps_the_system_prompt_first(capsys: pytest.CaptureFixture[str]) -> None:
    """An OpenAI file's system prompt leads the rendered messages, then the header."""
    status, out, _ = run(
        capsys, "compact", str(CODING), "--budget", "1500", "--keep", "4", "--json"
    )
    messages = json.loads(out)["messages"]
    assert status == 0
    assert messages[0] == {
        "role": "system",
        "content": (
            "You are a coding agent working in the user's repository. Use the tools to read "
            "files, run commands and edit code. Explain what you change."
        ),
    }
    assert messages[1]["role"] == "system"
    assert messages[1]["content"].startswith("# Earlier conversation (compressed)")
    assert messages[2]["content"].startswith("CI is red on main")


def test_compact_below_the_budget_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """A conversation under the budget is printed whole, and the report says why."""
    status, out, err = run(capsys, "compact", str(FIXTURES / "anthropic.json"))
    assert status == 0
    assert "# Earlier conversation" not in out
    assert out.count("<message index=") == 4
    assert "nothing to compact: " in err
    assert "is below the trigger of 2,000" in err


def test_compact_save_then_render_gives_the_same_view(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A state saved by compact --save renders to the same header and messages."""
    saved = tmp_path / "trip.state.json"
    _, compacted, _ = run(capsys, "compact", str(TRIP), "--budget", "2000", "--save", str(saved))
    state = ConversationState.from_json(saved.read_text(encoding="utf-8"))
    assert len(state) == 45
    status, rendered, err = run(capsys, "render", str(saved))
    assert status == 0
    assert rendered == compacted
    assert err == "45 messages logged, 14 verbatim, 1 compaction(s)\n"


def test_replay_reports_each_compaction_and_the_probes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Replay prints one line per compaction, then probe survival beside truncation."""
    status, out, err = run(
        capsys,
        "replay",
        str(TRIP),
        "--budget",
        "1200",
        "--keep",
        "4",
        "--probes",
        str(TRIP_PROBES),
    )
    assert status == 0
    assert err == OFFLINE
    lines = out.splitlines()
    compactions = [line for line in lines if " into the summary, " in line]
    assert compactions
    assert compactions[0].startswith("message ")
    assert " tokens, folded messages 2-" in compactions[0]
    assert any(line.startswith("replayed 45 messages of trip-planning") for line in lines)
    assert "  kept  total-budget  (message 3, folded; progsum: header; truncation: lost)" in lines
    assert any(line.startswith("probes kept: progsum ") for line in lines)
    assert lines[-1].startswith("context: 2,809 tokens in full, ")


def test_replay_draws_a_progress_bar_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal, replay draws rich's progress bar on stderr and clears it."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    status = main(["replay", str(FIXTURES / "anthropic.json"), "--summarizer", "extractive"])
    assert status == 0
    drawn = terminal.getvalue()
    assert "replaying anthropic" in drawn
    assert "4/4\x1b[0m messages, 0 events" in drawn
    assert "\x1b[2K" in drawn  # the bar is erased when the replay ends (transient)
    assert "replayed 4 messages" in capsys.readouterr().out


def test_render_openai_state_as_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The render --json of an OpenAI state prints its message list."""
    saved = tmp_path / "coding.state.json"
    run(capsys, "compact", str(CODING), "--budget", "1500", "--keep", "4", "--save", str(saved))
    status, out, _ = run(capsys, "render", str(saved), "--json")
    assert status == 0
    assert json.loads(out)["messages"][0]["content"].startswith("# Earlier conversation")


def test_schemas_lists_the_shipped_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    """Schemas prints one line per shipped schema: its name and description."""
    status, out, _ = run(capsys, "schemas")
    assert status == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == [info.name for info in progsum.schemas()]
    default = next(info for info in progsum.schemas() if info.name == "default")
    assert any(line.endswith(f"  {default.description}") for line in lines)


def test_schemas_name_describes_the_fields(capsys: pytest.CaptureFixture[str]) -> None:
    """Schemas NAME lists the fields with their id prefixes and which are binding."""
    status, out, _ = run(capsys, "schemas", "default")
    assert status == 0
    assert out.startswith("default (Summary)\n")
    assert "  constraints [C1, C2, ..., binding]: Constraints." in out
    status, out, _ = run(capsys, "schemas", "travel-planning")
    assert "  bookings [B1, B2, ..., binding]: Bookings." in out


def test_compact_with_a_schema_and_render_finds_it_again(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--schema picks the fields; render recognises a shipped schema's state without --schema."""
    saved = tmp_path / "trip.state.json"
    argv = ["compact", str(TRIP), "--budget", "2000", "--schema", "travel-planning"]
    status, compacted, err = run(capsys, *argv, "--save", str(saved))
    assert status == 0
    assert "## Traveller requirements (binding)\n- [C1] Total budget is $6,500" in compacted
    assert "summary items: traveller requirements " in err
    status, rendered, _ = run(capsys, "render", str(saved))
    assert (status, rendered) == (0, compacted)
    status, _, err = run(capsys, "render", str(TRIP))
    assert "pass a file written by 'progsum compact --save'" in err
    assert "to_dict" not in err  # Python advice is not for the command line
    status, _, err = run(capsys, "render", str(saved), "--schema", "default")
    assert status == 2
    assert "TravelPlanningSummary" in err
    assert "pass --schema travel-planning, or leave --schema out" in err
    assert "schema=" not in err  # the Python keyword is not a flag of this command


def test_schema_from_a_toml_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--schema also takes the path of the user's own schema file."""
    own = tmp_path / "trip-rules.toml"
    own.write_text(
        'name = "trip-rules"\ndescription = "Only the rules."\n\n[[fields]]\n'
        'name = "rules"\nlabel = "Rules"\ndescription = "What the traveller forbids."\n'
        "binding = true\n",
        encoding="utf-8",
    )
    status, out, _ = run(capsys, "compact", str(TRIP), "--budget", "2000", "--schema", str(own))
    assert status == 0
    assert "## Rules (binding)\n- [R1] " in out


def test_several_conversations_pick_one(capsys: pytest.CaptureFixture[str]) -> None:
    """A file of several conversations uses the first, or the one --conversation names."""
    status, out, err = run(capsys, "compact", str(FIXTURES / "tau-bench.json"))
    assert status == 0
    assert "holds 2 conversations; using 'tau-bench#7.0'" in err
    assert "Reservation ZFA04Y is cancelled." in out
    status, out, err = run(
        capsys, "compact", str(FIXTURES / "tau-bench.json"), "--conversation", "tau-bench#7.1"
    )
    assert status == 0
    assert "Which reservation?" in out
    status, out, err = run(
        capsys, "compact", str(FIXTURES / "claude-code.jsonl"), "--conversation", "a1"
    )
    assert "Subagent: searched" in out


BAD_INPUT = {
    "missing-file": (["compact", "missing.json"], 1, "missing.json: no such file; pass the"),
    "budget-not-int": (
        ["compact", str(TRIP), "--budget", "many"],
        2,
        "argument --budget: invalid int value: 'many' (see progsum compact --help)",
    ),
    "budget-zero": (
        ["compact", str(TRIP), "--budget", "0"],
        2,
        "--budget 0 must be a positive number of tokens, e.g. 2000",
    ),
    "keep-zero": (
        ["compact", str(TRIP), "--keep", "0"],
        2,
        "--keep 0 must keep at least 1 message; use e.g. --keep 8",
    ),
    "anthropic-no-key": (
        ["compact", str(TRIP), "--summarizer", "anthropic"],
        2,
        "--summarizer anthropic needs ANTHROPIC_API_KEY; set it, or use --summarizer extractive",
    ),
    "unknown-schema": (
        ["compact", str(TRIP), "--schema", "nope"],
        2,
        "--schema 'nope': no such schema; use one of coding-agent, customer-support, default,",
    ),
    "missing-schema-file": (
        ["compact", str(TRIP), "--schema", "nope.toml"],
        1,
        "schema file nope.toml does not exist",
    ),
    "no-such-conversation": (
        ["compact", str(TRIP), "--conversation", "3"],
        2,
        "--conversation 3: ",
    ),
    "unknown-model": (
        ["compact", str(TRIP), "--model", "gpt-2"],
        2,
        "--model 'gpt-2' is not in progsum's table of context windows; use a name starting with",
    ),
    "bad-probes": (
        ["replay", str(TRIP), "--probes", str(TRIP)],
        1,
        f"{TRIP}: probe 0 has no string 'id'",
    ),
    "render-not-state": (["render", str(TRIP)], 1, f"{TRIP}: not a progsum state"),
    "render-missing": (["render", "missing.json"], 1, "missing.json: no such state file"),
}


@pytest.mark.parametrize(("argv", "status", "error"), BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_one_line_and_a_status(
    capsys: pytest.CaptureFixture[str], argv: list[str], status: int, error: str
) -> None:
    """Bad files exit 1 and bad usage exits 2, each with one line on stderr, never a traceback."""
    code, out, err = run(capsys, *argv)
    assert (code, out) == (status, "")
    (line,) = [line for line in err.splitlines() if line != OFFLINE.strip()]
    assert line.startswith(f"progsum {argv[0]}: {error}")
    assert err.endswith("\n")


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["frobnicate"], "progsum: argument COMMAND: invalid choice: 'frobnicate'"),
        ([], "progsum: the following arguments are required: COMMAND (see progsum --help)"),
    ],
    ids=["unknown-command", "no-command"],
)
def test_bad_commands_are_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    """A missing or unknown command exits 2 with one line on stderr."""
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(error)
    assert err.count("\n") == 1


def test_cost_uses_list_prices_only_for_known_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cost is computed from the price table, and is 'unknown' for other models."""
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # the table alone (tests/test_prices.py)
    usage = SummarizerUsage(
        input_tokens=12_345,
        output_tokens=2_000,
        cache_creation_input_tokens=1_000,
        cache_read_input_tokens=4_000,
        calls=2,
    )
    haiku = PRICES["claude-haiku-4-5"]
    dollars = 12_345 * haiku.input + 2_000 * haiku.output + 1_000 * haiku.cache_write
    dollars += 4_000 * haiku.cache_read
    assert dollars / 1e6 == pytest.approx(0.023995)
    assert _cost(usage, "claude-haiku-4-5") == (
        "$0.0240 at list price (12,345 input, 2,000 output tokens)"
    )
    assert _cost(usage, "claude-opus-9") == (
        "cost unknown (no list price for claude-opus-9 in progsum's table)"
    )
    assert _cost(SummarizerUsage(calls=0), None) == "no cost"


def test_every_model_in_the_window_table_is_priced_or_says_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cost never fails: a listed price is used, and rows without one say 'cost unknown'."""
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # the table alone (tests/test_prices.py)
    usage = SummarizerUsage(input_tokens=1_000, output_tokens=100, calls=1)
    for model, found in MODELS.items():
        cost = _cost(usage, model)
        if found.price is None:
            assert cost.startswith("cost unknown"), model
        else:
            assert cost.startswith("$"), model
    assert {"claude-haiku-5-5", "claude-sonnet-5-5", "claude-opus-5-5"} <= set(PRICES)


def test_the_long_prompt_band_prices_calls_over_the_threshold() -> None:
    """Haiku 5.5 calls averaging over 100,000 prompt tokens are priced at the higher band."""
    short = SummarizerUsage(input_tokens=90_000, output_tokens=1_000, calls=1)
    assert _cost(short, "claude-haiku-5-5") == (
        "$0.0095 at list price (90,000 input, 1,000 output tokens)"
    )
    long = SummarizerUsage(input_tokens=120_000, output_tokens=1_000, calls=1)
    assert _cost(long, "claude-haiku-5-5") == (
        "$0.0625 at list price, prompts over 100,000 tokens (120,000 input, 1,000 output tokens)"
    )


def test_header_budget_consolidates_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """--header-budget sets the header's budget: the least telling facts go, binding items stay."""
    status, out, err = run(
        capsys, "compact", str(TRIP), "--budget", "2000", "--header-budget", "400"
    )
    assert status == 0
    assert "consolidated the summary over its header budget: 0 merged, " in err
    assert re.search(r"\d+ least telling dropped or shortened \(kept as tombstones\)", err), err
    assert "- [C1] Total budget is $6,500 for both of us, flights included.\n" in out
    status, _, err = run(capsys, "compact", str(TRIP), "--header-budget", "0")
    assert status == 2
    assert (
        err == "progsum compact: --header-budget 0 must be a positive number of tokens, e.g. 500\n"
    )


def _oversized(tmp_path: Path) -> Path:
    """A conversation whose first message and newest tool round alone exceed a 1,000 budget."""
    messages = [
        {"role": "user", "content": "Do the task."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "long plan " * 2_000, "signature": "s"},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
    ]
    path = tmp_path / "over.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def test_compact_exits_3_when_the_context_is_over_the_window(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A context still over the window is reported in one line and exits 3 unless allowed."""
    path = _oversized(tmp_path)
    status, _, err = run(
        capsys, "compact", str(path), "--budget", "1000", "--summarizer", "extractive"
    )
    assert status == 3
    assert "OVER THE WINDOW" in err
    assert "alone exceed the window" in err
    assert "--allow-overflow" in err
    status, _, _ = run(
        capsys,
        "compact",
        str(path),
        "--budget",
        "1000",
        "--summarizer",
        "extractive",
        "--allow-overflow",
    )
    assert status == 0


def test_replay_prints_a_repeated_stall_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same stall recurring after each compaction is printed once, and still counted."""
    messages: list[dict[str, object]] = [{"role": "user", "content": "Task: " + "spec " * 400}]
    for n in range(30):
        messages.append({"role": "assistant", "content": f"reply {n} " + "detail " * 60})
        messages.append({"role": "user", "content": f"more {n} " + "input " * 60})
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    status, out, _ = run(
        capsys, "replay", str(path), "--budget", "900", "--keep", "6", "--summarizer", "extractive"
    )
    assert status == 0
    lines = [line for line in out.splitlines() if "stalled" in line and line.startswith("message")]
    kinds = [line.split("stalled (")[1].split(")")[0] for line in lines if "stalled (" in line]
    assert len(kinds) == len(set(kinds))
