"""Declarative schemas: TOML files in ``schemas/`` (or the user's own) built into pydantic models.

A schema file names the objective field and the list fields compaction accumulates, with the
metadata `progsum.summary_field` takes (see schemas/README.md for the format). `load_schema` turns
one into a `BaseSummary` subclass that the engine, the summarizers and the renderer use exactly
like the built-in `Summary`; `schemas` lists the ones that ship. Files are read with the standard
library's `tomllib`, so a schema needs no Python and no new dependency.
"""

from __future__ import annotations

import os
import re
import threading
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import create_model

from progsum._resources import data_dir
from progsum._templates import compile_template
from progsum.errors import ConfigError
from progsum.summary._header import render_header
from progsum.summary._schema import (
    BaseSummary,
    Item,
    Items,
    Summary,
    objective_field,
    spec_of,
    summary_field,
)
from progsum.summary._work import PlanningTool

__all__ = ["SchemaInfo", "load_schema", "schemas"]

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
_FIELD_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TOP_KEYS = frozenset(
    {"name", "description", "objective", "fields", "header_template", "planning_tools"}
)
_OBJECTIVE_KEYS = frozenset({"name", "label", "description"})
_FIELD_KEYS = frozenset(
    {"name", "label", "description", "binding", "id_prefix", "max_items", "kind", "extract"}
)
_REQUIRED_FIELD_KEYS = ("name", "label", "description")
_TOOL_KEYS = frozenset(
    {"name", "items", "text", "status", "statuses", "id", "reason", "blocked_by", "creates"}
    | {"when", "family"}
)

_RESERVED = frozenset(
    {"retired", "retire", "work", "schema_name", "header_template", "planning_tools"}
    | {"model_config"}
)
"""Names a field cannot take: BaseSummary's own, and the summarizer's ``retire``."""

_cache: dict[tuple[str, str, str | None], type[BaseSummary]] = {}
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    """A schema that ships with progsum."""

    name: str
    description: str
    path: Path


def schemas() -> tuple[SchemaInfo, ...]:
    """The schemas that ship with progsum, by name; `load_schema` takes any of the names."""
    found = []
    for path in sorted(data_dir("schemas").glob("*.toml")):
        data = _read(path)
        found.append(
            SchemaInfo(str(data.get("name", path.stem)), str(data.get("description", "")), path)
        )
    return tuple(found)


def load_schema(name_or_path: str | os.PathLike[str]) -> type[BaseSummary]:
    """The summary schema a TOML file declares, as a pydantic model.

    Args:
        name_or_path: The name of a shipped schema (``"coding-agent"``, see `schemas`) or the path
            of a ``.toml`` file. ``"default"`` is `progsum.Summary` itself.

    Returns:
        A `BaseSummary` subclass; loading the same file again returns the same class.

    Raises:
        ConfigError: no such schema, or the file is invalid; the message names the file, the field
            and the fix.
    """
    path = _locate(name_or_path)
    text = path.read_text(encoding="utf-8")
    data = _parse(path, text)
    if path.parent == data_dir("schemas") and data.get("name") == "default":
        return Summary
    template = _template_source(path, data)
    key = (str(path.resolve()), text, template)
    with _lock:
        if key not in _cache:
            _cache[key] = _build(path, data, template)
        return _cache[key]


# -- reading --------------------------------------------------------------------------------------


def _locate(name_or_path: str | os.PathLike[str]) -> Path:
    if not isinstance(name_or_path, str | os.PathLike):
        names = ", ".join(info.name for info in schemas())
        raise ConfigError(
            f"load_schema({name_or_path!r}): give a shipped schema's name ({names}) or the path "
            "of your own .toml file"
        )
    text = os.fspath(name_or_path)
    is_path = isinstance(name_or_path, os.PathLike) or text.endswith(".toml") or os.sep in text
    if is_path or "/" in text:
        path = Path(text)
        if not path.is_file():
            raise ConfigError(f"schema file {path} does not exist; check the path")
        return path
    shipped = data_dir("schemas") / f"{text}.toml"
    if shipped.is_file():
        return shipped
    names = ", ".join(info.name for info in schemas())
    raise ConfigError(
        f"no shipped schema is called {text!r}; use one of: {names}, or pass the path of your own "
        ".toml file"
    )


def _read(path: Path) -> dict[str, Any]:
    return _parse(path, path.read_text(encoding="utf-8"))


def _parse(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}; fix the syntax") from exc


def _template_source(path: Path, data: dict[str, Any]) -> str | None:
    name = data.get("header_template")
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"{path}: header_template={name!r}; give the template's file name, relative to the "
            "schema file, e.g. 'my-schema.header.md.j2'"
        )
    template = path.parent / name
    if not template.is_file():
        raise ConfigError(
            f"{path}: header_template {name!r} not found at {template}; put the template next "
            "to the schema file or fix the name"
        )
    return template.read_text(encoding="utf-8")


# -- building -------------------------------------------------------------------------------------


def _build(path: Path, data: dict[str, Any], template: str | None) -> type[BaseSummary]:
    _keys(path, "the file", data, _TOP_KEYS, ("name", "description", "fields"))
    name = _string(path, "name", data["name"])
    if not _NAME.match(name):
        raise ConfigError(
            f"{path}: name={name!r}; use lowercase words joined by hyphens, e.g. 'coding-agent'"
        )
    _string(path, "description", data["description"])
    fields: dict[str, Any] = {}
    objective = data.get("objective")
    if objective is not None:
        if not isinstance(objective, dict):
            raise ConfigError(f"{path}: [objective] must be a table with name, label, description")
        _keys(path, "[objective]", objective, _OBJECTIVE_KEYS, _OBJECTIVE_KEYS)
        where = "[objective]"
        field_name = _field_name(path, where, objective["name"], objective=True)
        fields[field_name] = (
            str,
            objective_field(
                _string(path, f"{where}.label", objective["label"]),
                _string(path, f"{where}.description", objective["description"]),
            ),
        )
    declared = data["fields"]
    if not isinstance(declared, list) or not declared:
        raise ConfigError(
            f"{path}: fields must be a non-empty array of tables; add [[fields]] sections"
        )
    for position, entry in enumerate(declared):
        where = f"fields[{position}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: {where} must be a table; write it as a [[fields]] section")
        if isinstance(entry.get("name"), str):
            where = f"{where} ({entry['name']!r})"
        _keys(path, where, entry, _FIELD_KEYS, _REQUIRED_FIELD_KEYS)
        field_name = _field_name(path, where, entry["name"])
        if field_name in fields:
            raise ConfigError(f"{path}: {where}: the name {field_name!r} is used twice; rename one")
        binding = entry.get("binding", False)
        if not isinstance(binding, bool):
            raise ConfigError(f"{path}: {where}: binding={binding!r}; write true or false")
        fields[field_name] = (
            Items,
            summary_field(
                _string(path, f"{where}.label", entry["label"]),
                _string(path, f"{where}.description", entry["description"]),
                binding=binding,
                id_prefix=entry.get("id_prefix"),
                max_items=entry.get("max_items"),
                kind=entry.get("kind", "list"),
                extract=tuple(_extract_names(path, where, entry.get("extract", []))),
            ),
        )
    class_name = "".join(part.capitalize() for part in name.split("-")) + "Summary"
    model: type[BaseSummary] = create_model(class_name, __base__=BaseSummary, **fields)
    model.schema_name = name
    model.header_template = template
    model.planning_tools = _planning_tools(path, data.get("planning_tools", []))
    model.__doc__ = str(data["description"])
    try:
        spec_of(model)
        _try_render(model)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    return model


def _planning_tools(path: Path, declared: object) -> tuple[PlanningTool, ...]:
    """The ``[[planning_tools]]`` tables of a schema file as `PlanningTool` mappings."""
    if not isinstance(declared, list):
        raise ConfigError(
            f"{path}: planning_tools must be an array of tables; write [[planning_tools]] sections"
        )
    tools = []
    for position, entry in enumerate(declared):
        where = f"planning_tools[{position}]"
        if not isinstance(entry, dict):
            raise ConfigError(
                f"{path}: {where} must be a table; write a [[planning_tools]] section"
            )
        _keys(path, where, entry, _TOOL_KEYS, ("name",))
        for key in ("statuses", "when"):
            table = entry.get(key, {})
            if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
                raise ConfigError(
                    f"{path}: {where}.{key} must be a table of strings, e.g. "
                    f'[planning_tools.{key}] with open = "pending"'
                )
        flags = {k: v for k, v in entry.items() if k not in ("creates", "statuses", "when")}
        if not all(isinstance(v, str) for v in flags.values()):
            raise ConfigError(f"{path}: {where}: name, items, text, status, id, ... are strings")
        if not isinstance(entry.get("creates", False), bool):
            raise ConfigError(f"{path}: {where}: creates must be true or false")
        try:
            tools.append(PlanningTool(**entry))
        except ConfigError as exc:
            raise ConfigError(f"{path}: {where}: {exc}") from exc
    return tuple(tools)


def _try_render(model: type[BaseSummary]) -> None:
    """Render a sample summary with one item per field, so a template mistake shows at load."""
    spec = spec_of(model)
    sample: dict[str, Any] = {
        f.name: (Item(id=f"{f.id_prefix}1", text="sample", source=(1, 2)),) for f in spec.lists
    }
    if spec.objective is not None:
        sample[spec.objective.name] = "sample"
    if spec.template is not None:
        compile_template(spec.template)
    try:
        render_header(model(**sample), folded=(1, 2), compactions=1)
    except ConfigError:
        raise
    except Exception as exc:  # a Jinja runtime error: undefined variable, bad filter, ...
        raise ConfigError(
            f"the header template fails to render: {exc}; use only the variables listed in "
            "prompts/README.md"
        ) from exc


def _extract_names(path: Path, where: str, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(kind, str) for kind in value):
        raise ConfigError(
            f'{path}: {where}: extract={value!r}; write a list of extractor names, e.g. ["files"]'
        )
    return value


def _keys(
    path: Path, where: str, table: dict[str, Any], allowed: frozenset[str], required: Iterable[str]
) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(
            f"{path}: {where}: unknown key {unknown[0]!r}; the keys are "
            f"{', '.join(sorted(allowed))}"
        )
    missing = [key for key in required if key not in table]
    if missing:
        raise ConfigError(f'{path}: {where}: missing {missing[0]!r}; add {missing[0]} = "..."')


def _string(path: Path, where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: {where}={value!r}; write a non-empty string")
    return value.strip()


def _field_name(path: Path, where: str, value: object, *, objective: bool = False) -> str:
    name = _string(path, f"{where}.name", value)
    if not _FIELD_NAME.match(name):
        raise ConfigError(
            f"{path}: {where}: name={name!r}; use a lowercase Python identifier, e.g. "
            "'open_threads'"
        )
    if name in _RESERVED or (name == "objective" and not objective):
        raise ConfigError(
            f"{path}: {where}: name={name!r} is reserved by progsum; choose another, e.g. "
            f"'{name}_items'"
        )
    return name
