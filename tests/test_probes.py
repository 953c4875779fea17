"""Probe files, recoverability, plain truncation and the replay evaluation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from progsum import Compactor, ConfigError, ConversationState, Policy, SummaryUpdate
from progsum.policy._tokens import HeuristicCounter
from progsum.replay._probes import (
    Probe,
    context_text,
    evaluate,
    load_probes,
    normalize,
    parse_probes,
    recoverable,
    replay,
    truncate,
)
from progsum.summary._request import SummaryRequest
from progsum.testing import FunctionSummarizer

Message = dict[str, Any]


def chat(turns: int) -> list[Message]:
    """A chat whose first user turn states a budget, then ``turns`` padded exchanges."""
    messages: list[Message] = [
        {"role": "user", "content": "Plan a week in Lisbon."},
        {"role": "assistant", "content": "Happy to. Any limits?"},
        {"role": "user", "content": "The budget is €2,400 and never book hostels."},
    ]
    for n in range(turns):
        messages.append({"role": "assistant", "content": f"Option {n}: " + "a museum visit. " * 12})
        messages.append({"role": "user", "content": f"Noted option {n}, go on."})
    return messages


def keeps_limits(request: SummaryRequest[Any]) -> SummaryUpdate:
    """A fake summarizer that keeps every user message mentioning a limit as a constraint."""
    limits = [
        str(message["content"])
        for _, message in request.segment
        if message["role"] == "user" and "never" in str(message["content"])
    ]
    return SummaryUpdate(add={"constraints": limits})


def compactor(fake: FunctionSummarizer | None = None) -> Compactor[Any]:
    """A compactor that fires at 400 estimated tokens and keeps 4 messages."""
    policy = Policy(
        context_window=2_000, trigger=("tokens", 400), keep=("messages", 4), safety_margin=1.0
    )
    return Compactor(policy=policy, summarizer=fake or FunctionSummarizer(keeps_limits))


def test_parse_probes_reads_the_documented_format() -> None:
    """A list of {id, at, strings} objects becomes Probe values in order."""
    probes = parse_probes(
        [{"id": "budget", "at": 2, "strings": ["€2,400"]}, {"id": "b", "at": 0, "strings": ["x"]}]
    )
    assert probes == (Probe("budget", 2, ("€2,400",)), Probe("b", 0, ("x",)))


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"id": "a"}, r"probes must be a JSON list"),
        (["a"], r"probe 0 is a str"),
        ([{"at": 1, "strings": ["x"]}], r"probe 0 has no string 'id'"),
        ([{"id": "a", "at": -1, "strings": ["x"]}], r"probe 'a': 'at'=-1 must be the index"),
        ([{"id": "a", "at": True, "strings": ["x"]}], r"'at'=True must be the index"),
        ([{"id": "a", "at": 9, "strings": ["x"]}], r"'at'=9 is past the conversation's last"),
        ([{"id": "a", "at": 1, "strings": []}], r"'strings' must be a non-empty list"),
        ([{"id": "a", "at": 1, "strings": [" "]}], r"'strings' must be a non-empty list"),
        (
            [{"id": "a", "at": 1, "strings": ["x"]}, {"id": "a", "at": 2, "strings": ["y"]}],
            r"probe id 'a' is used twice",
        ),
    ],
    ids=["not-list", "not-object", "no-id", "negative-at", "bool-at", "past-end", "no-strings",
         "blank-string", "repeated-id"],
)  # fmt: skip
def test_parse_probes_rejects_bad_probes_with_the_fix(data: object, error: str) -> None:
    """Each malformed probe file is a ConfigError that names the probe and the fix."""
    with pytest.raises(ConfigError, match=error):
        parse_probes(data, messages=5)


def test_load_probes_names_the_file(tmp_path: Path) -> None:
    """Errors reading a probe file name the file."""
    broken = tmp_path / "probes.json"
    broken.write_text("[{", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"probes\.json: is not valid JSON"):
        load_probes(broken)
    broken.write_text('[{"id": "a", "at": 0, "strings": 3}]', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"probes\.json: probe 'a': 'strings'"):
        load_probes(broken)
    with pytest.raises(ConfigError, match=r"missing\.json: no such probe file"):
        load_probes(tmp_path / "missing.json")


def test_normalize_folds_case_quotes_and_whitespace() -> None:
    """Recoverability ignores case, typographic quotes and line breaks."""
    assert normalize("  Don\u2019t  BOOK\n\u201chostels\u201d ") == 'don\'t book "hostels"'
    assert normalize("ﬁle") == "file"  # NFKC


def test_recoverable_needs_every_string() -> None:
    """A probe survives only when all its strings are present."""
    text = normalize("Budget: €2,400. Never book hostels.")
    assert recoverable(Probe("p", 0, ("€2,400", "never book HOSTELS")), text)
    assert not recoverable(Probe("p", 0, ("€2,400", "no flights before 9")), text)


def test_context_text_includes_tool_inputs_and_results() -> None:
    """Tool inputs and results count as recoverable context, beside prose and system text."""
    messages: list[Message] = [
        {"role": "user", "content": "Find flights."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "search", "input": {"to": "LIS"}}],
        },
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "TP1234"}]},
    ]  # fmt: skip
    text = context_text(messages, system=["HEADER"])
    assert text.splitlines()[0] == "HEADER"
    assert '"to": "LIS"' in text
    assert "TP1234" in text


def test_truncate_keeps_the_longest_suffix_within_budget_not_opening_on_a_result() -> None:
    """Truncation keeps recent messages up to the budget, never starting on a tool result."""
    messages: list[Message] = [
        {"role": "user", "content": "Run it."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok " * 40},
        {"role": "assistant", "content": "Done."},
    ]  # fmt: skip
    state = ConversationState(messages)
    counter = HeuristicCounter()
    sizes = [counter.count_message(m) for m in messages]
    start, tokens = truncate(state, sizes[2] + sizes[3], counter)
    assert start == 3  # message 2 fits the budget but is a tool result without its call
    assert tokens == sizes[3]
    start, tokens = truncate(state, sum(sizes), counter)
    assert (start, tokens) == (0, sum(sizes))


def test_replay_yields_each_turn_and_its_compactions() -> None:
    """Replay appends one message per step and reports the events that step added."""
    steps = list(replay(chat(12), compactor()))
    assert [step.index for step in steps] == list(range(27))
    assert all(len(step.before) == step.index + 1 for step in steps)
    fired = [step for step in steps if step.events]
    assert fired
    assert all(e.outcome == "compacted" for step in fired for e in step.events)
    assert sum(len(step.events) for step in steps) == len(steps[-1].after.events)


def test_evaluate_compares_progsum_with_truncation_at_the_same_budget() -> None:
    """A limit stated early survives in the header; truncation to the same tokens loses it."""
    messages = chat(12)
    probes = (
        Probe("budget", 2, ("never book hostels", "€2,400")),
        Probe("recent", 25, ("option 11",)),
        Probe("made-up", 0, ("Madrid",)),
    )
    result = evaluate(messages, probes, compactor())
    budget, recent, made_up = result.results
    assert (budget.stated, budget.progsum, budget.header, budget.folded) == (True,) * 4
    assert not budget.truncation
    assert (recent.progsum, recent.truncation, recent.folded, recent.header) == (
        True,
        True,
        False,
        False,
    )
    assert (made_up.stated, made_up.progsum) == (False, False)
    assert (result.survived, result.truncation_survived) == (2, 1)
    assert result.truncation_tokens <= result.tokens < result.full_tokens
    assert result.compression == result.full_tokens / result.tokens
    counter = HeuristicCounter()
    state = result.state
    assert result.tokens == state.estimate(counter)
    report = result.report()
    assert "  kept  budget  (message 3, folded; progsum: header; truncation: lost)" in report
    assert "(never stated verbatim: check the probe)" in report
    assert "probes kept: progsum 2/3 (67%), truncation to the same budget 1/3 (33%)" in report


def test_evaluate_reuses_a_final_state() -> None:
    """Given the state a replay reached, evaluate does not replay again."""
    fake = FunctionSummarizer(keeps_limits)
    messages = chat(12)
    final = [step.after for step in replay(messages, compactor(fake))][-1]
    calls = len(fake.requests)
    assert calls
    result = evaluate(messages, [Probe("budget", 2, ("€2,400",))], compactor(fake), final=final)
    assert result.state is final
    assert len(fake.requests) == calls
    with pytest.raises(ConfigError, match=r"final holds 27 messages but the conversation has 25"):
        evaluate(messages[:25], [], compactor(fake), final=final)


def test_evaluate_rejects_a_probe_past_the_end() -> None:
    """A probe stated after the last message is a ConfigError."""
    with pytest.raises(ConfigError, match=r"probe 'late': 'at'=99 is past"):
        evaluate(chat(1), [Probe("late", 99, ("x",))], compactor())


def test_shipped_trip_probes_load_against_the_example() -> None:
    """The example probe file is valid for the example conversation it belongs to."""
    root = Path(__file__).resolve().parent.parent / "examples" / "conversations"
    messages = json.loads((root / "trip-planning.json").read_text(encoding="utf-8"))
    probes = load_probes(root / "trip-planning.probes.json", messages=len(messages))
    full = normalize(context_text(messages))
    assert probes
    assert all(recoverable(p, full) for p in probes)
    assert all(
        all(normalize(s) in normalize(context_text([messages[p.at]])) for s in p.strings)
        for p in probes
    )
