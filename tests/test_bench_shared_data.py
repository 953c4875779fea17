"""bench/shared_data.py, the benchmarks' one loader of the shared data sets, on small fixtures."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import shared_data

FIXTURES = Path(__file__).parent / "fixtures"
AGENTS = FIXTURES / "bench"
CHATS = FIXTURES / "retention"


def test_a_missing_set_stops_with_the_path_and_what_to_pass(tmp_path: Path) -> None:
    """A set asked for by name that is not there exits with one message: the path and the fix."""
    with pytest.raises(SystemExit) as stopped:
        shared_data.agent_files(tmp_path, "tau_bench")
    message = str(stopped.value.code)
    assert str(tmp_path / "tau_bench") in message
    assert "pass the shared data folder" in message
    assert "tau_bench/" in message


def test_a_missing_chat_set_names_the_file_looked_for(tmp_path: Path) -> None:
    """A chat set's message names the file it is read from under the folder given."""
    with pytest.raises(SystemExit, match=r"msc/session_3/test\.txt"):
        shared_data.chats(tmp_path, "msc")


def test_an_unknown_set_name_lists_the_sets() -> None:
    """A name that is no set of the data folder is a ValueError listing the ones there are."""
    with pytest.raises(ValueError, match="claude_code, tau_bench, swe_agent, msc"):
        shared_data.path(AGENTS, "locomo")


def test_present_skips_missing_sets_and_stops_when_none_is_there(tmp_path: Path) -> None:
    """`present` keeps the order given, skips what is missing, and stops only when all are."""
    assert shared_data.present(CHATS, ["claude_code", "memorybank", "msc"]) == [
        "memorybank",
        "msc",
    ]
    assert shared_data.present(tmp_path, ["msc"], some=False) == []
    with pytest.raises(SystemExit, match="no msc/, memorybank/ data"):
        shared_data.present(tmp_path, ["msc", "memorybank"])


def test_agent_logs_read_every_file_of_a_set() -> None:
    """Each agent set's files are read into conversations, one `Log` per file, sorted."""
    logs = {name: list(shared_data.agent_logs(AGENTS, name)) for name in shared_data.AGENT_SETS}
    assert [log.file.name for log in logs["claude_code"]] == ["invoice-fix.jsonl"]
    assert [log.file.name for log in logs["swe_agent"]] == ["dates-fix.traj"]
    assert all(log.conversations for found in logs.values() for log in found)
    names = [name for name, _ in shared_data.agent_conversations(AGENTS)]
    assert names == sorted(names, key=list(shared_data.AGENT_SETS).index)


def test_claude_code_sessions_leave_out_subagent_runs(tmp_path: Path) -> None:
    """``sessions=True`` gives the top folder's session logs only, not ``subagents/`` runs."""
    session = (AGENTS / "claude_code" / "invoice-fix.jsonl").read_text(encoding="utf-8")
    runs = tmp_path / "claude_code" / "s1" / "subagents"
    runs.mkdir(parents=True)
    (tmp_path / "claude_code" / "s1.jsonl").write_text(session, encoding="utf-8")
    (runs / "agent-a1.jsonl").write_text(session, encoding="utf-8")
    every = shared_data.agent_files(tmp_path, "claude_code")
    sessions = shared_data.agent_files(tmp_path, "claude_code", sessions=True)
    assert sorted(p.name for p in every) == ["agent-a1.jsonl", "s1.jsonl"]
    assert [p.name for p in sessions] == ["s1.jsonl"]


def test_msc_reads_three_sessions_with_the_speakers_named() -> None:
    """MSC: sessions 1-3 in order, user/assistant alternating, "Speaker 1"/"Speaker 2" named."""
    record = next(shared_data.msc_records(CHATS))
    first = record["previous_dialogs"][0]["dialog"][0]["text"]
    chat = shared_data.chats(CHATS, "msc")[0]
    assert chat.name == "msc-000"
    assert chat.messages[0] == {"role": "user", "content": first, "name": "Speaker 1"}
    assert chat.messages[1]["name"] == "Speaker 2"
    turns = sum(len(d["dialog"]) for d in record["previous_dialogs"]) + len(record["dialog"])
    assert len(chat.messages) == turns
    assert "name" not in shared_data.msc_messages(record, named=False)[0]


def test_msc_is_found_from_the_folder_its_msc_folder_or_the_file() -> None:
    """The MSC file is found whichever of the three places is given."""
    file = CHATS / "msc" / "session_3" / "test.txt"
    assert {shared_data.msc_file(p) for p in (CHATS, CHATS / "msc", file)} == {file}
    assert len(list(shared_data.msc_records(CHATS, limit=2))) == 2


def test_memorybank_keeps_the_key_names_the_user_and_dates_each_message(tmp_path: Path) -> None:
    """MemoryBank: the key as written names the chat; questions match the key without spaces."""
    bank = {" Ava ": {"name": "Ava", "history": {"2023-05-02": [{"query": "q", "response": "r"}]}}}
    folder = tmp_path / "memorybank"
    folder.mkdir()
    (folder / "memory_bank_en.json").write_text(json.dumps(bank), encoding="utf-8")
    (folder / "probing_questions_en.jsonl").write_text('{"Ava": ["What?"]}\n', encoding="utf-8")
    (history,) = shared_data.memorybank(tmp_path)
    assert (history.key, history.user, history.questions) == (" Ava ", "Ava", ("What?",))
    assert history.messages == (
        {"role": "user", "content": "q", "name": "Ava", "timestamp": "2023-05-02"},
        {"role": "assistant", "content": "r", "name": "AI", "timestamp": "2023-05-02"},
    )
    assert [c.name for c in shared_data.chats(tmp_path, "memorybank")] == ["memorybank- Ava "]
