"""Importers read every supported file kind into messages that ConversationState accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from progsum import Compactor, ConfigError, ConversationState, Policy, render_anthropic
from progsum.replay._importers import (
    CompactSummary,
    Imported,
    claude_code_summaries,
    read_conversations,
)
from progsum.summarizers import ExtractiveSummarizer

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"


def only(name: str) -> Imported:
    """The single conversation of a fixture file."""
    (conversation,) = read_conversations(FIXTURES / name)
    return conversation


def test_anthropic_list_is_read_as_is() -> None:
    """A JSON list of Anthropic messages comes back unchanged, detected as Anthropic."""
    conversation = only("anthropic.json")
    raw = json.loads((FIXTURES / "anthropic.json").read_text(encoding="utf-8"))
    assert conversation.messages == raw
    assert (conversation.format, conversation.source, conversation.system) == (
        "anthropic",
        "anthropic-json",
        None,
    )
    assert conversation.name == "anthropic"


def test_anthropic_request_body_gives_its_system_prompt() -> None:
    """A request body's system text blocks become Imported.system, joined by a blank line."""
    conversation = only("anthropic-request.json")
    assert conversation.system == "You are a travel agent.\n\nQuote prices in euros."
    assert [m["role"] for m in conversation.messages] == ["user", "assistant"]
    assert conversation.format == "anthropic"


def test_openai_body_takes_the_leading_system_message_off() -> None:
    """An OpenAI {'messages': [...]} body: the system message becomes system, the rest stays."""
    conversation = only("openai.json")
    assert conversation.system == "You are a coding agent."
    assert conversation.messages[0] == {"role": "user", "content": "Why does test_invoice fail?"}
    assert len(conversation.messages) == 5
    assert (conversation.format, conversation.source) == ("openai", "openai-json")


def test_openai_json_lines_one_message_per_line() -> None:
    """JSON Lines of OpenAI messages read like the JSON list, with a -jsonl source."""
    conversation = only("openai.jsonl")
    assert conversation.system == "You are a support agent."
    assert conversation.messages[-1]["content"].endswith("order 4821.")
    assert (conversation.format, conversation.source) == ("openai", "openai-jsonl")


def test_claude_code_groups_parallel_calls_and_collects_their_results() -> None:
    """Interleaved rows of one assistant message become one message, its results the next one."""
    main, _ = read_conversations(FIXTURES / "claude-code.jsonl")
    assert main.source == "claude-code"
    assert main.format == "anthropic"
    roles = [m["role"] for m in main.messages]
    assert roles == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    first_turn = main.messages[1]["content"]
    assert [b["type"] for b in first_turn] == ["thinking", "tool_use", "tool_use"]  # "\n\n" dropped
    results = main.messages[2]["content"]
    assert [b["tool_use_id"] for b in results] == ["toolu_1", "toolu_2"]
    reused = main.messages[4]["content"]  # toolu_1 again: paired by position, not by id
    assert [b["type"] for b in reused] == ["tool_result", "text"]
    assert reused[0]["tool_use_id"] == "toolu_1"
    assert "PostToolUse hook" in reused[1]["text"]
    assert main.messages[0] == {
        "role": "user",
        "content": "Fix the flaky billing test; do not touch migrations/.",
    }
    state = ConversationState(main.messages)
    assert [info.calls for info in state.infos][1] == ("toolu_1", "toolu_2")
    _, rendered = render_anthropic(state)
    assert len(rendered) == 8


def test_claude_code_skips_progress_snapshots_system_rows_and_the_compact_summary() -> None:
    """Only user and assistant content reaches the messages; Claude Code's summary does not."""
    main, _ = read_conversations(FIXTURES / "claude-code.jsonl")
    text = json.dumps(main.messages)
    assert "hook_progress" not in text
    assert "trackedFileBackups" not in text
    assert "This session is being continued" not in text
    assert "Subagent" not in text


def test_claude_code_sidechain_is_a_separate_conversation_after_the_main_one() -> None:
    """Rows with isSidechain are kept apart, named after their agent."""
    conversations = read_conversations(FIXTURES / "claude-code.jsonl")
    assert [c.name for c in conversations] == ["claude-code", "claude-code:sidechain:a1"]
    sidechain = conversations[1]
    assert sidechain.messages == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Subagent: searched for other round() calls; none found."}
            ],
        }
    ]


def test_claude_code_summaries_sit_at_the_compact_boundary() -> None:
    """Claude Code's own summary is reported with the index of the boundary in the main messages."""
    (summary,) = claude_code_summaries(FIXTURES / "claude-code.jsonl")
    assert summary == CompactSummary(
        at=5,
        text=(
            "This session is being continued from a previous conversation. Summary: the billing "
            "test failed because total() rounded to whole units; fixed to round to cents in "
            "billing/invoice.py."
        ),
        pre_tokens=52000,
        trigger="auto",
    )
    main, _ = read_conversations(FIXTURES / "claude-code.jsonl")
    assert (
        main.messages[summary.at]["content"][0]["text"] == "The fix is in place; running the tests."
    )


def test_claude_code_summaries_of_another_kind_of_file_is_an_error() -> None:
    """Asking a plain message file for Claude Code summaries says what was expected."""
    with pytest.raises(ConfigError, match=r"openai\.jsonl: not a Claude Code session log"):
        claude_code_summaries(FIXTURES / "openai.jsonl")


def test_tau_bench_records_are_one_conversation_each() -> None:
    """A tau-bench record list gives one OpenAI conversation per record, named task.trial."""
    first, second = read_conversations(FIXTURES / "tau-bench.json")
    assert (first.name, second.name) == ("tau-bench#7.0", "tau-bench#7.1")
    assert first.system == "# Airline Agent Policy"
    assert (first.format, first.source) == ("openai", "tau-bench")
    assert len(first.messages) == 4


def test_swe_agent_history_keeps_provider_keys_and_splits_tool_call_ids() -> None:
    """A .traj history loses SWE-agent's extra keys; tool_call_ids become tool_call_id."""
    conversation = only("swe-agent.traj")
    assert conversation.source == "swe-agent"
    assert conversation.system == "SETTING: you are an autonomous programmer."
    tool = conversation.messages[2]
    assert tool == {
        "role": "tool",
        "content": "src/marshmallow/fields.py",
        "tool_call_id": "call_x",
    }
    assert all("thought" not in m and "agent" not in m for m in conversation.messages)
    ConversationState(conversation.messages)  # the reused id call_x pairs by position


def test_string_only_messages_default_to_anthropic(tmp_path: Path) -> None:
    """Messages that fit both providers are read as Anthropic."""
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    (conversation,) = read_conversations(path)
    assert conversation.format == "anthropic"


@pytest.mark.parametrize(
    ("text", "suffix", "error"),
    [
        ("", ".json", r"bad\.json: is empty; expected an Anthropic or OpenAI message list"),
        ("[{", ".json", r"bad\.json: is not valid JSON \(Expecting property name"),
        ('{"role": "user"}\n{oops', ".jsonl", r"bad\.jsonl: line 2 is not valid JSON"),
        ('{"rows": 1}', ".json", r"bad\.json: is JSON of no known kind; expected"),
        ('{"a": 1}\n', ".jsonl", r"bad\.jsonl: JSON Lines rows are neither messages"),
        (
            '[{"role": "tool", "tool_call_id": "c", "content": "42"}]',
            ".json",
            r"bad\.json: message 0: is a tool result for call 'c', but it is the first message",
        ),
        ('{"messages": [3]}', ".json", r"bad\.json: message 0: is not a message dict"),
    ],
    ids=[
        "empty",
        "broken-json",
        "broken-line",
        "unknown-json",
        "unknown-lines",
        "orphan",
        "nondict",
    ],
)
def test_bad_files_raise_config_errors_naming_the_file(
    tmp_path: Path, text: str, suffix: str, error: str
) -> None:
    """A bad file is a ConfigError naming the file and what was expected, never a raw error."""
    path = tmp_path / f"bad{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=error):
        read_conversations(path)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """A path that does not exist says so."""
    with pytest.raises(ConfigError, match=r"nope\.json: no such file"):
        read_conversations(tmp_path / "nope.json")


def test_anthropic_json_lines_and_openai_developer_prompt(tmp_path: Path) -> None:
    """Anthropic messages one per line read as anthropic-jsonl; a developer message is a system."""
    lines = tmp_path / "chat.jsonl"
    rows = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "u"}}]},
    ]
    lines.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    (conversation,) = read_conversations(lines)
    assert (conversation.format, conversation.source) == ("anthropic", "anthropic-jsonl")
    assert conversation.messages == rows
    body = tmp_path / "dev.json"
    developer = [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    body.write_text(json.dumps(developer), encoding="utf-8")
    (conversation,) = read_conversations(body)
    assert (conversation.system, conversation.format) == ("Be brief.", "openai")


def test_a_subagent_log_alone_is_its_sidechain(tmp_path: Path) -> None:
    """A subagent log (sidechain rows only) gives its sidechain; unknown row kinds are skipped."""
    side = {"isSidechain": True, "agentId": "a9"}
    rows = [
        {"type": "user", **side, "message": {"role": "user", "content": "Find the hook docs."}},
        {"type": "attachment", **side, "payload": {}},
        {
            "type": "assistant",
            **side,
            "message": {"id": "m1", "role": "assistant", "content": "Found them."},
        },
    ]
    path = tmp_path / "agent-a9.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    (sidechain,) = read_conversations(path)
    assert sidechain.name == "agent-a9:sidechain:a9"
    assert [m["role"] for m in sidechain.messages] == ["user", "assistant"]
    assert claude_code_summaries(path) == []


def _skill_session(path: Path) -> Path:
    """A Claude Code log in which the person runs a skill command mid-session.

    The harness writes the skill's document into the same user turn, in an ``isMeta`` row.
    """
    skill = (
        "Draft release notes.\n\n> **SCOPE**: This skill ONLY writes notes.\n"
        "Never edit CHANGELOG.md directly. Always ask before tagging a release.\n"
        "`title`: Module/function name"
    )
    rows: list[dict[str, object]] = [
        {"type": "user", "message": {"role": "user", "content": "Tidy the repository."}},
        {
            "type": "assistant",
            "message": {"id": "a0", "role": "assistant", "content": "Tidying. " * 40},
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": "<command-name>/release-notes</command-name> for v2.1",
            },
        },
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": skill}},
    ]
    for n in range(1, 30):
        rows.append(
            {
                "type": "assistant",
                "message": {"id": f"a{n}", "role": "assistant", "content": f"Step {n}. " * 40},
            }
        )
        rows.append({"type": "user", "message": {"role": "user", "content": f"Next {n}."}})
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    return path


def test_a_skill_document_the_harness_loads_is_not_the_users_words(tmp_path: Path) -> None:
    """The ``isMeta`` run of a typed turn is its own message, authored ``tool``.

    Its lines never bind and never become the user's facts, however imperative they read.
    """
    (main,) = read_conversations(_skill_session(tmp_path / "skill.jsonl"))
    at = next(i for i, m in enumerate(main.messages) if "SCOPE" in json.dumps(m))
    authors = main.authors
    assert authors is not None
    assert authors[at] == "tool"
    assert authors[at - 1] == "user"  # the command the person typed stays theirs
    assert "/release-notes" in json.dumps(main.messages[at - 1])
    state = ConversationState(main.messages, authors=main.authors)
    compactor = Compactor(policy=Policy(context_window=2_000), summarizer=ExtractiveSummarizer())
    for _ in range(3):
        state = compactor.compact(state, force=True)
    assert state.cutoff > at  # the skill's turn was folded
    header = state.header
    for line in ("CHANGELOG", "tagging", "SCOPE", "Module/function", "**"):
        assert line not in header, header
