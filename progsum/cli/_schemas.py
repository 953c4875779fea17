"""``progsum schemas [NAME]``: the shipped summary schemas, or the fields of one."""

from __future__ import annotations

import argparse
import sys

from progsum.cli._options import schema_named
from progsum.summary._files import schemas
from progsum.summary._schema import spec_of

__all__ = ["run_schemas"]


def run_schemas(args: argparse.Namespace) -> int:
    """List the shipped schemas, or the fields of ``NAME``; exit status 0."""
    out = sys.stdout
    if args.name is None:
        shipped = schemas()
        width = max(len(info.name) for info in shipped)
        for info in shipped:
            out.write(f"{info.name:<{width}}  {info.description}\n")
        return 0
    spec = spec_of(schema_named(args.name))
    out.write(f"{args.name} ({spec.model.__name__})\n")
    if spec.objective is not None:
        objective = spec.objective
        out.write(f"  {objective.name}: {objective.label}. {objective.description}\n")
    for field in spec.lists:
        binding = ", binding" if field.binding else ""
        out.write(
            f"  {field.name} [{field.id_prefix}1, {field.id_prefix}2, ...{binding}]: "
            f"{field.label}. {field.description}\n"
        )
    return 0
