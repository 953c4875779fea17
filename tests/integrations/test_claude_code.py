"""The Claude Code hook: PreCompact folds the live transcript, SessionStart(compact) hands it back.

Input and output follow the Claude Code hooks reference: the event as JSON on stdin
(``session_id``, ``transcript_path``, ``hook_event_name``, ``trigger`` or ``source``), and for
``SessionStart`` a ``hookSpecificOutput`` with ``additionalContext`` on stdout.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from progsum.integrations.claude_code import main, state_path

RULE = "Do not touch migrations/ under any circumstances."


def rows(turns: range) -> list[dict[str, Any]]:
    """Claude Code session rows: a user rule, then tool turns (one row per content block)."""
    out: list[dict[str, Any]] = []
    for n in turns:
        text = f"Step {n}: fix the billing test." + (f" {RULE}" if n == 1 else "")
        out.append({"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": text}})
        block = {
            "type": "tool_use",
            "id": f"toolu_{n}",
            "name": "Read",
            "input": {"file_path": f"src/billing_{n}.py"},
        }
        out.append(
            {
                "type": "assistant",
                "uuid": f"a{n}",
                "message": {"id": f"msg_{n}", "role": "assistant", "content": [block]},
            }
        )
        result = {
            "type": "tool_result",
            "tool_use_id": f"toolu_{n}",
            "content": "def total(): ...\n" * 40,
        }
        out.append(
            {"type": "user", "uuid": f"r{n}", "message": {"role": "user", "content": [result]}}
        )
        answer = {"type": "text", "text": f"Read billing_{n}.py; the rounding is in total()."}
        out.append(
            {
                "type": "assistant",
                "uuid": f"b{n}",
                "message": {"id": f"msg_{n}b", "role": "assistant", "content": [answer]},
            }
        )
    return out


def write(path: Path, data: list[dict[str, Any]], *, torn: bool) -> None:
    """Write rows as JSONL; ``torn`` leaves a half-written last line, as a live transcript may."""
    text = "".join(json.dumps(r) + "\n" for r in data)
    if torn:
        text += '{"type": "assistant", "message": {"id": "msg_x", "role": "assi'
    path.write_text(text, encoding="utf-8")


def run(payload: dict[str, Any]) -> str:
    """Run the hook command in-process; its stdout."""
    out = io.StringIO()
    assert (
        main(["--summarizer", "extractive"], stdin=io.StringIO(json.dumps(payload)), stdout=out)
        == 0
    )
    return out.getvalue()


def test_precompact_then_session_start_hands_back_the_binding_rule(tmp_path: Path) -> None:
    """After PreCompact on a torn live transcript, SessionStart(compact) returns the header."""
    transcript = tmp_path / "s1.jsonl"
    write(transcript, rows(range(12)), torn=True)
    base = {"session_id": "s1", "transcript_path": str(transcript)}
    assert run({**base, "hook_event_name": "PreCompact", "trigger": "auto"}) == ""
    assert state_path(transcript).exists()
    output = json.loads(run({**base, "hook_event_name": "SessionStart", "source": "compact"}))
    context = output["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert RULE in context["additionalContext"]
    assert context["additionalContext"].startswith("# Earlier conversation (compressed)")


def test_second_compaction_resumes_the_saved_state(tmp_path: Path) -> None:
    """A later PreCompact adds to the saved summary: the rule stays and the events accumulate."""
    transcript = tmp_path / "s2.jsonl"
    write(transcript, rows(range(10)), torn=False)
    base = {"session_id": "s2", "transcript_path": str(transcript)}
    run({**base, "hook_event_name": "PreCompact", "trigger": "auto"})
    first = json.loads(state_path(transcript).read_text(encoding="utf-8"))
    write(transcript, rows(range(20)), torn=True)
    run({**base, "hook_event_name": "PreCompact", "trigger": "manual"})
    second = json.loads(state_path(transcript).read_text(encoding="utf-8"))
    assert len(second["state"]["events"]) == len(first["state"]["events"]) + 1
    assert second["state"]["cutoff"] > first["state"]["cutoff"]
    assert RULE in second["header"]


def test_other_events_and_sources_print_nothing(tmp_path: Path) -> None:
    """SessionStart for a new session (source startup) adds no context."""
    transcript = tmp_path / "s3.jsonl"
    write(transcript, rows(range(3)), torn=False)
    payload = {
        "transcript_path": str(transcript),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    assert run(payload) == ""


def test_damaged_transcript_never_blocks_claude_code(tmp_path: Path) -> None:
    """A broken line in the middle is reported on stderr, and the hook still exits 0."""
    transcript = tmp_path / "s4.jsonl"
    transcript.write_text('{"type": "user"\n{"type": "user"}\n', encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "progsum.integrations.claude_code",
        "--summarizer",
        "extractive",
    ]
    payload = json.dumps({"transcript_path": str(transcript), "hook_event_name": "PreCompact"})
    done = subprocess.run(command, input=payload, capture_output=True, text=True, check=False)  # noqa: S603 - our own module
    assert done.returncode == 0
    assert done.stdout == ""
    assert "line 1 is not JSON" in done.stderr


FRIDAY = "Never deploy on Friday."


def branch(
    shared: int, turns: int, *, tag: str, rule_at: int | None = None
) -> list[dict[str, Any]]:
    """A session whose first ``shared`` turns are `rows`' and whose later turns say ``tag``."""
    out = rows(range(shared))
    for n in range(shared, turns):
        text = f"Branch {tag}, step {n}." + (f" {FRIDAY}" if n == rule_at else "")
        out.append(
            {"type": "user", "uuid": f"{tag}u{n}", "message": {"role": "user", "content": text}}
        )
        answer = {"type": "text", "text": f"Done with {tag} step {n}. " * 8}
        out.append(
            {
                "type": "assistant",
                "uuid": f"{tag}a{n}",
                "message": {"id": f"{tag}m{n}", "role": "assistant", "content": [answer]},
            }
        )
    return out


def precompact(transcript: Path, session: str) -> str:
    """Run PreCompact in a subprocess; its stderr (the exit status must be 0, stdout empty)."""
    payload = {
        "session_id": session,
        "transcript_path": str(transcript),
        "hook_event_name": "PreCompact",
        "trigger": "auto",
    }
    return _subprocess(json.dumps(payload))


def _subprocess(stdin: str) -> str:
    command = [
        sys.executable,
        "-m",
        "progsum.integrations.claude_code",
        "--summarizer",
        "extractive",
    ]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)  # noqa: S603 - our own module
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    return done.stderr


def header_of(transcript: Path) -> str:
    """The header saved next to ``transcript``."""
    return str(json.loads(state_path(transcript).read_text(encoding="utf-8"))["header"])


def test_a_state_from_another_session_is_not_applied(tmp_path: Path) -> None:
    """A saved state whose session is not this one starts a fresh summary, said on stderr."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write(first, branch(0, 30, tag="A", rule_at=3), torn=False)
    precompact(first, "session-a")
    assert FRIDAY in header_of(first)
    write(second, branch(0, 40, tag="B"), torn=False)
    state_path(first).replace(state_path(second))  # the other session's file, beside this one
    note = precompact(second, "session-b")
    assert FRIDAY not in header_of(second)
    assert "session-a" in note
    assert len(note.strip().splitlines()) == 1


def test_a_rewound_branch_does_not_inherit_the_other_branch_rules(tmp_path: Path) -> None:
    """Branch A's rule, folded after the shared start, does not bind in branch B."""
    transcript = tmp_path / "s.jsonl"
    write(transcript, branch(5, 40, tag="A", rule_at=8), torn=False)
    precompact(transcript, "s")
    assert FRIDAY in header_of(transcript)
    write(transcript, branch(5, 40, tag="B"), torn=False)  # rewound to turn 5, then new turns
    note = precompact(transcript, "s")
    assert FRIDAY not in header_of(transcript)
    assert RULE in header_of(transcript)  # from the shared start: still this branch's rule
    assert "diverges" in note


def test_a_shorter_transcript_keeps_the_summary_it_shares(tmp_path: Path) -> None:
    """A transcript rewound to before its saved length keeps the summary of what it shares."""
    transcript = tmp_path / "s.jsonl"
    write(transcript, rows(range(20)), torn=False)
    precompact(transcript, "s")
    first = json.loads(state_path(transcript).read_text(encoding="utf-8"))["state"]
    write(transcript, rows(range(20))[:-2], torn=False)  # the last turn's result and answer gone
    assert first["cutoff"] < 78 < first["length"]
    note = precompact(transcript, "s")
    second = json.loads(state_path(transcript).read_text(encoding="utf-8"))["state"]
    assert second["events"][: len(first["events"])] == first["events"]  # the same summary
    assert RULE in header_of(transcript)
    assert "shorter" in note or "diverges" in note


def test_session_start_never_prints_another_sessions_header(tmp_path: Path) -> None:
    """SessionStart beside another session's saved state prints this session's own header."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write(first, branch(0, 30, tag="A", rule_at=3), torn=False)
    precompact(first, "session-a")
    write(second, branch(0, 30, tag="B"), torn=False)
    state_path(first).replace(state_path(second))
    payload = {
        "session_id": "session-b",
        "transcript_path": str(second),
        "hook_event_name": "SessionStart",
        "source": "compact",
    }
    printed = run(payload)
    assert FRIDAY not in printed


@pytest.mark.parametrize(
    "stdin", ["null", "[1, 2, 3]", '"PreCompact"', "42", "", "{", '{"transcript_path": 7}']
)
def test_any_input_exits_zero_with_one_line(stdin: str) -> None:
    """Whatever arrives on stdin, the hook exits 0 with at most one line on stderr."""
    note = _subprocess(stdin)
    assert len(note.strip().splitlines()) <= 1


def test_transcript_rows_that_are_not_objects_never_crash(tmp_path: Path) -> None:
    """Rows that are JSON but not objects are skipped, and the hook says so in one line."""
    transcript = tmp_path / "s.jsonl"
    good = "".join(json.dumps(r) + "\n" for r in rows(range(12)))
    transcript.write_text('[1]\nnull\n"x"\n' + good, encoding="utf-8")
    note = precompact(transcript, "s")
    assert RULE in header_of(transcript)
    assert len(note.strip().splitlines()) == 1


SKILL_RULE = "Always indent Python with tabs and never write docstrings."
"""A rule a skill document states: Claude Code loads the skill as an ``isMeta`` user row."""
USER_RULE = "Never push to the main branch."


def binding_sections(header: str) -> str:
    """The text of the header's binding sections (``## ... (binding)``)."""
    sections = header.split("\n## ")
    return "\n".join(s for s in sections[1:] if s.split("\n", 1)[0].endswith("(binding)"))


def test_the_hook_binds_the_users_rule_not_the_skill_harness_loaded(tmp_path: Path) -> None:
    """A skill Claude Code loaded (an isMeta row) never binds; the person's own rule does.

    The importer marks the skill's run of the user turn as harness text (author ``tool``); the
    hook must hand that to the engine, as ``progsum replay`` does on the same file.
    """
    skill = {
        "type": "user",
        "uuid": "skill",
        "isMeta": True,
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "Base directory for this skill: /home/dev/.claude/skills/style\n\n"
                    f"# Style\n\n{SKILL_RULE}",
                }
            ],
        },
    }
    typed = {
        "type": "user",
        "uuid": "ask",
        "message": {"role": "user", "content": f"Now the invoices. {USER_RULE}"},
    }
    transcript = tmp_path / "skill.jsonl"
    first = [*rows(range(3)), typed, skill, *rows(range(3, 12))]
    write(transcript, first, torn=False)
    precompact(transcript, "skills")
    binding = binding_sections(header_of(transcript))
    assert USER_RULE in binding
    assert "tabs" not in binding
    assert "docstrings" not in binding
    again = {**skill, "uuid": "skill-2"}  # loaded again later; the hook resumes its state
    write(transcript, [*first, again, *rows(range(12, 24))], torn=False)
    precompact(transcript, "skills")
    binding = binding_sections(header_of(transcript))
    assert USER_RULE in binding
    assert "tabs" not in binding
