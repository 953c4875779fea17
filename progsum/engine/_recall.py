"""The recall stage: verbatim excerpts of folded messages for the newest message a person wrote.

When something is folded and a person's new message has no recall yet, its terms
(`progsum.recall._terms.query_terms`) are looked up in what holds the folded messages: the
compactor's archive when it ranks (`progsum.store._archive.Ranker`) and holds every folded
message, else an index of the state's own log, grown as the cutoff moves. The best messages
(BM25, `progsum.recall._rank`) become excerpts (`progsum.recall._choose`: each recalled question
with the reply that answers it) while they fit the room the request has below the window's
guard, up to the recall budget (`Policy.recall_budget`, the one knob), so the request still
fits (DESIGN invariant 10). The renderers quote them before that message, and the block stays
with it until the next fold: a message is only ever sent with the block it was first sent with
(append-only rendering, docs/architecture.md). So a bigger block answers more now and brings
the next compaction closer (the context may pass the trigger; the next turn folds). A recall
is chosen only for a message no request has sent yet (the newest one), or right after a fold,
whose request rewrites the prefix anyway. The state keeps spans, not text
(`progsum.recall._excerpt.Recall`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from progsum.engine._config import Config
from progsum.engine._measure import count, counted, target_tokens
from progsum.errors import ArchiveError
from progsum.judge._judgement import Context, Label
from progsum.judge._machine import prose_tags
from progsum.judge._seam import context, conversation, current, judge, sentences
from progsum.judge._values import StatedValue as Entry
from progsum.policy._policy import MIN_RECALL
from progsum.policy._tokens import TokenCounter
from progsum.recall._choose import MAX_EXCERPTS, choose
from progsum.recall._excerpt import Excerpt, Recall, block_text
from progsum.recall._index import Index, Ranges
from progsum.recall._terms import document, query_terms, terms
from progsum.state._conversation import ConversationState
from progsum.store._archive import Archive, Ranker
from progsum.summary._schema import SummaryT as S

__all__ = [
    "ASKING",
    "BROUGHT",
    "LOOKBACK",
    "TOLD_SHARE",
    "asking",
    "asks_for",
    "block_limit",
    "due",
    "recallable",
    "recalled",
    "reserve",
    "within",
]

LOOKBACK = 64
"""Messages looked back through for the newest one a person wrote (a tool loop is shorter)."""
BROUGHT = 6
"""Rank among the best a folded message must reach to count as brought back by a question
naming its subject (the values and notes the header may leave to recall)."""
_CANDIDATES = MAX_EXCERPTS
"""Ranked messages looked at: as many as a block may quote."""

_ASKS, _ASKS_NOT = 2, 1
"""`Log.asks`'s marks for a message read as asking, and as not (0: not read)."""
_LAST = 0b11
"""The two bits of a mark in a message's byte (`_marked`); `_asks`' start at bit 0."""
_ASKING_SHIFT = 2
"""Where the bits that say whether the message asks for something (`asks_for`) start."""

ASKING: frozenset[Label] = frozenset({"question", "todo"})
"""What a sentence of a message that asks for something is, as the judge reads it: a question,
or a request the assistant is to act on ("Tell me again about the dogs I met")."""
TOLD_SHARE = 0.5
"""Share of the recall budget the block of a message that asks for nothing may take. A block
costs the same whatever its message (it brings the next compaction as close: bench/recall_room.md,
"The cost model"), and it is worth more where the message asks: a question's recall is its
answer, a statement's is context for a reply (bench/recall_room.md has the figures). At least
`MIN_RECALL` tokens (`_told`)."""

logger = logging.getLogger("progsum.engine")


def due(config: Config[Any], state: ConversationState[Any]) -> bool:
    """Whether a recall must be chosen this turn.

    It is when recall is on, something is folded, and the newest message a person wrote
    (`asking`) has no recall yet and is either the newest message of the log (no request has
    sent it) or the log's length is where the last fold happened (this turn's request rewrites
    the prefix anyway). O(messages since that one), at most `LOOKBACK`.
    """
    if not state.cutoff or config.policy.recall_limit is None:
        return False
    return _due(state, asking(state))


def reserve(config: Config[Any], state: ConversationState[Any]) -> int:
    """Estimated tokens to hold below the trigger for a block `due` that would find no room.

    The block takes the room the request has below the window's guard, up to the recall
    budget: it is not held below the trigger, so a bigger block brings the next compaction
    closer rather than forcing one now. Only when the request leaves no room for even the
    best excerpt while a fold could make some (the context above the compaction's target) does
    the trigger count the block the folded messages would give at the full budget
    (`progsum.engine._measure.decide`), so a compaction comes first. Else, and for a message
    that recalls nothing, 0. The choice is remembered for `recalled` (`_chosen`): a question is
    searched once a turn.
    """
    at = asking(state)
    budget = config.policy.recall_limit
    if budget is None or not state.cutoff or at is None or not _due(state, at):
        return 0
    chosen = _chosen(config, None, state, at, budget)
    if not chosen:
        return 0
    room = _budget(config, state)
    if count(config, state)[0] <= target_tokens(config) or (
        room > 0 and _holds(config, state, at, room)
    ):
        return 0  # a fold would not make room, or the room holds an excerpt
    block = block_text(Recall(at, state.cutoff, chosen), state.log, authors=state.authors)
    return config.counter.count_text(block) + 4


def _holds(config: Config[Any], state: ConversationState[Any], at: int, room: int) -> bool:
    """Whether ``room`` holds a block for message ``at``: an excerpt chosen, and fitted whole.

    The choice counts each excerpt's delimiters and the block's frame by estimate; the fitted
    block is counted whole, so an excerpt the estimate admits may still not fit.
    """
    chosen = _chosen(config, None, state, at, room)
    if not chosen:
        return False
    return bool(_fitted(config, state, Recall(at, state.cutoff, chosen), room).recall_block)


class _Choice(NamedTuple):
    """The excerpts chosen for a state's asking message, with what the choice read."""

    length: int
    head_end: int
    cutoff: int
    pinned: tuple[int, int] | None
    recalls: tuple[Recall, ...]
    budget: int
    counter: TokenCounter
    excerpts: tuple[Excerpt, ...]


def _chosen(
    config: Config[Any],
    archive: Archive | None,
    state: ConversationState[Any],
    at: int,
    budget: int,
) -> tuple[Excerpt, ...]:
    """The excerpts for message ``at`` within ``budget``: chosen once, whichever stage asks first.

    `reserve` asks before the plan decides and `recalled` after it, on the same state when the
    turn folds nothing; the log remembers the last choice (one, by the values it read), so the
    second asks nothing of an index or an archive. Every store ranks as the log's index does,
    so the choice does not depend on which of them made it.
    """
    store = state._store  # noqa: SLF001 - the log storage the states share
    last = store.chosen
    counter = config.counter
    if (
        isinstance(last, _Choice)
        and last.length == len(state)
        and last.cutoff == state.cutoff
        and last.budget == budget
        and last.head_end == state.head_end
        and last.pinned == state.pinned
        and (last.recalls is state.recalls or last.recalls == state.recalls)
        and (last.counter is counter or last.counter == counter)
    ):
        return last.excerpts
    query = query_terms(document(state.log[at]))
    chosen: tuple[Excerpt, ...] = ()
    if query and budget > 0:
        ranked = _ranked(archive, state, query, within(state))
        chosen = _choose(config, state, at, ranked, query, budget)
    store.chosen = _Choice(
        len(state),
        state.head_end,
        state.cutoff,
        state.pinned,
        state.recalls,
        budget,
        counter,
        chosen,
    )
    return chosen


def _due(state: ConversationState[Any], at: int | None) -> bool:
    """`due`, with recall on and something folded, for the asking message ``at``."""
    if at is None:
        return False
    recall = state.recall
    if recall is not None and recall.at >= at:
        return False
    length = len(state)
    return at == length - 1 or state.edits.folded_at == length


def asking(state: ConversationState[Any]) -> int | None:
    """Log index of the newest user-role message, if a person wrote it (not tool output).

    Looked for among the last `LOOKBACK` messages, after the kept head; None when there is
    none, when that message is machine text in the user role, or when it was folded.
    """
    infos = state.infos
    stop = max(state.head_end, len(state) - LOOKBACK) - 1
    for at in range(len(state) - 1, stop, -1):
        info = infos[at]
        if info.role == "user" and not info.is_result:
            return at if state.authors[at] == "user" and state.is_kept(at) else None
    return None


def recalled(
    config: Config[S], archive: Archive | None, state: ConversationState[S]
) -> ConversationState[S]:
    """``state`` with its recall chosen anew when `due`; else ``state`` itself.

    A choice of nothing is recorded too (a `Recall` without excerpts: no block, no tokens), so
    the turns after it under the same message and cutoff ask nothing again: a tool loop under a
    question that matches no folded message costs quiet turns.
    """
    if config.policy.recall_limit is None or not state.cutoff:
        return state
    at = asking(state)
    if at is None or not _due(state, at):
        return state
    budget = _budget(config, state)
    chosen = _chosen(config, archive, state, at, budget)
    if chosen:
        fitted = _fitted(config, state, Recall(at, state.cutoff, chosen), budget)
        told = min(budget, _told(config.policy.recall_limit or 0))
        if (
            told < budget
            and config.counter.count_text(fitted.recall_block) + 4 > told
            and not asks_for(state, at)
        ):
            chosen = _chosen(config, archive, state, at, told)
            fitted = _fitted(config, state, Recall(at, state.cutoff, chosen), told)
        if fitted.recall_block:
            return fitted
    return state.recalled(Recall(at, state.cutoff))


def _told(limit: int) -> int:
    """The budget of a block whose message asks for nothing: `TOLD_SHARE` of ``limit``.

    At least `MIN_RECALL` (the block's own text and one or two short excerpts), within
    ``limit``: a small window's half budget would hold no excerpt at all.
    """
    return min(limit, max(math.floor(limit * TOLD_SHARE), MIN_RECALL))


def asks_for(state: ConversationState[Any], index: int) -> bool:
    """Whether message ``index`` asks for something: a sentence the judge reads as `ASKING`.

    Its sentences are read from the last back, until one asks. Read once per message and
    judgement context, on the log the states share (`_marks`), as `_asks` is.
    """
    return _marked(state, index, _ASKING_SHIFT, _asks_for)


def _asks_for(said: Sequence[str], author: Context) -> bool:
    """`asks_for`'s reading: a sentence, from the last back, is a question or a request."""
    return any(judge(s, author).label in ASKING for s in reversed(said))


def recallable(
    config: Config[Any], state: ConversationState[Any], ledger: Sequence[Entry]
) -> frozenset[str]:
    """The ledger values recall would bring back when a question names their subject.

    An entry's subject is its sentence's query terms less the value's own terms; the value is
    recallable when its sentence is folded and its message ranks among the `BROUGHT` best
    for that subject (from the log's index: every store ranks the same). A rule's value never
    is (binding values stay in the header), nor any value while recall is off.
    """
    if config.policy.recall_limit is None or not state.cutoff:
        return frozenset()
    ranges = within(state)
    index: Index | None = None
    found: set[str] = set()
    for entry in ledger:
        if entry.rule or not any(a <= entry.at < b for a, b in ranges):
            continue
        own = set(terms(entry.value))
        subject = tuple(t for t in query_terms(entry.sentence) if t not in own)
        if not subject:
            continue
        if index is None:
            index = _log_index(state)
        best = index.search(subject, ranges, limit=BROUGHT)
        if any(at == entry.at for at, _ in best):
            found.add(entry.value)
    return frozenset(found)


def within(state: ConversationState[Any]) -> Ranges:
    """The folded log ranges: after the kept head, before the cutoff, outside a pinned round."""
    start, end = state.head_end, state.cutoff
    pinned = state.pinned
    ranges = [(start, end)] if pinned is None else [(start, pinned[0]), (pinned[1], end)]
    return tuple((a, b) for a, b in ranges if a < b)


def _ranked(
    archive: Archive | None, state: ConversationState[Any], query: tuple[str, ...], ranges: Ranges
) -> list[tuple[int, float]]:
    """The best folded messages for ``query``: from the archive when it ranks and holds them all."""
    thread = state.thread_id
    if (
        archive is not None  # before the protocol's isinstance, which costs tens of microseconds
        and thread is not None
        and state.folded_in_archive
        and isinstance(archive, Ranker)
    ):
        try:
            return archive.rank(thread, query, ranges, limit=_CANDIDATES)
        except ArchiveError as error:
            logger.warning("recall read the state's log: the archive could not rank (%s)", error)
    return _log_index(state).search(query, ranges, limit=_CANDIDATES)


def _log_index(state: ConversationState[Any]) -> Index:
    """The index of the state's folded messages, shared by every state on the same log."""
    store = state._store  # noqa: SLF001 - the log storage the states share
    return store.recall_index(state.head_end, state.cutoff)


def _ceiling(config: Config[Any], state: ConversationState[Any]) -> int | None:
    """Counted tokens the context with its recall stays within (`block_limit`'s ceiling).

    Below the window's guard (`Policy.guard_limit`, a share of the input window at or above
    the trigger): the block may take the context past the trigger (the next turn then
    compacts), never near the window. Right after a fold (this request rewrites the prefix),
    below the trigger: a block past it there would make the next turn fold again, a whole
    compaction spent to hold one block.
    """
    policy = config.policy
    if policy.unit == "tokens":
        if _folded(state):
            return policy.trigger_limit - 1
        return policy.guard_limit - 1
    return None if policy.input_window is None else policy.guard_limit


def _folded(state: ConversationState[Any]) -> bool:
    """Whether the state was folded at its length: its next request follows a compaction."""
    return bool(state.cutoff) and state.edits.folded_at == len(state)


def block_limit(budget: int, used: int, ceiling: int | None, scale: float = 1.0) -> int:
    """Estimated tokens a recall block may take: ``budget``, within the room below ``ceiling``.

    ``used`` is the context's counted tokens without the block, ``ceiling`` the counted tokens
    the context with it stays within (`_ceiling`; None: no ceiling) and ``scale`` counted
    tokens per estimated token (the safety margin, or the provider's reported ratio).

    The trade-off it rests on (bench/recall_room.md, "The cost model"): a block stays in every
    request until the next compaction, so a block of B estimated tokens brings that compaction
    B tokens of growth closer, about B / (trigger - target) of a compaction; past the trigger
    the next turn folds whatever the block's size. ``budget`` (`Policy.recall_budget`) is the
    one knob that prices it.
    """
    if ceiling is None:
        return max(0, budget)
    room = math.floor((ceiling - used) / max(scale, 1e-9))
    return max(0, min(budget, room))


def _budget(config: Config[Any], bare: ConversationState[Any]) -> int:
    """Estimated tokens the block may take: `block_limit` for ``bare``.

    ``bare`` is the state without the new block (the blocks of earlier messages count).
    """
    budget = config.policy.recall_limit or 0
    ceiling = _ceiling(config, bare)
    if ceiling is None:
        return budget
    used = count(config, bare)[0]
    return block_limit(budget, used, ceiling, counted(config, bare, 1_000) / 1_000)


def _choose(  # noqa: PLR0917 - the stage's inputs, in the order recalled has them
    config: Config[Any],
    state: ConversationState[Any],
    asked: int,
    ranked: list[tuple[int, float]],
    query: tuple[str, ...],
    budget: int,
) -> tuple[Excerpt, ...]:
    """`progsum.recall._choose.choose` over the state's log: the excerpts for message ``asked``.

    A message an earlier block in view already quotes is passed over (blocks stay until the
    next fold), and so is one that says what the asking message says. Machine text (tool
    output, harness text in the user role: author ``tool``) is never quoted, nor brought as a
    reply: inside a person's message it would read as their words, and what the header left
    out of it (an injected rules section, a secret a command printed) would come back; the
    agent's recall tool reads it with its provenance instead.
    """
    if not ranked:
        return ()
    log = state.log
    ranges = within(state)
    authors = state.authors
    return choose(
        [(at, score) for at, score in ranked if authors[at] != "tool"],
        query,
        budget,
        text=lambda at: document(log[at]),
        count=config.counter.count_text,
        reply=lambda at: _reply(state, at, ranges),
        skip=_quoted(state),
        said=(tuple(terms(document(log[asked]))),),
    )


def _quoted(state: ConversationState[Any]) -> frozenset[int]:
    """The messages the blocks in view quote (each recall since the last fold).

    Remembered on the log for the last recalls read: the next question's recalls are those
    plus one, so only the new one's excerpts are added (recalls only grow between folds).
    """
    store = state._store  # noqa: SLF001 - the log storage the states share
    recalls = state.recalls
    last = store.quoted
    if last is not None and last[0] is recalls:
        return last[1]
    known: tuple[Recall, ...] = ()
    quoted: frozenset[int] = frozenset()
    if last is not None and recalls[: len(last[0])] == last[0]:
        known, quoted = last
    quoted = quoted.union(e.index for r in recalls[len(known) :] for e in r.excerpts)
    store.quoted = (recalls, quoted)
    return quoted


def _reply(state: ConversationState[Any], index: int, ranges: Ranges) -> int | None:
    """The folded message that answers message ``index``, if it asks a question.

    It does when the judge reads its last sentence as a question; the answer is the next
    message when it is folded too and is the other side's prose: the other of the user and
    assistant roles, calling no tool and answering none.
    """
    after = index + 1
    if not any(a <= after < b for a, b in ranges):
        return None
    asked, answer = state.infos[index], state.infos[after]
    if {asked.role, answer.role} != {"user", "assistant"} or answer.calls or answer.is_result:
        return None
    if state.authors[after] == "tool":
        return None  # harness text in the user role: machine text, never quoted
    return after if _asks(state, index) else None


def _asks(state: ConversationState[Any], index: int) -> bool:
    """Whether the judge reads the last sentence of message ``index`` as a question.

    Read once per message and judgement context (the judge, the conversation's kind and the
    prose tags in force), on the log the states share: a message recalled again by a later
    question is not judged again.
    """
    return _marked(state, index, 0, _asks_last)


def _asks_last(said: Sequence[str], author: Context) -> bool:
    """`_asks`' reading: the last sentence is a question."""
    return bool(said) and judge(said[-1], author).label == "question"


def _marked(
    state: ConversationState[Any],
    index: int,
    shift: int,
    reading: Callable[[Sequence[str], Context], bool],
) -> bool:
    """Message ``index``'s mark at ``shift`` in `_marks`, ``reading`` its sentences once."""
    read = _marks(state, index)
    found = (read[index] >> shift) & _LAST
    if not found:
        said = sentences(document(state.log[index]))
        found = _ASKS if reading(said, context(state.authors[index])) else _ASKS_NOT
        read[index] |= found << shift
    return found == _ASKS


def _marks(state: ConversationState[Any], index: int) -> bytearray:
    """The log's readings of its messages for the judgement context in force, to ``index``.

    A byte per message: its low two bits `_asks`' mark, the next two `asks_for`'s (0: not
    read). Kept on the log the states share and copied into a fork's log up to the fork.
    """
    store = state._store  # noqa: SLF001 - the log storage the states share
    key = (current(), conversation(), prose_tags())
    memo = store.asks
    if memo is None or memo[0] != key:
        memo = store.asks = (key, bytearray())
    read = memo[1]
    if len(read) <= index:
        read.extend(bytes(max(len(state), index + 1) - len(read)))
    return read


def _fitted(
    config: Config[S], bare: ConversationState[S], recall: Recall, budget: int
) -> ConversationState[S]:
    """``bare`` with ``recall`` (excerpts best first), in log order.

    The lowest-ranked excerpts are dropped while the block, counted whole, exceeds ``budget``
    or the context exceeds the `_ceiling`.
    """
    ceiling = _ceiling(config, bare)
    excerpts = list(recall.excerpts)

    def made() -> ConversationState[S]:
        ordered = tuple(sorted(excerpts, key=lambda e: e.index))
        return bare.recalled(Recall(recall.at, recall.cutoff, ordered))

    state = made()
    while excerpts and (
        config.counter.count_text(state.recall_block) + 4 > budget
        or (ceiling is not None and count(config, state)[0] > ceiling)
    ):
        excerpts.pop()
        state = made()
    return state
