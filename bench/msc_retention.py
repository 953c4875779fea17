"""How many session-1 facts survive progressive compaction, beside plain truncation (MSC).

    python bench/msc_retention.py /work/shared/data            # all 501 conversations
    python bench/msc_retention.py DATA_DIR --limit 50 --budget 400 --keep 4

Data: the Multi-Session Chat session-3 test split (``DATA_DIR/msc/session_3/test.txt``; DATA_DIR
may also be the ``msc`` folder or the file itself). It is read in place, never copied.

The chat. Each conversation is sessions 1 and 2 (``previous_dialogs``) followed by session 3
(``dialog``), one message per utterance, in order. Every session opens with Speaker 1 and the
speakers alternate, so within each session utterance 0, 2, 4, ... is Speaker 1, mapped to the
``user`` role, and utterance 1, 3, 5, ... is Speaker 2, mapped to ``assistant`` (when a session has
an odd length, two user messages meet at the session boundary; progsum accepts that). Session
breaks are not marked.

The run. Messages are appended one at a time and ``Compactor.maybe_compact`` is called after each,
with the `ExtractiveSummarizer` and ``Policy(context_window=max(1_000, 4 * budget),
trigger=("tokens", budget), keep=("messages", keep))``: compaction fires whenever the estimated
context (with the policy's safety margin) reaches ``budget`` tokens. The final context may end
above the budget: the summary keeps about half of what it folds, and once the kept first message,
tail and summary alone exceed the trigger, the engine records a stalled attempt instead of
compacting (the footer counts both).

The measure. The facts are the crowd-written persona sentences of session 1
(``previous_dialogs[0]["personas"]``, both speakers; each list entry is one fact). A fact's *key
words* are its words (maximal runs of ASCII letters, case-folded) of at least 3 letters that are
not in `STOPWORDS`; a fact without key words is not counted. A fact is *retained* by a context when
at least two thirds (`RETAINED_SHARE`) of its distinct key words occur among the context's words.
The progsum context is what the model would be sent after the last turn: the text of
``render_anthropic(state)``'s system blocks (the summary header) and of its messages. Its size in
tokens is the `HeuristicCounter` estimate of those messages plus the header counted as one more
message. The truncation baseline keeps the most recent messages of the chat whose estimates sum to
at most that same number of tokens. A third line, the whole chat, is the ceiling of this measure:
persona sentences are paraphrases, so some facts are never found even in the full text.

Everything is deterministic (no randomness, no clock in the table); the run time goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progsum import Compactor, ConversationState, Policy, render_anthropic
from progsum.extract import message_text
from progsum.merge import live_items
from progsum.policy import MIN_WINDOW
from progsum.summarizers.extractive import DEFAULT_MAX_SHARE, ExtractiveSummarizer
from progsum.tokens import HeuristicCounter

Message = dict[str, Any]

DEFAULT_BUDGET = 400
"""Trigger in tokens: a chat holds ~1,300 estimated tokens, so compaction fires several times."""
DEFAULT_KEEP = 4
"""Messages kept verbatim after each compaction."""
RETAINED_SHARE = 2 / 3
"""Share of a fact's key words that must occur in the context for the fact to count as kept."""
MIN_LETTERS = 3
"""Shorter words are not key words."""
STOPWORDS = frozenset(
    {
        *("the", "and", "but", "for", "nor", "yet", "with", "from", "into", "onto", "about"),
        *("over", "under", "than", "then", "that", "this", "these", "those", "there", "here"),
        *("what", "which", "who", "whom", "whose", "when", "where", "why", "how", "all", "any"),
        *("both", "each", "few", "more", "most", "other", "some", "such", "only", "own", "same"),
        *("too", "very", "can", "will", "just", "not", "now", "are", "was", "were", "been"),
        *("being", "have", "has", "had", "having", "does", "did", "doing", "would", "should"),
        *("could", "might", "must", "shall", "may", "you", "your", "yours", "our", "ours"),
        *("they", "them", "their", "she", "her", "hers", "him", "his", "its", "myself", "also"),
        *("don", "didn", "doesn", "isn", "wasn", "aren", "weren", "won", "wouldn", "couldn"),
        *("shouldn", "haven", "hasn", "hadn", "can't", "cannot", "get", "got", "like", "really"),
        *("much", "many", "lot", "lots", "one", "out", "off", "because", "while", "being"),
    }
)
_LETTERS = re.compile(r"[a-z]+")


def key_words(text: str) -> frozenset[str]:
    """The key words of ``text``: letter runs, case-folded, of 3+ letters, not stopwords."""
    return frozenset(
        word
        for word in _LETTERS.findall(text.casefold())
        if len(word) >= MIN_LETTERS and word not in STOPWORDS
    )


def retained(fact: frozenset[str], context: frozenset[str]) -> bool:
    """Whether at least `RETAINED_SHARE` of a fact's key words occur in the context."""
    return len(fact & context) >= RETAINED_SHARE * len(fact)


@dataclass(frozen=True, slots=True)
class Conversation:
    """One MSC conversation as a chat, with the key words of its session-1 facts."""

    messages: tuple[Message, ...]
    facts: tuple[frozenset[str], ...]
    """Key words of each session-1 persona fact that has any."""


def data_file(path: Path) -> Path:
    """The MSC session-3 test file under ``path`` (the data folder, ``msc/``, or the file).

    Raises:
        SystemExit: no such file; the message lists the places looked at.
    """
    tried = [path, path / "msc" / "session_3" / "test.txt", path / "session_3" / "test.txt"]
    for candidate in tried:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(p) for p in tried)
    raise SystemExit(
        f"no MSC data at {path} (looked at {looked}); pass the shared data folder, "
        "e.g. /work/shared/data"
    )


def chat(record: dict[str, Any]) -> tuple[Message, ...]:
    """Sessions 1, 2 and 3 as one message list: even utterances user, odd ones assistant."""
    sessions = [dialog["dialog"] for dialog in record["previous_dialogs"]] + [record["dialog"]]
    return tuple(
        {"role": "user" if n % 2 == 0 else "assistant", "content": turn["text"]}
        for session in sessions
        for n, turn in enumerate(session)
    )


def conversations(path: Path, limit: int | None) -> Iterator[Conversation]:
    """Read the conversations of the MSC file, in file order, at most ``limit``."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if limit is not None and number >= limit:
                return
            record = json.loads(line)
            personas = record["previous_dialogs"][0]["personas"]
            facts = (key_words(fact) for speaker in personas for fact in speaker)
            yield Conversation(
                messages=chat(record),
                facts=tuple(words for words in facts if words),
            )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one conversation gave: sizes, and how many of its facts each context retained."""

    facts: int
    compactions: int
    stalls: int
    items: int
    """Live items of the final summary."""
    tokens: int
    """Estimated tokens of progsum's final context (and so of the truncation baseline)."""
    chat_tokens: int
    """Estimated tokens of the whole chat."""
    progsum: int
    header: int
    """Facts retained by the summary header alone."""
    truncation: int
    ceiling: int


def truncated(messages: Sequence[Message], budget: int, counter: HeuristicCounter) -> list[Message]:
    """The most recent messages whose estimated tokens sum to at most ``budget``."""
    kept: list[Message] = []
    used = 0
    for message in reversed(messages):
        used += counter.count_message(message)
        if used > budget:
            break
        kept.append(message)
    return kept[::-1]


def score(facts: Sequence[frozenset[str]], texts: Sequence[str]) -> int:
    """How many ``facts`` the texts retain (see `retained`)."""
    words = key_words("\n".join(texts))
    return sum(retained(fact, words) for fact in facts)


def measure(conversation: Conversation, compactor: Compactor[Any]) -> Outcome:
    """Feed the chat turn by turn, then score the final context against truncation."""
    state: ConversationState[Any] = ConversationState()
    for message in conversation.messages:
        state = compactor.maybe_compact(state.append(message))
    system, sent = render_anthropic(state)
    header = [str(block["text"]) for block in system]
    counter = HeuristicCounter()
    tokens = sum(counter.count_message(m) for m in sent) + sum(
        counter.count_message({"role": "user", "content": text}) for text in header
    )
    chat = conversation.messages
    facts = conversation.facts
    summary = state.summary
    return Outcome(
        facts=len(facts),
        compactions=sum(event.outcome == "compacted" for event in state.events),
        stalls=sum(event.outcome == "stalled" for event in state.events),
        items=0 if summary is None else sum(len(items) for items in live_items(summary).values()),
        tokens=tokens,
        chat_tokens=sum(counter.count_message(m) for m in chat),
        progsum=score(facts, header + [message_text(m) for m in sent]),
        header=score(facts, header),
        truncation=score(facts, [message_text(m) for m in truncated(chat, tokens, counter)]),
        ceiling=score(facts, [message_text(m) for m in chat]),
    )


def table(outcomes: Sequence[Outcome], policy: Policy, summarizer: ExtractiveSummarizer) -> str:
    """The results as a Markdown table, with the set-up above it and the summary line below."""
    facts = sum(o.facts for o in outcomes)

    def share(count: int) -> str:
        return f"{count / facts:.1%}"

    ours = sum(o.progsum for o in outcomes)
    cut = sum(o.truncation for o in outcomes)
    tokens = f"{statistics.mean(o.tokens for o in outcomes):,.0f}"
    compactions = [o.compactions for o in outcomes]
    ratio = f"{ours / cut:.2f}x" if cut else "inf (truncation kept no fact)"
    setup = (
        f"MSC session 3 (test): {len(outcomes)} conversations, {facts:,} session-1 facts; "
        f"trigger {policy.trigger_limit} tokens, keep {policy.keep_amount[1]} messages, "
        f"ExtractiveSummarizer(max_per_field={summarizer.max_per_field}, "
        f"max_share={summarizer.max_share})"
    )
    chat_tokens = f"{statistics.mean(o.chat_tokens for o in outcomes):,.0f}"
    ceiling = share(sum(o.ceiling for o in outcomes))
    header = share(sum(o.header for o in outcomes))
    footer = (
        f"progsum / truncation: {ratio}; compactions per conversation: mean "
        f"{statistics.mean(compactions):.1f} (min {min(compactions)}, max {max(compactions)}); "
        f"stalled attempts: {statistics.mean(o.stalls for o in outcomes):.1f}; "
        f"summary items at the end: {statistics.mean(o.items for o in outcomes):.1f}"
    )
    rows = [
        setup,
        "",
        "| context after the last turn | tokens (mean) | session-1 facts retained |",
        "|---|---:|---:|",
        f"| progsum: header + first message + tail | {tokens} | {share(ours)} |",
        f"| truncation to the same tokens | {tokens} | {share(cut)} |",
        f"| progsum header alone | | {header} |",
        f"| whole chat (ceiling of the measure) | {chat_tokens} | {ceiling} |",
        "",
        footer,
    ]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("data_dir", type=Path, help="the shared data folder (or msc/, or the file)")
    parser.add_argument("--limit", type=int, default=None, help="first N conversations only")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="trigger, in tokens")
    parser.add_argument("--keep", type=int, default=DEFAULT_KEEP, help="verbatim tail, messages")
    parser.add_argument(
        "--max-share",
        type=float,
        default=DEFAULT_MAX_SHARE,
        help="ExtractiveSummarizer(max_share=...)",
    )
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit {args.limit} selects no conversations; use at least 1")
    policy = Policy(
        context_window=max(MIN_WINDOW, 4 * args.budget),
        trigger=("tokens", args.budget),
        keep=("messages", args.keep),
    )
    summarizer = ExtractiveSummarizer(max_share=args.max_share)
    compactor = Compactor(policy=policy, summarizer=summarizer)
    started = time.perf_counter()
    path = data_file(args.data_dir)
    outcomes = [measure(c, compactor) for c in conversations(path, args.limit)]
    print(table(outcomes, policy, summarizer))
    print(f"ran in {time.perf_counter() - started:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
