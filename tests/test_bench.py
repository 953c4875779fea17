"""The benchmark scripts run on tiny inputs, so they cannot rot; their checkers catch orphans."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from progsum import Compactor, ConversationState, Policy
from tests.conversations import coding_session
from tests.postgres import PostgresServer

# the benchmarks are scripts in bench/, not a package: import them as the scripts see each other
sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import bench_engine
import bench_langchain
import contention
import fleet
import responses_split
import transcripts

pytestmark = pytest.mark.bench  # outside the default run: python -m pytest -m bench

FIXTURES = Path(__file__).parent / "fixtures" / "bench"


TINY = [
    *("--turns", "50", "--repeats", "2"),
    *("--histories", "100", "300", "--segments", "10", "40"),
    *("--session-turns", "80"),
]
"""The shared workload options (`bench_engine.workload_parser`), at sizes a test can afford."""


def test_bench_engine_runs_on_tiny_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    """bench_engine prints its three tables with ratios for short histories and a short session."""
    bench_engine.main(TINY)
    out = capsys.readouterr().out
    assert "ratio 300 / 100 messages" in out
    assert "ratio segment 40 / 10 at history 300" in out
    assert "Summarizer input across" in out
    assert "ratio max / first request" in out


def test_summarizer_input_stays_bounded_across_chained_compactions() -> None:
    """The fake summarizer retires what it supersedes, so requests stay near the first's size."""
    sizes, whole = bench_engine.summarizer_inputs(300, trigger=1_500, keep=4)
    assert len(sizes) >= 10
    prompts = [s.prompt for s in sizes]
    assert max(prompts) < 1.5 * prompts[0]
    assert max(s.live_items for s in sizes) <= 20  # items are retired, not piled up
    assert sizes[0].prior == 0
    assert sizes[-1].prior > 0
    assert whole > 5 * max(prompts)  # the session is far larger than any request


@pytest.mark.parametrize("flags", [[], ["--no-reduction"]], ids=["reduction", "no-reduction"])
def test_transcripts_replays_every_corpus_without_orphans(
    capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    """transcripts.py reads the three corpora, cuts each, finds no orphan, compares Claude Code."""
    transcripts.main([str(FIXTURES), "--trigger", "300", "--keep", "2", *flags])
    out = capsys.readouterr().out
    for corpus in ("claude_code", "tau_bench", "swe_agent"):
        row = next(line for line in out.splitlines() if line.startswith(corpus))
        cells = [cell.strip() for cell in row.split("|")]
        assert int(cells[4]) > 0, row  # compactions happened
        assert cells[6] == "0", row  # no orphans
    assert "0 orphaned tool calls or results" in out
    assert "Claude Code's own compaction beside progsum's" in out
    assert "invoice-fi" in out


def test_transcripts_rejects_a_folder_without_corpora(tmp_path: Path) -> None:
    """A data folder holding none of the corpora is a usage error, not an empty table."""
    with pytest.raises(SystemExit):
        transcripts.main([str(tmp_path)])


def _call(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": "Read", "input": {}}],
    }


def _result(*call_ids: str) -> dict[str, Any]:
    blocks = [{"type": "tool_result", "tool_use_id": c, "content": "ok"} for c in call_ids]
    return {"role": "user", "content": blocks}


def test_anthropic_orphans_finds_each_kind_of_broken_pair() -> None:
    """A call answered elsewhere, a result with no call, a reused id answered once are caught."""
    task = {"role": "user", "content": "go"}
    whole = [task, _call("t1"), _result("t1"), _call("t1"), _result("t1")]
    assert transcripts.anthropic_orphans(whole, trailing_call=False) == []
    assert transcripts.anthropic_orphans([task, _call("t1")], trailing_call=True) == []
    assert transcripts.anthropic_orphans([task, _call("t1")], trailing_call=False)
    assert transcripts.anthropic_orphans([_result("t1"), _call("t2")], trailing_call=True)
    late = [task, _call("t1"), {"role": "user", "content": "wait"}, _result("t1")]
    assert len(transcripts.anthropic_orphans(late, trailing_call=False)) == 2
    twice = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
        ],
    }
    assert transcripts.anthropic_orphans([task, twice, _result("t1")], trailing_call=False)


def _openai_call(*call_ids: str) -> dict[str, Any]:
    calls = [
        {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for c in call_ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def test_openai_orphans_finds_each_kind_of_broken_pair() -> None:
    """The run of tool messages right after a call must answer it, and answer nothing else."""
    user = {"role": "user", "content": "go"}
    whole = [user, _openai_call("a", "b"), _tool("a"), _tool("b"), _openai_call("a"), _tool("a")]
    assert transcripts.openai_orphans(whole, trailing_call=False) == []
    assert transcripts.openai_orphans([user, _openai_call("a")], trailing_call=True) == []
    assert transcripts.openai_orphans([user, _openai_call("a")], trailing_call=False)
    assert transcripts.openai_orphans([user, _tool("a")], trailing_call=False)
    missing = [user, _openai_call("a", "b"), _tool("a"), user]
    assert transcripts.openai_orphans(missing, trailing_call=True) == [
        "message 1: call b is not answered"
    ]
    interrupted = [user, _openai_call("a"), user, _tool("a")]
    assert len(transcripts.openai_orphans(interrupted, trailing_call=False)) == 2


def test_bench_langchain_without_langchain_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the bench extra the LangChain benchmark prints one install line and returns."""
    monkeypatch.setattr(bench_langchain, "load_langchain", lambda: None)
    bench_langchain.main(["--quick"])
    assert capsys.readouterr().out == bench_langchain.INSTALL + "\n"


@pytest.mark.skipif(
    importlib.util.find_spec("langchain") is None, reason="the bench extra is not installed"
)
def test_bench_langchain_runs_side_by_side_on_tiny_sizes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With LangChain installed, the three comparisons print progsum and LangChain side by side."""
    bench_langchain.main(TINY)
    out = capsys.readouterr().out
    assert "SummarizationMiddleware with GenericFakeChatModel" in out
    assert "growth 300 / 100 messages: progsum" in out
    assert "LangChain / progsum" in out
    assert "   progsum |" in out
    assert " LangChain |" in out


def test_windows_replays_every_corpus_within_the_window(capsys: pytest.CaptureFixture[str]) -> None:
    """windows.py counts request points per window; none is over it and none breaks a rule."""
    import windows  # noqa: PLC0415 - a bench script, imported like the others

    settings = ["--windows", "2000", "8000", "--keeps", "fit", "m2", "t300"]
    windows.main([str(FIXTURES), "--table", "corpora", *settings])
    out = capsys.readouterr().out
    rows = [row for row in (line.split() for line in out.splitlines()[1:]) if len(row) == 13]
    assert len(rows) == 12, out  # each window and keep, without and with usage reported
    assert {row[3] for row in rows} == {"no", "yes"}
    for row in rows:
        points, over, sent_over, violations = int(row[5]), int(row[6]), int(row[8]), int(row[-1])
        assert points > 0
        assert over == 0
        assert sent_over == 0  # the rendered request, counted by the bench, fits too
        assert violations == 0


def test_windows_guarantee_rows_stay_within_the_window(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The guarantee table's rows: none over the window, none breaking a rule (fixture data)."""
    import windows  # noqa: PLC0415 - a bench script, imported like the others

    rows = ["20 parallel", "value-heavy chat", "archive errors, chats"]
    windows.main([str(FIXTURES), "--table", "guarantees", "--streams", "1", "--rows", *rows])
    out = capsys.readouterr().out
    lines = [line.split() for line in out.splitlines()[1:] if line[:1].isalpha()]
    table = [fields[-13:] for fields in lines if len(fields) > 13 and fields[-12] in ("no", "yes")]
    assert len(table) == 6, out  # three rows, without and with usage reported
    for _, _, _, points, over, _, sent_over, _, _, _, _, _, violations in table:
        assert int(points) > 0
        assert int(over) == 0
        assert int(sent_over) == 0
        assert int(violations) == 0


def test_fleet_runs_both_backends_at_two_sizes(
    capsys: pytest.CaptureFixture[str], postgres_server: PostgresServer
) -> None:
    """bench/fleet.py prints a row per backend and size, with turns taken and ratios."""
    url = postgres_server.database()  # empty: the benchmark makes a schema per size
    tiny = ["--workers", "2", "--threads", "3", "--turns", "4", "--growth", "2"]
    fleet.main([*tiny, "--postgres", url])
    postgres_server.drop(url)
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("sqlite ", "postgres "))]
    assert [(r[0], r[1], r[2]) for r in rows if r[1] != "ratio"] == [
        ("sqlite", "3", "12"),
        ("sqlite", "6", "24"),
        ("postgres", "3", "12"),
        ("postgres", "6", "24"),
    ]
    assert "postgres  ratio 6 / 3 threads: turns/s " in out


def test_contention_races_writers_and_loses_nothing(
    capsys: pytest.CaptureFixture[str], postgres_server: PostgresServer
) -> None:
    """bench/contention.py prints a row per backend and writers: none gave up, nothing lost."""
    url = postgres_server.database()  # empty: the benchmark makes a schema per row
    contention.main(["--writers", "2", "--updates", "3", "--backends", "sqlite", "postgres"])
    contention.main(["--writers", "2", "--updates", "3", "--postgres", url])
    postgres_server.drop(url)
    rows = [
        line.split()
        for line in capsys.readouterr().out.splitlines()
        if line.startswith(("sqlite ", "postgres "))
    ]
    assert [(r[0], r[1], r[2], r[3], r[9], r[10]) for r in rows] == [
        ("sqlite", "2", "6", "0", "0", "0"),
        ("postgres", "2", "6", "0", "0", "0"),
        ("postgres", "2", "6", "0", "0", "0"),
    ]


def test_binding_census_finds_nothing_from_machine_text(capsys: pytest.CaptureFixture[str]) -> None:
    """binding.py prints a row per corpus with 0 machine, 0 uncited and 0 lost, and exits 0."""
    import binding  # noqa: PLC0415 - a bench script, imported like the others

    status = binding.main([str(FIXTURES), "--trigger", "400", "--keep", "2", "--msc", "0"])
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[2:] if line and not line.startswith(" ")]
    assert {row[0] for row in rows} == {"claude_code", "tau_bench", "swe_agent"}, out
    assert sum(int(row[2]) for row in rows) > 0  # it compacted
    assert all(row[4:6] == ["0", "0"] and row[8] == "0" for row in rows), out
    assert status == 0


def test_binding_census_counts_a_value_recall_returns_as_released_not_lost() -> None:
    """A folded value whose sentence a question naming its subject recalls is released."""
    import binding  # noqa: PLC0415 - a bench script, imported like the others

    said = "My locker code at the climbing gym is 4471."
    log = [{"role": "user", "content": "Help me plan my week."}]
    log += [{"role": "user", "content": said}, {"role": "assistant", "content": "Noted."}]
    for n in range(6):
        log += [
            {"role": "user", "content": f"Day {n}: what should I cook tonight?"},
            {"role": "assistant", "content": f"Try the lentil soup number {n}."},
        ]
    state = Compactor(policy=Policy(context_window=4_000, keep=("messages", 2))).compact(
        ConversationState(log), force=True
    )
    folded = binding.Folded(state)
    assert folded.recalls(1, said, "4471")  # "locker code climbing gym" finds message 1
    assert not folded.recalls(1, "4471", "4471")  # nothing names its subject
    assert not folded.recalls(3, said, "4471")  # the question finds message 1, not message 3


def test_costs_prints_every_row_of_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/costs.py measures every row of its table on a short session (tiny sizes)."""
    import costs  # noqa: PLC0415 - a sibling script, imported as the others

    sizes = ["--history", "100", "--grown", "600", "--saves", "200", "400"]
    costs.main(["--turns", "40", "--repeats", "1", *sizes])
    out = capsys.readouterr().out
    for row in (
        "quiet turn, append + maybe_compact",
        "quiet turn, grown tool-heavy session",
        "a 50-message compaction",
        "SQLiteStore.save per turn",
        "SQLiteStore.update",
        "render per call with cleared tool data",
        "progsum compact offline",
        "a due-but-impossible compaction",
    ):
        assert row in out


def test_against_prints_each_row_for_both_checkouts(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/against.py runs both checkouts (here this one twice) and prints a ratio per row."""
    import against  # noqa: PLC0415 - a sibling script, imported as the others

    root = Path(__file__).parents[1]
    against.main([str(root), "--rounds", "1", "--turns", "30", "--folds", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + len(against.ROWS)
    for (_, label, _), line in zip(against.ROWS, lines[1:], strict=True):
        assert line.startswith(label)
        assert line.rstrip().endswith("x")


def test_responses_split_excuses_only_calls_still_awaiting_their_output() -> None:
    """A call whose output has not arrived yet is no violation; one whose output was dropped is."""
    user = {"type": "message", "role": "user", "content": "Check the four files."}
    calls = [
        {"type": "function_call", "call_id": c, "name": "read", "arguments": "{}"} for c in "abcd"
    ]
    outputs = [{"type": "function_call_output", "call_id": c, "output": "ok"} for c in "abcd"]
    waiting = [user, *calls, outputs[0]]  # four parallel calls, one answered so far
    assert responses_split.violations(waiting, waiting) == []
    log = [*waiting, outputs[1]]
    assert responses_split.violations(waiting, log) == ["call b unanswered"]
    again = {"type": "function_call", "call_id": "a", "name": "read", "arguments": "{}"}
    reused = [user, calls[0], outputs[0], again]  # a real log reusing an id: the second waits
    assert responses_split.violations(reused, reused) == []


def test_values_keeps_a_stated_address_whole_through_compaction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/values.py finds the address the user stated, folds it and finds it kept whole."""
    import values  # noqa: PLC0415 - a bench script, imported like the others

    turns: list[dict[str, Any]] = [
        {"role": "user", "content": "I want to change the delivery of order W123 today."},
        {"role": "assistant", "content": "Sure, what is the new address?"},
        {"role": "user", "content": "Please ship it to 12 Rua Augusta, Lisbon."},
    ]
    for n in range(12):
        turns.append({"role": "assistant", "content": f"Step {n} done. " + "checking " * 40})
        turns.append({"role": "user", "content": "Thanks, go on with the next step."})
    (tmp_path / "tau_bench").mkdir()
    (tmp_path / "tau_bench" / "shop.json").write_text(
        json.dumps([{"task_id": 1, "trial": 0, "reward": 1.0, "info": {}, "traj": turns}]),
        encoding="utf-8",
    )
    status = values.main([str(tmp_path), "--budget", "400"])
    out = capsys.readouterr().out
    (row,) = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| tau_bench")]
    assert [cell.strip() for cell in row] == ["tau_bench", "1", "1", "1", "1", "1", "0", "0"], out
    assert "tau_bench: 12 Rua Augusta" in out
    assert status == 0


def test_costs_history_prints_every_row_with_a_ratio(
    capsys: pytest.CaptureFixture[str], postgres_server: PostgresServer
) -> None:
    """bench/costs_history.py runs each row on tiny sizes (costs_turns' too), each with a ratio."""
    import costs_history  # noqa: PLC0415 - a sibling script, imported as the others

    url = postgres_server.database()
    costs_history.main(
        [
            *("--items", "20", "--kept", "30", "--repeats", "2", "--turns", "40"),
            *("--saves", "120", "--memory", "200", "--postgres", url, "--state", "1000"),
        ]
    )
    postgres_server.drop(url)
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines()[1:] if "|" in line]
    for row in (
        "fold, engine only",
        "fold, extractive",
        *(
            f"{store}.save{row}"
            for store in ("SQLiteStore", "PostgresStore")
            for row in (
                " per turn at 120 messages",
                ", every turn from 120",
                ", folding turns from 120",
            )
        ),
        *(
            (
                "a whole 40-turn session, CPU",
                "session, CPU, recall off",
                "session, CPU, the judge alone",
            )
            if importlib.util.find_spec("langchain") is not None
            else ()
        ),
        "render_anthropic of 30 kept messages",
        "memory beside 200 tool-heavy messages",
        "quiet turn after a reply, fresh 1,000 (OpenAI dicts)",
        "quiet turn after a reply, fresh 1,000 (Anthropic dicts, usage)",
        "a question in a grown 1,000-message session, recall on",
        "first turn on a new branch (a retry), 1,000",
        "first turn on a new branch (a rollback), 1,000",
        "memory a tool session adds, 20 -> 200",
        "memory a chat session adds, 20 -> 200",
    ):
        assert any(row in line for line in rows), out
    assert all(line.rstrip().endswith("x") for line in rows), out


def test_agent_work_runs_on_fixtures(capsys: pytest.CaptureFixture[str]) -> None:
    """agent_work prints its three tables: files named, no narration, every task right."""
    import agent_work  # noqa: PLC0415 - one benchmark among the scripts, loaded where it is run

    agent_work.main([str(FIXTURES), str(FIXTURES.parent / "native"), "--windows", "2000"])
    out = capsys.readouterr().out
    assert "| claude-code | 2,000 |" in out
    replayed = [line.split(" | ") for line in out.splitlines() if line.startswith("| claude-code")]
    assert all(cells[6] == "0" for cells in replayed), replayed  # no assistant narration
    assert "csv-report @" in out  # the fixture's own Claude Code compaction boundary
    rows = agent_work.fixtures((4_000,))
    assert rows
    assert all(row["right"] == row["tasks"] > 0 for row in rows), rows


def test_prefix_finds_every_request_append_only_and_no_block_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """prefix.py replays chats and agent logs: 0 requests rewritten, 0 thinking blocks refused."""
    import prefix  # noqa: PLC0415 - a bench script, imported like the others

    chats = FIXTURES.parent / "retention"
    sizes = ["--chat-sizes", "1000", "--agent-sizes", "2000", "--streams", "2"]
    prefix.main([str(chats), "--agent-data", str(FIXTURES), *sizes])
    out = capsys.readouterr().out
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ")][1:]
    named = {row[0].strip(): row for row in rows}
    assert {"MSC", "MemoryBank", "claude_code", "tau_bench", "swe_agent"} <= set(named)
    for row in rows:
        assert row[4].strip() == "0", row  # not append-only
        assert row[6].strip() == "0", row  # refused
    assert int(named["claude_code"][5].replace(",", "")) > 0  # thinking blocks were sent
    assert "first failure" not in out


def test_windows_checks_thinking_rules_on_what_an_older_model_is_sent() -> None:
    """windows.py holds a thinking session under archive errors to T1-T6 as sent with thinking kept.

    The default render leaves out thinking that a fold made stale (T7: a preserved-thinking model
    accepts that, and bench/prefix.py checks it); the older models' rules apply to the render an
    older model gets, where every thinking block stays.
    """
    import windows  # noqa: PLC0415 - a bench script, imported like the others
    from window_cases import Case  # noqa: PLC0415 - the bench's case type, beside it

    session = Case("coding", tuple(coding_session(10)), None, None)
    row = windows.Row("archive errors, thinking", 8_000, lambda _: [session], flaky=True)
    tally = windows.run_row(row, FIXTURES, usage=False)
    assert tally.compactions > 0, "the session never folded"
    assert (tally.over, tally.violations) == (0, 0), tally.example


def test_costs_turns_stages_prints_each_stage_and_restores_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """bench/costs_turns_stages.py prints every stage's share of a session, then unwraps them."""
    import costs_turns_stages  # noqa: PLC0415 - a sibling script, imported as the others

    before = [getattr(module, name) for module, name, _ in costs_turns_stages.STAGES]
    costs_turns_stages.main(["--turns", "60"])
    out = capsys.readouterr().out
    assert "a 60-turn session, recall off" in out
    for _, _, label in costs_turns_stages.STAGES:
        assert label.strip() in out
    assert "the rest" in out
    assert [getattr(module, name) for module, name, _ in costs_turns_stages.STAGES] == before


def test_question_stages_times_every_stage_within_the_question(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """bench/question_stages.py prints each stage once, none longer than the whole question."""
    import question_stages  # noqa: PLC0415 - a sibling script, imported as the others

    question_stages.main(["--messages", "300", "--questions", "3"])
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines()[1:]]
    labels = [label for _, _, label in question_stages.STAGES]
    assert [row[0].rstrip() for row in rows] == labels
    whole = float(rows[0][1])
    assert all(0 <= float(row[1]) <= whole for row in rows)
    assert not hasattr(Compactor.maybe_compact, "__wrapped__")  # the stages are restored
