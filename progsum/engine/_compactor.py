"""`Compactor`: the engine's façade over its configuration, summarizer, archive and hooks.

Called once per turn, `Compactor.maybe_compact` returns the very same state object when nothing
is due; otherwise the drivers (`progsum.engine._drivers`) run the stages: measure, plan, reduce,
cut, summarize, fold (contract, merge, guards, ledger), archive, consolidate, observe, recall.
docs/architecture.md walks through one compaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Generic

from progsum._observe import EventHook, deferred
from progsum._observe import observed as observe_events
from progsum.engine import _drivers as drivers
from progsum.engine import _recall as recall
from progsum.engine import _window as window
from progsum.engine._archive import PendingMemo
from progsum.engine._config import Config, utc_now
from progsum.engine._effects import Steps, astep, step
from progsum.engine._measure import Decision, count, decide, quiet_check
from progsum.engine._plan import CutMemo
from progsum.engine._repair import preferred
from progsum.errors import ConfigError
from progsum.judge._judgement import KINDS, Kind
from progsum.judge._machine import check_tags
from progsum.judge._seam import Judge
from progsum.policy._policy import Policy
from progsum.policy._reduction import Reduction
from progsum.policy._tokens import HeuristicCounter, Method, TokenCounter
from progsum.policy._usage import DEFAULT_COST_ALERT, check_threshold
from progsum.state._conversation import ConversationState, require_state
from progsum.store._archive import Archive
from progsum.summarizers._fallback import default_summarizer
from progsum.summary._request import AsyncSummarizer, Summarizer, require_summarizer
from progsum.summary._schema import Summary, spec_of
from progsum.summary._schema import SummaryT as S

__all__ = ["Compactor", "Decision", "amaybe_compact", "maybe_compact"]

_DEFAULT_REDUCTION = Reduction()


class Compactor(Generic[S]):
    """Compacts a conversation when the policy says so, into a typed summary of ``schema``.

    Example:
        ``compactor = Compactor(policy=Policy(model="claude-sonnet-5-5"), summarizer=...)``
        then, each turn, ``state = compactor.maybe_compact(state)``.
    """

    def __init__(
        self,
        *,
        policy: Policy,
        summarizer: Summarizer | AsyncSummarizer | None = None,
        schema: type[S] = Summary,  # type: ignore[assignment]  # mypy cannot default a TypeVar-typed parameter
        counter: TokenCounter | None = None,
        clock: Callable[[], datetime] = utc_now,
        reduction: Reduction | None = _DEFAULT_REDUCTION,
        archive: Archive | None = None,
        on_event: EventHook | None = None,
        cost_alert: float | None = DEFAULT_COST_ALERT,
        judge: Judge | None = None,
        conversation: Kind | None = None,
        prose_tags: Iterable[str] = (),
    ) -> None:
        """Bundle a policy, a summarizer, a schema and a token counter.

        Args:
            policy: When to compact and how much to keep.
            summarizer: What folds a segment into the summary; default `default_summarizer()`
                (Claude with an extractive fallback when ``ANTHROPIC_API_KEY`` is set, else the
                offline extractive summarizer).
            schema: The summary schema (default `Summary`).
            counter: Token estimator (default `HeuristicCounter` scaled for ``policy.model``).
            clock: Source of event timestamps (UTC).
            reduction: Which old tool data to clear before any model call (`Reduction()`:
                results and inputs of 2,000+ characters outside the tail); None turns it off.
            archive: Where folded segments are written before the state that replaces them is
                returned (`progsum.store.SQLiteStore`, `progsum.store.MemoryArchive`); the
                state's ``thread_id`` names the conversation in it.
            on_event: Called with each new `CompactionEvent` once the state holding it is built
                (`progsum._observe`); if it raises, the error is logged and counted in
                ``hook_failures``, never raised into the agent loop.
            cost_alert: Summarization share of all reported tokens (the agent's ``usage=``
                reports and the summarizer's) at which an event carries a `CostAlert`, once per
                crossing (default 0.15); None turns it off.
            judge: What reads the conversation's text: where sentences end and what each does
                (a rule, a decision, a fact, a pleasantry, ...; `progsum.judge.Judge`); default
                the shipped `progsum.judge._linear.LinearJudge`, trained on the labelled corpus.
            conversation: ``agent`` (a person working with an assistant) or ``chat`` (two people
                talking to each other: nothing in it is a rule for an assistant); None (the
                default) reads it off the conversation: a chat when the assistant-role messages
                carry a speaker's ``name`` and no tool is called (`progsum.judge._conversation`).
            prose_tags: Tags whose blocks inside user-role text are the person's own text, for
                an app that wraps what the user typed (``["user_query"]`` for ``<user_query>``);
                every other tag-delimited block there is machine text, never a rule or a fact.
                Keep one set per conversation: a message's author class is read once.
        """
        _check(policy, reduction, archive, on_event)
        _check_parts(counter, clock, prose_tags)
        _check_judge(judge)
        chosen = default_summarizer() if summarizer is None else summarizer
        require_summarizer(chosen)
        spec_of(schema)
        config = Config(
            policy=policy,
            schema=schema,
            counter=counter or HeuristicCounter.for_model(policy.model),
            clock=clock,
            reduction=reduction,
            archived=archive is not None,
            judge=judge,
            conversation=_conversation(conversation),
            prose_tags=check_tags(prose_tags),
        )
        self._engine = drivers.Engine(config, chosen, archive, CutMemo(), PendingMemo())
        self._quiet = quiet_check(config)
        self.on_event = on_event
        self.cost_alert = check_threshold(cost_alert)
        self.hook_failures = 0
        """How many times ``on_event`` raised (each one logged on ``progsum.engine``)."""

    @property
    def config(self) -> Config[S]:
        """The frozen configuration every stage reads."""
        return self._engine.config

    @property
    def policy(self) -> Policy:
        """When to compact and how much to keep."""
        return self._engine.config.policy

    @property
    def schema(self) -> type[S]:
        """The summary schema."""
        return self._engine.config.schema

    @property
    def counter(self) -> TokenCounter:
        """The token estimator."""
        return self._engine.config.counter

    @property
    def clock(self) -> Callable[[], datetime]:
        """Source of event timestamps (UTC)."""
        return self._engine.config.clock

    @property
    def reduction(self) -> Reduction | None:
        """Which old tool data is cleared before any model call."""
        return self._engine.config.reduction

    @property
    def summarizer(self) -> Summarizer | AsyncSummarizer:
        """What folds a segment into the summary."""
        return self._engine.summarizer

    @property
    def archive(self) -> Archive | None:
        """Where folded segments are written."""
        return self._engine.archive

    def decide(self, state: ConversationState[Any]) -> Decision:
        """Measure the context and say whether compaction is due. O(new messages).

        A person's new message that is due a recall holds room for its block below the trigger
        (`Decision.reserved`).
        """
        require_state(state)
        return decide(self.config, state, reserve=recall.reserve(self.config, state))

    def count(self, state: ConversationState[Any]) -> tuple[int, Method]:
        """Counted context tokens of ``state`` (the figure the trigger and window checks use)."""
        require_state(state)
        return count(self.config, state)

    def sizes(self, state: ConversationState[Any]) -> list[tuple[int, int]]:
        """``(log index, counted tokens)`` of each message in view, cleared blocks subtracted."""
        require_state(state)
        return window.sizes(self.config, state)

    def overflow(self, state: ConversationState[Any]) -> str | None:
        """None when ``state``'s context fits the model's input window; else one line why.

        The line says which messages hold the context, how big they are, and what would help.
        """
        require_state(state)
        return window.overflow(self.config, state)

    def maybe_compact(self, state: ConversationState[Any]) -> ConversationState[S]:
        """Compact if the policy says so; else return ``state`` itself.

        After a fold, a person's new message also gets its recall block (`progsum.engine._recall`),
        in a new state, even when nothing else is due.

        Never raises for a due-but-impossible compaction: the returned state records a
        ``stalled`` event saying why, and no second attempt is made in the same turn. With the
        policy's ``failure_backoff`` (the default), a failing summarizer or archive does not raise
        either: a ``failed`` event is recorded, the call is retried after 2, 4, 8, … turns, an
        extractive fold (degraded, repairable) keeps the context under the window meanwhile, and
        segments the archive refused stay in the state until it takes them.

        Raises:
            SummarizerError: the summarizer failed and ``failure_backoff`` is None; ``state`` is
                unchanged and still valid.
            ConfigError: ``state`` is not a `ConversationState`.
        """
        if self._idle(state):  # the common turn: no sequence to step
            return state
        return step(self._turn(state, force=False, guarded=self._backs_off, blocking=True))

    def compact(
        self, state: ConversationState[Any], *, force: bool = False
    ) -> ConversationState[S]:
        """Like `maybe_compact`, but failures raise; with ``force=True``, compact now.

        Raises:
            SummarizerError: the summarizer failed; ``state`` is unchanged and still valid.
            ArchiveError: the archive write failed; ``state`` is unchanged and still valid.
            ConfigError: ``state`` is not a `ConversationState`.
        """
        return step(self._turn(state, force=force, guarded=False, blocking=True))

    async def amaybe_compact(self, state: ConversationState[Any]) -> ConversationState[S]:
        """Async `maybe_compact`."""
        if self._idle(state):
            return state
        return await astep(self._turn(state, force=False, guarded=self._backs_off, blocking=False))

    async def acompact(
        self, state: ConversationState[Any], *, force: bool = False
    ) -> ConversationState[S]:
        """Async `compact`: awaits ``asummarize`` or runs ``summarize`` in a worker thread."""
        return await astep(self._turn(state, force=force, guarded=False, blocking=False))

    def repair(
        self,
        state: ConversationState[Any],
        *,
        summarizer: Summarizer | AsyncSummarizer | None = None,
    ) -> ConversationState[S]:
        """Summarize again, with the preferred summarizer, every segment a fallback folded.

        Degraded compactions (``state.pending_repairs``) are re-done oldest first: the segment is
        read back from the log and its update merged into the current summary, recorded as a
        ``repaired`` event. Nothing is retired by a repair's absence; the fallback's items stay.

        Args:
            state: The conversation.
            summarizer: Who repairs (default: the primary of this compactor's fallback chain).

        Raises:
            SummarizerError: the summarizer failed; ``state`` is unchanged and still valid.
            ConfigError: ``state`` is not a `ConversationState`.
        """
        return step(self._repairing(state, summarizer, blocking=True))

    async def arepair(
        self,
        state: ConversationState[Any],
        *,
        summarizer: Summarizer | AsyncSummarizer | None = None,
    ) -> ConversationState[S]:
        """Async `repair`."""
        return await astep(self._repairing(state, summarizer, blocking=False))

    @property
    def _backs_off(self) -> bool:
        """Whether `maybe_compact`'s failures back off (the policy's ``failure_backoff``)."""
        return self.policy.failure_backoff is not None

    def _turn(
        self, state: ConversationState[Any], *, force: bool, guarded: bool, blocking: bool
    ) -> Steps[ConversationState[S]]:
        """One turn's stages (`progsum.engine._drivers.turn`) with this compactor's parts."""
        require_state(state)
        observe = self._observed
        return (
            yield from drivers.turn(
                self._engine,
                state,
                force=force,
                guarded=guarded,
                observe=observe,
                blocking=blocking,
            )
        )

    def _repairing(
        self,
        state: ConversationState[Any],
        summarizer: Summarizer | AsyncSummarizer | None,
        *,
        blocking: bool,
    ) -> Steps[ConversationState[S]]:
        """`repair`'s stage sequence, by ``summarizer`` or the preferred one of the chain."""
        require_state(state)
        chosen = summarizer or preferred(self.summarizer)
        return (
            yield from drivers.repairing(
                self._engine, state, chosen, self._observed, blocking=blocking
            )
        )

    def _idle(self, state: ConversationState[Any]) -> bool:
        """At most one attempt per turn (invariant 8), or nothing to do this turn.

        Raises:
            ConfigError: ``state`` is not a `ConversationState`.
        """
        if not isinstance(state, ConversationState):
            require_state(state)  # raises, naming what it is
        return state.attempted_at == len(state) or (
            self._quiet(state) and not recall.due(self._engine.config, state)
        )

    def _observed(
        self, before: ConversationState[Any], after: ConversationState[Any], span: object
    ) -> ConversationState[Any]:
        """``after`` with the cost alert noted; its new events logged, traced and handed on."""
        if len(after.events) == len(before.events):
            if span is not None:
                deferred(span, after)  # due, but the summarizer is backing off: no event
            return after
        observed, self.hook_failures = observe_events(
            before,
            after,
            span,
            threshold=self.cost_alert,
            hook=self.on_event,
            failures=self.hook_failures,
        )
        return observed


def _check(policy: object, reduction: object, archive: object, on_event: object) -> None:
    """Refuse configuration of the wrong type, naming the value and the fix."""
    if not isinstance(policy, Policy):
        raise ConfigError(f"policy={policy!r} is not a progsum.Policy; pass Policy(...)")
    if reduction is not None and not isinstance(reduction, Reduction):
        raise ConfigError(
            f"reduction={reduction!r} is not a progsum.policy.Reduction; pass Reduction(...) "
            "or None"
        )
    if archive is not None and not isinstance(archive, Archive):
        raise ConfigError(
            f"archive={archive!r} lacks the Archive methods put/get/search/events; pass a "
            "progsum.store.SQLiteStore or progsum.store.MemoryArchive"
        )
    if on_event is not None and not callable(on_event):
        raise ConfigError(
            f"on_event={on_event!r} is not callable; pass a function taking a "
            "CompactionEvent, or None"
        )


def _check_parts(counter: object, clock: object, prose_tags: object) -> None:
    """Refuse a counter, clock or tag list of the wrong type, naming the value and the fix."""
    if counter is not None and not all(
        callable(getattr(counter, method, None)) for method in ("count_message", "count_text")
    ):
        raise ConfigError(
            f"counter={counter!r} lacks count_message(message) or count_text(text); pass a "
            "progsum.policy._tokens.HeuristicCounter, an object with both methods, or None"
        )
    if not callable(clock):
        raise ConfigError(
            f"clock={clock!r} is not callable; pass a function returning an aware UTC datetime, "
            "e.g. lambda: datetime.now(UTC)"
        )
    if not isinstance(prose_tags, Iterable):
        raise ConfigError(
            f"prose_tags={prose_tags!r} is not a list of tag names; give e.g. ['user_query'], "
            "or leave it out"
        )


def _check_judge(judge: object) -> None:
    """Refuse a judge that lacks a method of the `progsum.judge.Judge` protocol, naming it."""
    if judge is None:
        return
    for method in ("sentences(text)", "judge(sentence, context)"):
        if not callable(getattr(judge, method.partition("(")[0], None)):
            raise ConfigError(
                f"judge={judge!r} is not a progsum.judge.Judge: it lacks {method}; pass an "
                "object with sentences(text) and judge(sentence, context), or None for the "
                "shipped LinearJudge"
            )


def _policy_from(budget: int | str | Policy) -> Policy:
    if isinstance(budget, Policy):
        return budget
    if isinstance(budget, str):
        return Policy(model=budget)
    if isinstance(budget, int) and not isinstance(budget, bool):
        return Policy(context_window=budget)
    raise ConfigError(
        f"budget={budget!r} must be the context window in tokens, a model name, or a Policy; "
        "use e.g. maybe_compact(state, 200_000, summarizer=...)"
    )


def maybe_compact(
    state: ConversationState[Any],
    budget: int | str | Policy,
    *,
    summarizer: Summarizer | AsyncSummarizer | None = None,
    schema: type[S] = Summary,  # type: ignore[assignment]  # see Compactor
    counter: TokenCounter | None = None,
) -> ConversationState[S]:
    """Compact ``state`` if it is due under ``budget``; the one-call form of `Compactor`.

    Args:
        state: The conversation.
        budget: The context window in tokens, a model name, or a full `Policy`.
        summarizer: What turns a segment into a summary update.
        schema: The summary schema (default `Summary`).
        counter: Token counter (default `HeuristicCounter`).
    """
    compactor = Compactor(
        summarizer=summarizer, policy=_policy_from(budget), schema=schema, counter=counter
    )
    return compactor.maybe_compact(state)


async def amaybe_compact(
    state: ConversationState[Any],
    budget: int | str | Policy,
    *,
    summarizer: Summarizer | AsyncSummarizer | None = None,
    schema: type[S] = Summary,  # type: ignore[assignment]  # see Compactor
    counter: TokenCounter | None = None,
) -> ConversationState[S]:
    """Async `maybe_compact`."""
    compactor = Compactor(
        summarizer=summarizer, policy=_policy_from(budget), schema=schema, counter=counter
    )
    return await compactor.amaybe_compact(state)


def _conversation(kind: object) -> Kind | None:
    """``kind`` if it is a kind of conversation or None, else a `ConfigError` naming the choices."""
    if kind is not None and kind not in KINDS:
        raise ConfigError(
            f"conversation={kind!r} is not a kind of conversation; use 'agent' (a person working "
            "with an assistant), 'chat' (two people talking to each other), or None (the "
            "default) to read it off the conversation"
        )
    return kind
