"""When to compact and how much to keep: a frozen, keyword-only `Policy` with named defaults."""

from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, cast

from progsum.errors import ConfigError
from progsum.policy._tokens import DEFAULT_SAFETY_MARGIN
from progsum.policy._windows import context_window as window_of_model

__all__ = [
    "DEFAULT_BACKOFF_CAP",
    "DEFAULT_CHAT_HEADER_SHARE",
    "DEFAULT_KEEP",
    "DEFAULT_RECALL_BUDGET",
    "DEFAULT_RECALL_SPAN",
    "DEFAULT_RESERVE_OUTPUT",
    "DEFAULT_TARGET_RATIO",
    "DEFAULT_TRIGGER",
    "DEFAULT_WORK_HEADER_SHARE",
    "MAX_DEFAULT_RECALL",
    "Policy",
    "Threshold",
    "Unit",
    "default_header_limit",
    "default_recall_limit",
]

Threshold: TypeAlias = tuple[Literal["fraction", "tokens", "messages"], float]
"""``("fraction", f)`` of the input window, ``("tokens", n)`` or ``("messages", n)``."""


class _Default(tuple):  # type: ignore[type-arg]  # a Threshold, told apart by its type
    """A default budget: equal to the threshold it holds, but recognised as the default.

    A budget the caller writes out holds as written even when its value equals the default's
    (``Policy(header_budget=("fraction", 0.15))`` keeps 15% in a chat too); only the default
    object itself resolves by the default's rules (`default_header_limit`,
    `default_recall_limit`). Copies (`dataclasses.replace`, `copy`, pickle) keep the type.
    """

    __slots__ = ()


def _default(threshold: Threshold) -> Threshold:
    """``threshold`` marked as a field's default (`_Default`)."""
    return cast("Threshold", _Default(threshold))


def _is_default(value: Threshold | None) -> bool:
    """Whether ``value`` is a field's default rather than a budget the caller gave."""
    return type(value) is _Default


Unit: TypeAlias = Literal["tokens", "messages"]

DEFAULT_TRIGGER: Threshold = ("fraction", 0.9)
"""Compact once the context reaches 90% of the model's input window: the window is used, and
fewer, larger compactions break the prompt cache less often."""
DEFAULT_KEEP: Threshold | None = None
"""The verbatim tail by default: as many recent messages as fit the target after the kept head
and the header (widened so that tool calls stay with their results)."""
DEFAULT_TARGET_RATIO = 2 / 3
"""Without an explicit target, a compaction should end at two thirds of the trigger (hysteresis):
60% of the input window with the default trigger."""
FIT_MINIMUM: Threshold = ("messages", 1)
"""The least a tail fitted to the target keeps: the newest message."""
MIN_WINDOW = 1_000
"""Smallest context window accepted; anything less is surely a typo."""
DEFAULT_HEADER_BUDGET: Threshold = _default(("fraction", 0.15))
"""The rendered summary header may take 15% of the input window; past it, it is consolidated."""
DEFAULT_CHAT_HEADER_SHARE = 0.5
"""With the default header budget, the header of a chat between people
(`progsum.judge._conversation`) may take half the input window. What a chat establishes (who the
people are, what they did and plan) is spread over its whole history, and no tool round needs
the verbatim tail, so notes of the folded history are worth more of the window than in an
agent's task (bench/retention.md has the figures)."""
DEFAULT_WORK_HEADER_SHARE = 0.35
"""With the default header budget, the header of an agent's conversation grows to hold the work
state (the agent's tasks, the files, commands, errors and ids it touched: `in_conversation`), up
to this share of the input window: the work state claims its room before prose notes and before
the verbatim tail grows. bench/agent_work.py measures it."""
DEFAULT_RECALL_BUDGET: Threshold = _default(("fraction", 0.10))
"""The recall block (excerpts of folded messages relevant to the newest message a person wrote)
may take by default `DEFAULT_RECALL_SPAN` of a fold's span (trigger less target): 10% of the
input window with the default trigger and target, within the room the request has below the
window. The block stays in every request until the next fold, so each block brings compactions
closer (each a summarizer call and a break of the prompt cache): docs/recall.md, "The knob"."""
DEFAULT_RECALL_SPAN = 1 / 3
"""Share of a fold's span (the tokens between the target and the trigger, what one compaction
frees) the default recall budget gives a block. A block of B tokens brings the next compaction
B tokens of growth closer, about B / span of a compaction, so a question's block costs at most
a third of a compaction whatever the trigger and target: at the defaults 10% of the input
window; with a target close to the trigger, less (a block of a tenth of the window would then
fold every time it is quoted). bench/recall_room.md, "The cost model"."""
MAX_DEFAULT_RECALL = 8_192
"""Tokens the default recall budget gives at most: at large windows a tenth of the window
(20,000 tokens at 200k) would quote far more than a question points to, and each block is
written to the prompt cache once and read by every request until the next fold."""
MIN_RECALL = 150
"""Tokens the default recall budget gives at least (but at most `MAX_DEFAULT_RECALL_SHARE` of
the input window): the block's own text and one or two short excerpts. Also the budget without
a window or a token trigger."""
MAX_DEFAULT_RECALL_SHARE = 0.15
"""Share of the room (input window, or the window a token trigger implies) the recall floor may
take at most (a 1,000-token window: 135)."""
DEFAULT_BINDING_BUDGET: Threshold = _default(("fraction", 0.10))
"""Binding items (rules, decisions) may take 10% of the input window, within the header budget;
past it, new binding items are filed as facts, with the reason on the event."""
MIN_DEFAULT_HEADER = 500
"""Tokens the default header budget gives at least: the header's fixed text (~90 tokens), a
working session's compact file list (15 files take ~250) and a few notes, so small windows keep
their trail and facts too. At 300, a 2,000-token window kept 13 of the 24 files two Claude Code
sessions changed; at 500, all 24 (bench/retention.md). From a 4,000-token window on, 15% of the
input window is more. With neither a window nor a token trigger, the budget is this floor."""
MAX_DEFAULT_HEADER_SHARE = 0.3
"""Share of the input window that floor may take at most (a 1,000-token window: 270 tokens)."""
DEFAULT_RESERVE_OUTPUT = 8_192
"""Tokens of the window left for the model's reply (at most a tenth of the window by default)."""
DEFAULT_BACKOFF_CAP = 64
"""After a failed summarizer or archive call, wait 2, 4, 8, … turns (log messages), at most 64,
before calling it again."""
WINDOW_GUARD = 0.95
"""While the summarizer is backing off, a deterministic (extractive) fold runs once the context
reaches this share of the input window; past it, a fixed ``keep`` narrows to the newest message.
Above the default trigger, so that a due compaction keeps its tail."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Policy:
    """When compaction fires, how much of the recent conversation stays verbatim, and the goal.

    Example:
        ``Policy(model="claude-sonnet-5-5", trigger=("fraction", 0.7), keep=("messages", 12))``
    """

    model: str | None = None
    """Model whose context window applies (resolved through `progsum.policy._windows`)."""
    context_window: int | None = None
    """Context window in tokens; overrides the one looked up for ``model``."""
    trigger: Threshold = DEFAULT_TRIGGER
    """When to compact: ``("fraction", f)``, ``("tokens", n)`` or ``("messages", n)``."""
    keep: Threshold | None = DEFAULT_KEEP
    """The verbatim tail: ``("messages", n)``, ``("tokens", n)`` or ``("fraction", f)``; None
    (the default) keeps as many recent messages as fit the target after head and header."""
    keep_first: bool = True
    """Keep the first user message (the task) in front of the context forever."""
    target: Threshold | None = None
    """Where a compaction should end, below the trigger; default two thirds of the trigger."""
    reserve_output: int | None = None
    """Tokens reserved for the reply; fractions are of ``window - reserve_output``.
    Default: 8,192, or a tenth of the window if that is smaller."""
    safety_margin: float = DEFAULT_SAFETY_MARGIN
    """Multiplier on estimated counts until the provider has reported real usage."""
    header_budget: Threshold | None = DEFAULT_HEADER_BUDGET
    """Most tokens the summary header may take, ``("fraction", f)`` of the input window or
    ``("tokens", n)``; past it the summary is consolidated. None: no budget. The default always
    gives one (`default_header_limit`): 15% of the input window, or of the window a token
    trigger implies when that is smaller (a budget of ``("tokens", 8_000)`` gives 1,333), and
    at least `MIN_DEFAULT_HEADER` tokens (at most 30% of the input window), so small windows
    keep facts too; in a chat between people, half of that room
    (`DEFAULT_CHAT_HEADER_SHARE`, `in_conversation`). A budget given here holds in every
    conversation."""
    binding_budget: Threshold | None = DEFAULT_BINDING_BUDGET
    """Most tokens the binding items may take, ``("fraction", f)`` of the input window or
    ``("tokens", n)``; a binding item past it is filed as a fact and the event says so. None: no
    budget. The default applies only when the window is known."""
    recall_budget: Threshold | None = DEFAULT_RECALL_BUDGET
    """Most tokens of the recall block, ``("fraction", f)`` of the input window or ``("tokens",
    n)``: verbatim excerpts of folded messages most relevant to the newest message a person
    wrote, quoted before it in the request (`progsum.recall`). The block takes the room the
    request has below the window, up to this (half of it for a message that asks for nothing:
    `progsum.engine._recall.TOLD_SHARE`), and stays with its message until the next compaction:
    a larger budget answers more and compacts more often. The default is `DEFAULT_RECALL_SPAN`
    of what a compaction frees (trigger less target): 10% of the input window at the default
    trigger and target, at most `MAX_DEFAULT_RECALL` tokens. None turns recall off."""
    failure_backoff: int | None = DEFAULT_BACKOFF_CAP
    """How ``maybe_compact`` meets a failed summarizer or archive call: it records a ``failed``
    event and waits 2, 4, 8, … turns (at most this many) before calling it again; meanwhile a
    deterministic extractive fold keeps the context under the window, and folded segments the
    archive refused stay in the state until it takes them. None: raise `SummarizerError` /
    `ArchiveError` instead (``compact`` always raises)."""

    _window: int | None = field(init=False, repr=False, compare=False, default=None)
    _reserve: int = field(init=False, repr=False, compare=False, default=0)
    _limits: tuple[int, int] = field(init=False, repr=False, compare=False, default=(0, 0))
    _header: int | None = field(init=False, repr=False, compare=False, default=None)
    _chat_header: int | None = field(init=False, repr=False, compare=False, default=None)
    _binding: int | None = field(init=False, repr=False, compare=False, default=None)
    _recall: int | None = field(init=False, repr=False, compare=False, default=None)
    _tail_recall: int = field(init=False, repr=False, compare=False, default=0)
    _defaults: tuple[bool, ...] = field(
        init=False, repr=False, compare=True, default=(True, True, True)
    )
    """Which of the header, binding and recall budgets are the defaults rather than given: a
    given budget equal in value to the default's is another policy (it resolves otherwise)."""

    def _check_names(self) -> None:
        """Refuse a model name or a keep_first flag of the wrong type."""
        if self.model is not None and (not isinstance(self.model, str) or not self.model):
            raise ConfigError(
                f"model={self.model!r} must be a model name such as 'claude-sonnet-5-5', or None"
            )
        if not isinstance(self.keep_first, bool):
            raise ConfigError(f"keep_first={self.keep_first!r} must be True or False")

    def __post_init__(self) -> None:
        window = self.context_window
        if window is not None and (
            isinstance(window, bool) or not isinstance(window, int) or window < MIN_WINDOW
        ):
            raise ConfigError(
                f"context_window={window!r} must be a whole number of tokens of at least "
                f"{MIN_WINDOW}; "
                "use e.g. context_window=200_000"
            )
        self._check_names()
        if window is None and self.model is not None:
            window = window_of_model(self.model)
        object.__setattr__(self, "_window", window)
        reserve = self.reserve_output
        if reserve is None:
            reserve = 0 if window is None else min(DEFAULT_RESERVE_OUTPUT, window // 10)
        if isinstance(reserve, bool) or not isinstance(reserve, int) or reserve < 0:
            raise ConfigError(
                f"reserve_output={reserve!r} must be a non-negative number of tokens; "
                f"use e.g. reserve_output={DEFAULT_RESERVE_OUTPUT}"
            )
        if window is not None and reserve >= window // 2:
            raise ConfigError(
                f"reserve_output={reserve} leaves too little of the {window}-token "
                f"window for input; use at most {window // 2 - 1}"
            )
        object.__setattr__(self, "_reserve", reserve)
        margin = self.safety_margin
        number = isinstance(margin, int | float) and not isinstance(margin, bool)
        if not number or not 1.0 <= margin <= 3.0:  # noqa: PLR2004 - bounds stated in the message
            raise ConfigError(
                f"safety_margin={self.safety_margin!r} must be between 1.0 and 3.0; "
                f"use e.g. {DEFAULT_SAFETY_MARGIN}"
            )
        self._check(
            "trigger", self.trigger, ("fraction", "tokens", "messages"), "('fraction', 0.9)"
        )
        if self.keep is not None:
            self._check("keep", self.keep, ("messages", "tokens", "fraction"), "('messages', 8)")
        if self.target is not None:
            self._check(
                "target", self.target, ("fraction", "tokens", "messages"), "('fraction', 0.4)"
            )
        object.__setattr__(self, "_limits", (self._trigger_limit(), self._target_limit()))
        self._check_order()
        backoff = self.failure_backoff
        if backoff is not None and (
            isinstance(backoff, bool) or not isinstance(backoff, int) or backoff < 1
        ):
            raise ConfigError(
                f"failure_backoff={backoff!r} must be a positive number of turns or None; use "
                f"e.g. failure_backoff={DEFAULT_BACKOFF_CAP}"
            )
        self._resolve_budgets()

    def _resolve_budgets(self) -> None:
        """The header, binding and recall budgets in tokens; which of them are the defaults."""
        budgets = (self.header_budget, self.binding_budget, self.recall_budget)
        object.__setattr__(self, "_defaults", tuple(map(_is_default, budgets)))
        budget = self.header_budget
        if _is_default(budget):
            object.__setattr__(
                self, "_header", default_header_limit(self.input_window, self.trigger)
            )
            chat = default_header_limit(
                self.input_window, self.trigger, share=DEFAULT_CHAT_HEADER_SHARE
            )
            object.__setattr__(self, "_chat_header", chat)
        elif budget is not None:
            self._check("header_budget", budget, ("fraction", "tokens"), "('fraction', 0.15)")
            object.__setattr__(self, "_header", self._resolve(budget))
            object.__setattr__(self, "_chat_header", self._header)
        recall = self.recall_budget
        if _is_default(recall):
            span = self.trigger_limit - self.target_limit if self.unit == "tokens" else None
            object.__setattr__(
                self, "_recall", default_recall_limit(self.input_window, self.trigger, span)
            )
        elif recall is not None:
            self._check("recall_budget", recall, ("fraction", "tokens"), "('fraction', 0.1)")
            object.__setattr__(self, "_recall", self._resolve(recall))
        binding = self.binding_budget
        if binding is not None and not (_is_default(binding) and self._window is None):
            self._check("binding_budget", binding, ("fraction", "tokens"), "('fraction', 0.1)")
            object.__setattr__(self, "_binding", self._resolve(binding))

    # -- resolved values ------------------------------------------------------------------------

    @property
    def window(self) -> int | None:
        """The model's context window in tokens, if known."""
        return self._window

    @property
    def input_window(self) -> int | None:
        """Tokens a request may use for input: the window minus the reserved output."""
        return None if self._window is None else self._window - self._reserve

    @property
    def unit(self) -> Unit:
        """What the trigger and target count: tokens or messages."""
        return "messages" if self.trigger[0] == "messages" else "tokens"

    @property
    def trigger_limit(self) -> int:
        """The trigger as a count in `unit`: compaction is due at or above it."""
        return self._limits[0]

    @property
    def target_limit(self) -> int:
        """Where a compaction should end, in `unit`."""
        return self._limits[1]

    def _trigger_limit(self) -> int:
        return self._resolve(self.trigger)

    def _target_limit(self) -> int:
        if self.target is None:
            return max(1, math.floor(self._trigger_limit() * DEFAULT_TARGET_RATIO))
        return self._resolve(self.target)

    @property
    def guard_limit(self) -> int:
        """Tokens at which a backing-off engine folds deterministically.

        `WINDOW_GUARD` of the input window; the trigger when the window is unknown or smaller.
        """
        window = self.input_window
        if window is None or self.unit != "tokens":
            return self.trigger_limit
        return max(self.trigger_limit, math.floor(window * WINDOW_GUARD))

    @property
    def header_limit(self) -> int | None:
        """Most tokens the summary header may take before it is consolidated (None: no limit)."""
        return self._header

    def in_conversation(
        self, kind: Literal["agent", "chat"], *, work: int = 0, tools: bool = True
    ) -> Policy:
        """The policy a conversation of ``kind`` runs under (``self`` when it is the same).

        A ``chat`` between people gets the chat header budget when the header budget is the
        default (`DEFAULT_CHAT_HEADER_SHARE`), and its fitted tail leaves room for the recall
        block (`tail_recall`); so does an ``agent`` conversation that has called no tool
        (``tools=False``: a person talking with an assistant), whose tail holds no tool round
        and whose facts are spread over its history as a chat's are (the judge still reads it
        as an assistant's conversation). In an ``agent`` conversation the default budget grows
        with the work state: ``work`` is its estimated tokens in the header (the agent's tasks
        and the artifact trail), which claim their room (times the safety margin) before the
        default budget left for prose notes, up to `DEFAULT_WORK_HEADER_SHARE` of the input
        window. A budget the caller gave holds in both. Each distinct policy is made once.
        """
        if kind == "chat" or not tools:
            return _chat_policy(self)
        if work <= 0 or not _is_default(self.header_budget) or self._header is None:
            return self
        room = _room(self.input_window, self.trigger)
        cap = math.floor((room or 0) * DEFAULT_WORK_HEADER_SHARE)
        grown = min(cap, self._header + math.ceil(work * self.safety_margin))
        return self if grown <= self._header else _agent_policy(self, grown)

    def _with_header(self, header: int) -> Policy:
        """A copy of this policy whose header budget is ``header`` tokens."""
        grown = copy.copy(self)
        object.__setattr__(grown, "_header", header)
        return grown

    def _for_chat(self) -> Policy:
        """A copy of this policy with what differs in a chat resolved (``self`` if nothing)."""
        if self._chat_header == self._header and not self._recall:
            return self
        chat = copy.copy(self)
        object.__setattr__(chat, "_header", self._chat_header)
        object.__setattr__(chat, "_tail_recall", self._recall or 0)
        return chat

    @property
    def recall_limit(self) -> int | None:
        """Most tokens of the recall block (None: recall is off)."""
        return self._recall

    @property
    def tail_recall(self) -> int:
        """Tokens of the recall block that a tail fitted to the target leaves room for.

        In a chat (`in_conversation`), the recall budget: a chat's questions are about what was
        said long ago, so each fold leaves the block its room. In an agent's conversation, none:
        the verbatim tail is the task's working set, and the block takes the room between the
        target and the trigger, which it never crosses (`progsum.engine._recall`).
        """
        return self._tail_recall

    @property
    def binding_limit(self) -> int | None:
        """Most tokens the binding items may take (None: no limit)."""
        return self._binding

    @property
    def fits_target(self) -> bool:
        """Whether the verbatim tail is fitted to the target (``keep=None``) rather than fixed."""
        return self.keep is None

    @property
    def keep_amount(self) -> tuple[Unit, int]:
        """The least verbatim tail, ``("messages", n)`` or ``("tokens", n)``.

        With a tail fitted to the target it is `FIT_MINIMUM`; the engine keeps more as they fit.
        """
        keep = FIT_MINIMUM if self.keep is None else self.keep
        kind = keep[0]
        return ("messages" if kind == "messages" else "tokens"), self._resolve(keep)

    # -- validation -----------------------------------------------------------------------------

    def _resolve(self, threshold: Threshold) -> int:
        kind, value = threshold
        if kind == "fraction":
            assert self.input_window is not None  # checked in _check  # noqa: S101
            return max(1, math.floor(self.input_window * value))
        return int(value)

    def _check(self, name: str, value: object, kinds: tuple[str, ...], example: str) -> None:
        shape = f"{name}={value!r} must be one of {', '.join(repr((k, '…')) for k in kinds)}"
        if not isinstance(value, tuple) or len(value) != 2 or value[0] not in kinds:  # noqa: PLR2004
            raise ConfigError(f"{shape}; use e.g. {example}")
        kind, amount = value
        if isinstance(amount, bool) or not isinstance(amount, int | float):
            raise ConfigError(f"{name}={value!r}: the amount must be a number; use e.g. {example}")
        if kind == "fraction":
            if not 0 < amount < 1:
                raise ConfigError(
                    f"{name}={value!r} must be a fraction between 0 and 1; use e.g. {example}"
                )
            if self._window is None:
                raise ConfigError(
                    f"{name}={value!r} needs the model's context window: pass "
                    "Policy(model='claude-sonnet-5-5') or Policy(context_window=200_000)"
                )
            return
        if not isinstance(amount, int) or amount < 1:
            raise ConfigError(
                f"{name}={value!r} must keep at least 1 {kind[:-1]}; use e.g. {example}"
                if name == "keep"
                else f"{name}={value!r} must be a positive whole number; use e.g. {example}"
            )
        if kind == "tokens" and self.input_window is not None and amount > self.input_window:
            raise ConfigError(
                f"{name}={value!r} exceeds the input window ({self.input_window} tokens after "
                f"reserve_output={self._reserve}); use at most ('tokens', {self.input_window})"
            )

    def _check_order(self) -> None:
        trigger, target = self._limits
        if self.unit == "messages" and trigger < 2:  # noqa: PLR2004
            raise ConfigError(
                f"trigger={self.trigger!r} would compact a one-message conversation; "
                "use at least ('messages', 2)"
            )
        if self.target is not None:
            target_unit = "messages" if self.target[0] == "messages" else "tokens"
            if target_unit != self.unit:
                raise ConfigError(
                    f"target={self.target!r} counts {target_unit} but trigger={self.trigger!r} "
                    f"counts {self.unit}; give both in the same unit"
                )
        if target >= trigger:
            raise ConfigError(
                f"target={self.target!r} ({target} {self.unit}) must be below the trigger "
                f"({trigger} {self.unit}), or every turn would compact again; "
                f"use e.g. ('{self.trigger[0]}', {self._suggest_target()})"
            )
        keep_unit, keep = self.keep_amount
        if self.keep is not None and keep_unit == self.unit and keep >= target:
            raise ConfigError(
                f"keep={self.keep!r} ({keep} {keep_unit}) is not below the post-compaction target "
                f"({target} {self.unit}), so compaction could never make room; "
                f"use at most ('{keep_unit}', {max(1, target // 2)})"
            )

    def _suggest_target(self) -> float:
        kind, value = self.trigger
        if kind == "fraction":
            return round(value * DEFAULT_TARGET_RATIO, 2)
        return max(1, math.floor(value * DEFAULT_TARGET_RATIO))


@functools.lru_cache(maxsize=64)
def _chat_policy(policy: Policy) -> Policy:
    """``policy`` as a chat runs it, made once per distinct policy (equal policies share it)."""
    return policy._for_chat()  # noqa: SLF001 - this module's own class


@functools.lru_cache(maxsize=256)
def _agent_policy(policy: Policy, header: int) -> Policy:
    """``policy`` with the header budget an agent's work state needs (`Policy.in_conversation`).

    Keyed by the budget as well: policies that differ only in it compare equal.
    """
    return policy._with_header(header)  # noqa: SLF001 - this module's own class


def default_header_limit(
    input_window: int | None, trigger: Threshold, *, share: float = DEFAULT_HEADER_BUDGET[1]
) -> int:
    """The default header budget in tokens, from whatever window or budget the policy gives.

    ``share`` (`DEFAULT_HEADER_BUDGET`'s, or `DEFAULT_CHAT_HEADER_SHARE` in a chat) of a room:
    the input window, or the window a token trigger implies (the trigger over
    `DEFAULT_TRIGGER`'s share) when that is smaller or the window is unknown, so a budget bounds
    the header as the window does. At least `MIN_DEFAULT_HEADER` tokens, but at most
    `MAX_DEFAULT_HEADER_SHARE` of the input window (of the room when the window is unknown);
    with neither a window nor a token trigger, the floor itself.
    """
    room = _room(input_window, trigger)
    if room is None:
        return MIN_DEFAULT_HEADER
    shared = max(1, math.floor(room * share))
    cap = math.floor((room if input_window is None else input_window) * MAX_DEFAULT_HEADER_SHARE)
    return max(shared, min(MIN_DEFAULT_HEADER, cap))


def default_recall_limit(
    input_window: int | None, trigger: Threshold, span: int | None = None
) -> int:
    """The default recall budget in tokens: `DEFAULT_RECALL_SPAN` of a fold's ``span``.

    ``span`` is the tokens between the policy's target and its trigger (what a compaction
    frees); without one (a trigger counting messages), `DEFAULT_RECALL_BUDGET`'s share of the
    input window, or of the window a token trigger implies when that is smaller or the window is
    unknown (as for the header, `default_header_limit`). At most `MAX_DEFAULT_RECALL`; at least
    `MIN_RECALL`, but at most `MAX_DEFAULT_RECALL_SHARE` of that room; with neither a window
    nor a token trigger, `MIN_RECALL`.
    """
    room = _room(input_window, trigger)
    if room is None:
        return MIN_RECALL
    shared = (
        math.floor(room * DEFAULT_RECALL_BUDGET[1])
        if span is None
        else math.floor(span * DEFAULT_RECALL_SPAN)
    )
    share = min(MAX_DEFAULT_RECALL, max(1, shared))
    return max(share, min(MIN_RECALL, math.floor(room * MAX_DEFAULT_RECALL_SHARE)))


def _room(input_window: int | None, trigger: Threshold) -> int | None:
    """The room a default budget is a share of; None with neither a window nor a token trigger.

    The input window, or the window a token trigger implies (the trigger over
    `DEFAULT_TRIGGER`'s share) when that is smaller.
    """
    rooms = [] if input_window is None else [input_window]
    if trigger[0] == "tokens":
        rooms.append(math.floor(trigger[1] / DEFAULT_TRIGGER[1]))
    return min(rooms) if rooms else None
