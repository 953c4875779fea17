"""Replay evaluation: which stated facts are still recoverable after compaction, beside truncation.

A **probe file** is JSON: a list of probes, each
``{"id": "budget", "at": 3, "strings": ["$3,000", "never book flights before 9am"]}``, where
``at`` is the index (from 0) of the message that states the fact, in the conversation as imported
(system prompt excluded), and ``strings`` are what must still be recoverable at the end. Reports
number messages from 1, like the summary header: the probe above reads "message 4".

**Recoverable** means: each of the probe's strings, normalized, is a substring of the normalized
text of the final context. Normalizing is Unicode NFKC, typographic quotes and apostrophes turned
into ASCII ones, case folding, and every run of whitespace collapsed into one space (so a line
break inside the rendered header does not matter). The context text is every text the provider
would be sent: the summary header, and each message's text, thinking, tool inputs (as JSON) and
tool results, in order, one per line. A probe survives when *all* its strings are recoverable.

`evaluate` replays a conversation turn by turn through ``Compactor.maybe_compact`` (as an agent
would), then checks every probe against progsum's final context and against **plain truncation
at the same budget**: the most recent messages whose estimated tokens sum to at most the tokens of
progsum's final context (header included), starting at a message that is not a tool result. It
also checks the whole conversation, so a probe whose strings were never stated is flagged.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progsum.engine._compactor import Compactor
from progsum.errors import ConfigError
from progsum.judge._provenance import Author
from progsum.messages._formats import Message, is_safe_cut, parts
from progsum.policy._tokens import TokenCounter
from progsum.render._view import visible
from progsum.state._conversation import ConversationState
from progsum.state._events import CompactionEvent

__all__ = [
    "Evaluation",
    "Probe",
    "ProbeResult",
    "Step",
    "context_text",
    "evaluate",
    "load_probes",
    "normalize",
    "parse_probes",
    "recoverable",
    "replay",
    "truncate",
]

_QUOTES = str.maketrans(
    dict.fromkeys("\u2018\u2019\u201a", "'") | dict.fromkeys("\u201c\u201d\u201e", '"')
)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Probe:
    """A fact stated at message ``at`` whose ``strings`` must stay recoverable."""

    id: str
    at: int
    strings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """How one probe fared.

    Attributes:
        probe: The probe.
        stated: Its strings are recoverable from the whole conversation (else the probe is bad).
        progsum: Recoverable from progsum's final context.
        header: Recoverable from the summary header alone.
        truncation: Recoverable from the truncation baseline.
        folded: Its message is no longer verbatim in progsum's final context.
        full_budget: Recoverable from plain truncation of the conversation to the whole budget
            `evaluate` was given (False without one).
    """

    probe: Probe
    stated: bool
    progsum: bool
    header: bool
    truncation: bool
    folded: bool
    full_budget: bool = False


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The outcome of one replay: per-probe results and the sizes of the three contexts.

    Attributes:
        results: One per probe, in file order.
        state: progsum's final state.
        full_tokens: Estimated tokens of the whole conversation.
        tokens: Estimated tokens of progsum's final context (header, kept head, tail).
        truncation_tokens: Estimated tokens of the truncation baseline (at most ``tokens``).
        truncation_start: Index of the first message truncation keeps.
    """

    results: tuple[ProbeResult, ...]
    state: ConversationState[Any]
    full_tokens: int
    tokens: int
    truncation_tokens: int
    truncation_start: int

    @property
    def survived(self) -> int:
        """Probes recoverable from progsum's context."""
        return sum(r.progsum for r in self.results)

    @property
    def truncation_survived(self) -> int:
        """Probes recoverable from the truncation baseline."""
        return sum(r.truncation for r in self.results)

    @property
    def compression(self) -> float:
        """Whole conversation tokens / progsum's final context tokens."""
        return self.full_tokens / self.tokens if self.tokens else 1.0

    def report(self) -> str:
        """A plain-text report: one line per probe, then the totals beside truncation."""
        lines = []
        for r in self.results:
            mark = "kept" if r.progsum else "LOST"
            where = "header" if r.header else ("messages" if r.progsum else "-")
            trunc = "kept" if r.truncation else "lost"
            note = "" if r.stated else "  (never stated verbatim: check the probe)"
            folded = "folded" if r.folded else "kept verbatim"
            lines.append(
                f"  {mark:4}  {r.probe.id}  (message {r.probe.at + 1}, {folded}; progsum: {where}; "
                f"truncation: {trunc}){note}"
            )
        n = len(self.results)
        lines.append(
            f"probes kept: progsum {self.survived}/{n} ({_share(self.survived, n)}), "
            f"truncation to the same budget {self.truncation_survived}/{n} "
            f"({_share(self.truncation_survived, n)})"
        )
        lines.append(
            f"context: {self.full_tokens:,} tokens in full, {self.tokens:,} after progsum "
            f"({self.compression:.1f}x smaller), truncation kept messages "
            f"{self.truncation_start + 1}-{len(self.state)} ({self.truncation_tokens:,} tokens)"
        )
        return "\n".join(lines)


def _share(count: int, total: int) -> str:
    return f"{count / total:.0%}" if total else "n/a"


# -- probe files -----------------------------------------------------------------------------------


def parse_probes(data: object, *, messages: int | None = None) -> tuple[Probe, ...]:
    """Probes from decoded JSON (see the module docstring for the format).

    Args:
        data: A list of ``{"id", "at", "strings"}`` objects.
        messages: The conversation's length, to check every ``at`` against.

    Raises:
        ConfigError: the data is not a list of probes, ids repeat, or an ``at`` is out of range.
    """
    example = '[{"id": "budget", "at": 3, "strings": ["$3,000"]}]'
    if not isinstance(data, list):
        raise ConfigError(f"probes must be a JSON list such as {example}")
    probes: list[Probe] = []
    seen: set[str] = set()
    for n, item in enumerate(data):
        if not isinstance(item, Mapping):
            raise ConfigError(f"probe {n} is a {type(item).__name__}; write it like {example}")
        probe_id, at, strings = item.get("id"), item.get("at"), item.get("strings")
        if not isinstance(probe_id, str) or not probe_id:
            raise ConfigError(f"probe {n} has no string 'id'; give each probe a unique name")
        if probe_id in seen:
            raise ConfigError(f"probe id {probe_id!r} is used twice; give each probe its own id")
        if not isinstance(at, int) or isinstance(at, bool) or at < 0:
            raise ConfigError(
                f"probe {probe_id!r}: 'at'={at!r} must be the index (0 or more) of the message "
                "that states the fact"
            )
        if messages is not None and at >= messages:
            raise ConfigError(
                f"probe {probe_id!r}: 'at'={at} is past the conversation's last message "
                f"({messages - 1}); count messages from 0, without the system prompt"
            )
        if (
            not isinstance(strings, list)
            or not strings
            or not all(isinstance(s, str) and s.strip() for s in strings)
        ):
            raise ConfigError(
                f"probe {probe_id!r}: 'strings' must be a non-empty list of non-blank strings"
            )
        seen.add(probe_id)
        probes.append(Probe(probe_id, at, tuple(strings)))
    return tuple(probes)


def load_probes(path: str | os.PathLike[str], *, messages: int | None = None) -> tuple[Probe, ...]:
    """Read a probe file (see `parse_probes`).

    Raises:
        ConfigError: the file cannot be read, is not JSON, or holds no valid probe list; the
            message names the file.
    """
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such probe file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{file}: cannot be read ({error})") from error
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{file}: is not valid JSON ({error.msg} at line {error.lineno}); a probe file is a "
            "JSON list of probes"
        ) from error
    try:
        return parse_probes(data, messages=messages)
    except ConfigError as error:
        raise ConfigError(f"{file}: {error}") from error


# -- recoverability --------------------------------------------------------------------------------


def normalize(text: str) -> str:
    """NFKC, ASCII quotes, case-folded, whitespace runs collapsed to one space, stripped."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return _SPACE.sub(" ", text).strip()


def context_text(messages: Iterable[Message], *, system: Iterable[str] = ()) -> str:
    """Every text a provider would be sent, one per line: system texts, then message parts."""
    texts = list(system)
    for message in messages:
        texts.extend(text for _, text in parts(message) if text)
    return "\n".join(texts)


def recoverable(probe: Probe, text: str) -> bool:
    """Whether every string of ``probe`` is a substring of ``text``, both normalized.

    ``text`` should already be normalized (`normalize`), since a context is checked against
    many probes.
    """
    return all(normalize(s) in text for s in probe.strings)


# -- replay ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One turn of a replay: the state with the new message appended, and after ``maybe_compact``.

    Attributes:
        index: Log index of the message appended.
        before: The state with the message appended, before ``maybe_compact``.
        after: The state ``maybe_compact`` returned (``before`` itself when nothing was due).
    """

    index: int
    before: ConversationState[Any]
    after: ConversationState[Any]

    @property
    def events(self) -> tuple[CompactionEvent, ...]:
        """The compaction events this turn added (compacted or stalled)."""
        return self.after.events[len(self.before.events) :]


def replay(
    messages: Iterable[Message],
    compactor: Compactor[Any],
    *,
    authors: Sequence[Author | None] | None = None,
) -> Iterator[Step]:
    """Append the messages one at a time, calling ``maybe_compact`` after each, as an agent would.

    ``authors`` gives each message's author class where known (`Imported.authors`).

    Raises:
        MessageFormatError: a message is malformed.
        SummarizerError: the summarizer failed (the fallback chain absorbs provider failures).
    """
    state: ConversationState[Any] = ConversationState()
    for index, message in enumerate(messages):
        before = state.append(message, author=authors[index] if authors else None)
        state = compactor.maybe_compact(before)
        yield Step(index, before, state)


def truncate(state: ConversationState[Any], budget: int, counter: TokenCounter) -> tuple[int, int]:
    """Plain truncation of the whole log to ``budget`` tokens: ``(start, tokens)``.

    Keeps ``log[start:]``, the longest suffix whose estimates sum to at most ``budget`` and that
    does not open with a tool result (its call would be missing).
    """
    totals = state.running_totals(counter)
    end = len(state)
    start = end
    for j in range(end - 1, -1, -1):
        if totals[end] - totals[j] > budget:
            break
        if is_safe_cut(state.infos, j):
            start = j
    return start, totals[end] - totals[start]


def evaluate(
    messages: Sequence[Message],
    probes: Sequence[Probe],
    compactor: Compactor[Any],
    *,
    final: ConversationState[Any] | None = None,
    authors: Sequence[Author | None] | None = None,
    budget: int | None = None,
) -> Evaluation:
    """Replay ``messages`` through ``compactor`` and check ``probes`` against both contexts.

    Args:
        messages: The conversation, without its system prompt (probe ``at`` indexes it).
        probes: What must stay recoverable.
        compactor: The compactor to replay through.
        final: The state a replay already reached (skips the replay, e.g. after the CLI showed
            progress); it must hold exactly ``messages``.
        authors: Each message's author class where known (see `replay`).
        budget: Tokens of a second truncation baseline, the whole budget rather than progsum's
            size (`ProbeResult.full_budget`).

    Raises:
        ConfigError: a probe's ``at`` is past the end of the conversation, or ``final`` does not
            hold the conversation.
    """
    for probe in probes:
        if probe.at >= len(messages):
            raise ConfigError(
                f"probe {probe.id!r}: 'at'={probe.at} is past the conversation's last message "
                f"({len(messages) - 1})"
            )
    if final is not None and len(final) != len(messages):
        raise ConfigError(
            f"final holds {len(final)} messages but the conversation has {len(messages)}; pass "
            "the state the replay of these messages reached, or no final state"
        )
    state = final
    if state is None:
        state = ConversationState()
        for step in replay(messages, compactor, authors=authors):
            state = step.after
    counter = compactor.counter
    header = state.header
    kept = visible(state)  # the effective messages, old tool data cleared as the model sees them
    tokens = state.estimate(counter)
    start, truncation_tokens = truncate(state, tokens, counter)
    header_text = normalize(header)
    ours = normalize(context_text(kept, system=[header]))
    theirs = normalize(context_text(state.log[start:]))
    whole = ""
    if budget is not None:
        whole = normalize(context_text(state.log[truncate(state, budget, counter)[0] :]))
    full = normalize(context_text(state.log))
    verbatim = set(state.kept)
    results = tuple(
        ProbeResult(
            probe=p,
            stated=recoverable(p, full),
            progsum=recoverable(p, ours),
            header=recoverable(p, header_text),
            truncation=recoverable(p, theirs),
            folded=p.at not in verbatim,
            full_budget=budget is not None and recoverable(p, whole),
        )
        for p in probes
    )
    full_tokens = state.running_totals(counter)[len(state)]
    return Evaluation(results, state, full_tokens, tokens, truncation_tokens, start)
