"""Where the repository-root data folders (`prompts/`, `schemas/`) are, installed or not.

A built wheel carries them inside the package (``progsum/_data/``, see ``pyproject.toml``); a source
checkout or an editable install reads them from the repository root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from progsum.errors import ProgsumError

__all__ = ["data_dir"]

_PACKAGE = Path(__file__).resolve().parent


def data_dir(kind: Literal["prompts", "schemas"]) -> Path:
    """The folder holding progsum's ``prompts`` or ``schemas``.

    Raises:
        ProgsumError: neither the installed copy nor the checkout's folder exists.
    """
    for candidate in (_PACKAGE / "_data" / kind, _PACKAGE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise ProgsumError(
        f"progsum's {kind}/ folder is missing (looked in {_PACKAGE / '_data' / kind} and "
        f"{_PACKAGE.parent / kind}); reinstall progsum from a wheel or a full source checkout"
    )
