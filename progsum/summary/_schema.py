"""The typed summary: items with stable ids, the default `Summary`, and how schemas are read.

A schema is a pydantic model deriving from `BaseSummary`. Its list fields (``tuple[Item, ...]``)
are what compaction accumulates; an optional text field marked as the objective says what the
conversation is for. Field metadata (label, description, binding, id prefix) comes from
`summary_field` and `objective_field`; merge and render read it through `spec_of`, so a subclass or
a domain schema works without new code.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args, get_origin

from pydantic import ConfigDict, Field, JsonValue
from pydantic.fields import FieldInfo
from typing_extensions import TypeVar

from progsum.errors import ConfigError
from progsum.judge._lexicon import words
from progsum.summary._record import Record
from progsum.summary._validated import Validated
from progsum.summary._work import PlanningTool, WorkLedger

__all__ = [
    "EXTRACTORS",
    "BaseSummary",
    "FieldSpec",
    "Item",
    "Items",
    "Kind",
    "SchemaSpec",
    "Summary",
    "SummaryT",
    "Tombstone",
    "item_key",
    "objective_field",
    "spec_of",
    "summary_field",
]

_META = "progsum"
_PREFIX = re.compile(r"^[A-Z][A-Za-z]{0,3}$")
RESERVED_FIELDS = frozenset({"retired", "work"})


class Item(Record):
    """One remembered statement, with a stable id and the log range it was folded from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """Stable id, the field's prefix and a number: ``C3`` is the third constraint ever added."""
    text: str
    """The statement, exact values included."""
    source: tuple[int, int]
    """Log range ``[start, end)`` of the messages it was taken from."""
    origin: Literal["summarizer", "extracted"] = "summarizer"
    """``extracted``: copied verbatim from the conversation by progsum's guards (a user's
    prohibition the summarizer left out), not written by the summarizer."""
    cites: tuple[int, ...] = ()
    """Log indices of the messages that state it (for a binding item: at least one message the
    user wrote, checked by the engine; see `progsum.contract`)."""
    author: Literal["user", "assistant", "tool"] | None = None
    """Who wrote what it cites: ``user`` when any cited message is the user's (see
    `progsum.judge._provenance`); None for items written before provenance was recorded."""


Items = tuple[Item, ...]
"""The type of a summary list field."""


class Tombstone(Record):
    """A retired item, kept in the state (not rendered) so that nothing vanishes silently."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str
    item: Item
    reason: str
    compaction: int
    """Number of the compaction (1-based) that retired it."""
    evidence: int | None = None
    """For a binding item: log index of the user's message that reopened it (`progsum.contract`)."""


EXTRACTORS: dict[str, str] = {
    # prose, read by the extractive summarizer from the folded messages
    "constraints": "rules, limits and prohibitions the user stated",
    "decisions": "choices that were made or accepted",
    "rejected": "options ruled out, with why",
    "questions": "questions still unanswered at the end of the segment",
    "facts": "statements carrying exact values or reported results",
    "answers": "a reply joined to the question it answers",
    "profile": "what a speaker says about themselves: job, home, family, health, history",
    "preferences": "what a speaker likes, dislikes, wants or habitually does, by attribute",
    "people": "other people a speaker names, with their relation to the speaker",
    "dates": "dated events and important dates (birthdays, appointments, deadlines)",
    # artifacts, read from tool calls and their results, for every summarizer
    "files": "files read, created, modified or deleted, with their last known state",
    "commands": "commands run, with their exit status or first error",
    "errors": "errors seen, and whether a later step resolved them",
    "identifiers": "ids and codes returned by tools: bookings, orders, tickets, accounts",
    "sources": "URLs and documents fetched or searched",
}
"""What deterministic extractors can feed a schema field (`summary_field(extract=...)`), by name.

A field lists the kinds it takes; each kind feeds at most one field of a schema. A kind no field
declares goes where the extractive summarizer's name rules send it (see
`progsum.summarizers.extractive._routing.routes`); artifacts without a field become facts."""

Kind = Literal["list", "keyed"]
"""How a list field's items behave: ``list`` items accumulate; ``keyed`` items read
``key: value`` and a new value for a key supersedes the old one (kept as a tombstone)."""


class BaseSummary(Validated):
    """Base of every summary schema: holds the tombstones; subclasses declare the fields.

    Class attributes a schema may set:
        schema_name: Its name in messages and listings (default: the class name).
        header_template: Jinja source that replaces ``prompts/header.md.j2`` for this schema; it
            gets the same variables (see prompts/README.md).
        planning_tools: How to read the agent's own planning tools beyond the ones progsum knows
            (`progsum.summary._work.PlanningTool`; ``[[planning_tools]]`` in a schema file).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_name: ClassVar[str | None] = None
    header_template: ClassVar[str | None] = None
    planning_tools: ClassVar[tuple[PlanningTool, ...]] = ()

    retired: tuple[Tombstone, ...] = ()
    """Items retired by later compactions, with the reason given."""
    work: WorkLedger = WorkLedger()
    """The agent's tasks, read from its own planning tools by our code (`progsum.summary._work`)."""

    shape_hint: ClassVar[str] = (
        "a list field takes a tuple of Item(id='C1', text='...', source=(start, end)), the "
        "objective a string"
    )


def summary_field(
    label: str,
    description: str,
    *,
    binding: bool = False,
    id_prefix: str | None = None,
    max_items: int | None = None,
    kind: Kind = "list",
    extract: tuple[str, ...] = (),
) -> Any:  # noqa: ANN401 - returns a pydantic FieldInfo, typed as Any like pydantic.Field
    """Declare a list field of a summary schema.

    Args:
        label: Heading of the field's section in the rendered header.
        description: What belongs in the field, in the words the summarizer model will read.
        binding: Items stay until retired with a stated reason (constraints, decisions).
        id_prefix: Letters before the item number (default: the label's first letter).
        max_items: Keep at most this many items; the oldest are retired first, as tombstones.
            Not allowed on a binding field, whose items are never dropped.
        kind: ``"keyed"`` for ``key: value`` items where a new value for a key supersedes the
            old one (``"Order A-1042: shipped"`` retires ``"Order A-1042: packed"``).
        extract: Names from `EXTRACTORS` whose deterministic output this field takes
            (``("files",)`` for a files-touched field); checked by `spec_of`.
    """
    _check_text("label", label, "the section heading, e.g. 'Files touched'")
    _check_text("description", description, "what belongs in the field, for the summarizer")
    meta: dict[str, JsonValue] = {
        "label": label,
        "binding": binding,
        "id_prefix": id_prefix,
        "objective": False,
        "max_items": max_items,
        "kind": kind,
        "extract": list(extract),
    }
    return Field(default=(), description=description, json_schema_extra={_META: meta})


def _check_text(name: str, value: object, what: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name}={value!r} must be a non-empty string: {what}")


def objective_field(label: str, description: str) -> Any:  # noqa: ANN401 - a pydantic FieldInfo
    """Declare the text field that states what the conversation is for."""
    _check_text("label", label, "the heading, e.g. 'Objective'")
    _check_text("description", description, "what the objective says, for the summarizer")
    meta: dict[str, JsonValue] = {
        "label": label,
        "binding": False,
        "id_prefix": None,
        "objective": True,
    }
    return Field(default="", description=description, json_schema_extra={_META: meta})


class Summary(BaseSummary):
    """The default schema: what an agent must not forget, in six fields."""

    schema_name = "default"

    objective: str = objective_field(
        "Objective",
        "What the user wants achieved overall, in one or two sentences, updated only when the "
        "goal itself changes.",
    )
    decisions: Items = summary_field(
        "Decisions",
        "Choices that were made and agreed, with their exact values (what was chosen, not the "
        "discussion).",
        binding=True,
        extract=("decisions",),
    )
    constraints: Items = summary_field(
        "Constraints",
        "Requirements, limits and prohibitions the user stated (budgets, deadlines, 'never', "
        "'must', 'only'), worded as stated, with exact values.",
        binding=True,
        extract=("constraints",),
    )
    established_facts: Items = summary_field(
        "Established facts",
        "Facts that were verified or given, with exact numbers, amounts, dates, ids, paths and "
        "URLs.",
        id_prefix="F",
        extract=("facts", "answers"),
    )
    open_threads: Items = summary_field(
        "Open threads",
        "The user's questions and requests still unresolved at the end of the segment, and "
        "questions waiting for the user's answer; never the assistant's narration of what it "
        "will do next.",
        extract=("questions",),
    )
    rejected: Items = summary_field(
        "Rejected approaches",
        "Options that were tried or considered and ruled out, each with why.",
        extract=("rejected",),
    )


SummaryT = TypeVar("SummaryT", bound=BaseSummary, default=Summary)
"""A summary schema; `Summary` unless a compactor or request says otherwise."""


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """How one field of a schema is remembered and shown."""

    name: str
    label: str
    description: str
    binding: bool
    id_prefix: str
    max_items: int | None = None
    """At most this many items are kept; the oldest go first (None: no cap)."""
    kind: Kind = "list"
    """``keyed``: items read ``key: value`` and a new value supersedes the old one."""
    extract: tuple[str, ...] = ()
    """Names from `EXTRACTORS` this field takes (empty: the name rules decide)."""


@dataclass(frozen=True, slots=True)
class SchemaSpec:
    """A schema's objective field (if any) and its list fields, in declaration order."""

    model: type[BaseSummary]
    objective: FieldSpec | None
    lists: tuple[FieldSpec, ...]
    name: str = ""
    """The schema's name (``schema_name``, else the class name)."""
    template: str | None = None
    """Jinja source of the schema's own header template, if it overrides the default."""
    planning_tools: tuple[PlanningTool, ...] = ()
    """The schema's own planning tools (`BaseSummary.planning_tools`), checked."""

    def extracting(self, kind: str) -> FieldSpec | None:
        """The field that declares it takes ``kind`` (a name from `EXTRACTORS`), or None."""
        for spec in self.lists:
            if kind in spec.extract:
                return spec
        return None

    def list_field(self, name: str) -> FieldSpec:
        """The list field called ``name``.

        Raises:
            ConfigError: the schema has no such list field.
        """
        for spec in self.lists:
            if spec.name == name:
                return spec
        names = ", ".join(spec.name for spec in self.lists)
        raise ConfigError(
            f"{self.model.__name__} has no list field {name!r}; its list fields are: {names}"
        )

    @property
    def binding(self) -> tuple[FieldSpec, ...]:
        """The list fields whose items stay until retired with a reason."""
        return tuple(spec for spec in self.lists if spec.binding)


@functools.cache
def spec_of(schema: type[BaseSummary]) -> SchemaSpec:
    """Read a schema's fields and metadata (cached per class).

    Raises:
        ConfigError: the class is not a summary schema, or its field metadata conflicts.
    """
    if not (isinstance(schema, type) and issubclass(schema, BaseSummary)):
        raise ConfigError(
            f"schema={schema!r} is not a summary schema; pass progsum.Summary or a subclass of "
            "progsum.BaseSummary"
        )
    objective: FieldSpec | None = None
    lists: list[FieldSpec] = []
    prefixes: dict[str, str] = {}
    claimed: dict[str, str] = {}
    for name, info in schema.model_fields.items():
        if name in RESERVED_FIELDS:
            continue
        extra = info.json_schema_extra
        meta = extra.get(_META) if isinstance(extra, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        label = str(meta.get("label") or name.replace("_", " ").capitalize())
        description = info.description or ""
        if meta.get("objective"):
            _check_objective(schema, name, info, objective)
            objective = FieldSpec(name, label, description, binding=False, id_prefix="")
            continue
        if not _is_items(info.annotation):
            if info.is_required():
                raise ConfigError(
                    f"{schema.__name__}.{name} is required but is neither an Items list nor the "
                    "objective; give it a default or declare it with summary_field()"
                )
            continue
        lists.append(
            _list_spec(schema, name, label, description, meta, prefixes=prefixes, claimed=claimed)
        )
    if not lists:
        raise ConfigError(
            f"{schema.__name__} has no list fields; declare at least one "
            "`name: Items = summary_field(...)`"
        )
    return SchemaSpec(
        model=schema,
        objective=objective,
        lists=_with_rules_field(schema, tuple(lists)),
        name=schema.schema_name or schema.__name__,
        template=_template(schema),
        planning_tools=_planning_tools(schema),
    )


def _with_rules_field(
    schema: type[BaseSummary], lists: tuple[FieldSpec, ...]
) -> tuple[FieldSpec, ...]:
    """The fields, the one that takes the user's rules declaring ``"constraints"``.

    The user's rules (requirements, limits, prohibitions) must land in a binding field, or they
    are filed as loose notes and may be dropped. The field is the one that declares
    ``extract=("constraints",)``; else the field called ``constraints``; else the first binding
    field whose name holds a word of the lexicon's ``fields.constraints`` (rules, policies,
    requirements, ...); else the only binding field, when it declares no kind of its own. A
    schema with binding fields none of which qualifies is refused here, so the mistake shows when
    the schema is built, not as a rule filed under the wrong heading; a schema with no binding
    field binds nothing, by its author's choice.

    Raises:
        ConfigError: the schema has binding fields but none of them takes the user's rules.
    """
    if any("constraints" in f.extract for f in lists):
        return lists
    binding = [f for f in lists if f.binding]
    rule_words = words("fields.constraints")
    target = next((f for f in lists if f.name == "constraints"), None)
    target = target or next((f for f in binding if any(w in f.name for w in rule_words)), None)
    if target is None and len(binding) == 1 and not binding[0].extract:
        target = binding[0]
    if target is None and binding:
        names = ", ".join(f.name for f in binding)
        raise ConfigError(
            f"{schema.__name__} has binding fields ({names}) but none takes the user's rules "
            "(requirements, limits, prohibitions), so they would be filed in a non-binding "
            "field; declare the field that should hold them with summary_field(..., "
            "extract=('constraints',)) (in a TOML schema: extract = [\"constraints\"]), or "
            "name it 'constraints'"
        )
    if target is None:
        return lists
    rules = dataclasses.replace(target, extract=("constraints", *target.extract))
    return tuple(rules if f is target else f for f in lists)


def _check_objective(
    schema: type[BaseSummary], name: str, info: FieldInfo, objective: FieldSpec | None
) -> None:
    """Refuse an objective field that is not a str, or a second one (``objective``: the first)."""
    if info.annotation is not str:
        raise ConfigError(
            f"{schema.__name__}.{name} is marked as the objective but is not a str field"
        )
    if objective is not None:
        raise ConfigError(
            f"{schema.__name__} marks both {objective.name!r} and {name!r} as the "
            "objective; keep one objective_field"
        )


def _list_spec(
    schema: type[BaseSummary],
    name: str,
    label: str,
    description: str,
    meta: dict[str, Any],
    *,
    prefixes: dict[str, str],
    claimed: dict[str, str],
) -> FieldSpec:
    """The spec of the list field ``name`` from its metadata (`summary_field`).

    ``prefixes`` (id prefix → field) and ``claimed`` (extractor → field) hold what the earlier
    fields took; this field's entries are added to them.
    """
    prefix = str(meta.get("id_prefix") or label[0].upper())
    if not _PREFIX.match(prefix):
        raise ConfigError(
            f"{schema.__name__}.{name} has id_prefix={prefix!r}; use 1-4 letters starting "
            "with a capital, e.g. 'C'"
        )
    if prefix in prefixes:
        raise ConfigError(
            f"{schema.__name__}.{name} and .{prefixes[prefix]} both number their items "
            f"{prefix}1, {prefix}2, ...; give one of them summary_field(..., id_prefix='...')"
        )
    prefixes[prefix] = name
    binding = bool(meta.get("binding"))
    return FieldSpec(
        name,
        label,
        description,
        binding,
        prefix,
        max_items=_max_items(schema, name, meta.get("max_items"), binding=binding),
        kind=_kind(schema, name, meta.get("kind")),
        extract=_extract(schema, name, meta.get("extract"), claimed),
    )


def _template(schema: type[BaseSummary]) -> str | None:
    """The schema's own header template source, checked to be text."""
    template = schema.header_template
    if template is not None and not isinstance(template, str):
        raise ConfigError(
            f"{schema.__name__}.header_template is {type(template).__name__}; set it to the "
            "template's Jinja source text, e.g. Path('header.md.j2').read_text()"
        )
    return template


def _planning_tools(schema: type[BaseSummary]) -> tuple[PlanningTool, ...]:
    """The schema's planning tools, checked to be `PlanningTool` values with distinct names."""
    tools = schema.planning_tools
    if not isinstance(tools, tuple) or not all(isinstance(t, PlanningTool) for t in tools):
        raise ConfigError(
            f"{schema.__name__}.planning_tools is {tools!r}; set it to a tuple of "
            "progsum.summary._work.PlanningTool values, e.g. "
            "(PlanningTool(name='set_checklist', items='entries'),)"
        )
    names = [t.key for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(
            f"{schema.__name__}.planning_tools declares {twice[0]!r} twice; keep one mapping"
        )
    return tools


def _max_items(schema: type[BaseSummary], name: str, value: object, *, binding: bool) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"{schema.__name__}.{name} has max_items={value!r}; use a whole number of 1 or more, "
            "or leave it out for no cap"
        )
    if binding:
        raise ConfigError(
            f"{schema.__name__}.{name} is binding and has max_items={value}; binding items are "
            "never dropped, so remove max_items or make the field non-binding"
        )
    return value


def _kind(schema: type[BaseSummary], name: str, value: object) -> Kind:
    if value is None or value == "list":
        return "list"
    if value == "keyed":
        return "keyed"
    raise ConfigError(
        f"{schema.__name__}.{name} has kind={value!r}; use 'list' (items accumulate) or 'keyed' "
        "('key: value' items, a new value for a key replaces the old one)"
    )


def _extract(
    schema: type[BaseSummary], name: str, value: object, claimed: dict[str, str]
) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ConfigError(
            f"{schema.__name__}.{name} has extract={value!r}; give a list of extractor names, "
            'e.g. ["files"]'
        )
    kinds: list[str] = []
    for kind in value:
        if kind not in EXTRACTORS:
            raise ConfigError(
                f"{schema.__name__}.{name} has extract entry {kind!r}, which is no extractor; "
                f"the extractors are: {', '.join(EXTRACTORS)}"
            )
        if kind in claimed:
            raise ConfigError(
                f"{schema.__name__}.{name} and .{claimed[kind]} both extract {kind!r}; each "
                "extractor feeds one field, so remove it from one of them"
            )
        claimed[kind] = name
        kinds.append(kind)
    return tuple(kinds)


def item_key(text: str) -> str | None:
    """The key of a keyed item (``"Order A-1042: shipped"`` → ``"order a-1042"``), or None.

    The key is the text before the first colon followed by a space, compared without case and with
    whitespace collapsed; a colon inside a URL or a time (``https://``, ``10:30``) does not count.
    """
    key, sep, value = text.partition(": ")
    key = " ".join(key.casefold().split())
    return key if sep and key and value.strip() else None


def _is_items(annotation: object) -> bool:
    return get_origin(annotation) is tuple and get_args(annotation) == (Item, ...)
