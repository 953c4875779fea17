"""Write progsum/messages/data/lookalikes.tsv: what each look-alike character reads as.

    pip download --no-deps confusable-homoglyphs==3.3.1 -d /tmp/ch && unzip /tmp/ch/*.whl -d /tmp/ch
    python bench/lookalikes.py /tmp/ch/confusable_homoglyphs/confusables.json

The table maps a character to the ASCII letter, digit or delimiter (``< > / _``) a reader takes it
for, after Unicode NFKC and case folding; `progsum.messages._reading` folds text with it before a
forged delimiter or item id is looked for. Two sources, both Unicode's own data:

* the confusables of Unicode Technical Standard #39 (``confusables.txt``: each character with
  its prototype), as the ``confusable-homoglyphs`` 3.3.1 package ships them in
  ``confusables.json`` (MIT; the data is Unicode's, under the Unicode License v3): a character
  whose prototype is one ASCII character of the targets reads as it (Cyrillic Ie as "e",
  U+2039 SINGLE LEFT-POINTING ANGLE QUOTATION MARK as "<");
* the Unicode character names of this Python's ``unicodedata``: a character named a less-than
  or greater-than sign, or a single left- or right-pointing angle bracket or quotation mark, reads
  as ``<`` or ``>`` (U+27E8 MATHEMATICAL LEFT ANGLE BRACKET, which UTS #39 leaves out).

Every code point is read (NFKC, then case folding, then the prototypes), and each non-ASCII one
that reads as a single target character different from itself is written, sorted, so the table
also holds what NFKC alone folds (fullwidth and mathematical letters).
"""

from __future__ import annotations

import argparse
import json
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

TARGETS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789<>/_")
OUT = Path(__file__).resolve().parents[1] / "progsum" / "messages" / "data" / "lookalikes.tsv"
_ANGLE = re.compile(
    r"^(?:(?:SMALL|FULLWIDTH) )?(?:(?P<sign>LESS|GREATER)-THAN SIGN|(?:[A-Z]+ )*"
    r"(?P<side>LEFT|RIGHT)(?:-POINTING)? ANGLE (?:BRACKET|QUOTATION MARK)(?: ORNAMENT)?)$"
)
"""Names of angle brackets read as ``<`` or ``>``; double ones and vertical forms excluded."""


def prototypes(confusables: Path) -> dict[str, str]:
    """Each character whose UTS #39 prototype, or whose name, makes it read as a target."""
    data = json.loads(confusables.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for char, entries in data.items():
        if len(char) != 1 or char.isascii():
            continue
        ascii_ones = {e["c"] for e in entries if len(e["c"]) == 1 and e["c"].isascii()}
        if len(ascii_ones) == 1:  # the line "char -> prototype" (the data lists both ways)
            (prototype,) = ascii_ones
            found[char] = prototype.casefold()
    for code in range(0x80, 0x110000):
        match = _ANGLE.match(unicodedata.name(chr(code), ""))
        if match and "VERTICAL" not in match.group(0):
            opening = match.group("sign") == "LESS" or match.group("side") == "LEFT"
            found[chr(code)] = "<" if opening else ">"
    return found


def reading(char: str, table: dict[str, str]) -> str:
    """What ``char`` reads as: NFKC, case folding, then each piece's prototype."""
    pieces = unicodedata.normalize("NFKC", char).casefold()
    return "".join(table.get(piece, piece) for piece in pieces)


def main(argv: Sequence[str] | None = None) -> None:
    """Read the confusables, read every code point, write the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("confusables", type=Path, help="confusable-homoglyphs' confusables.json")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    table = prototypes(args.confusables)
    rows = []
    for code in range(0x80, 0x110000):
        char = chr(code)
        if unicodedata.category(char) in ("Cs", "Cn", "Co"):
            continue
        read = reading(char, table)
        if len(read) == 1 and read in TARGETS and read != char.casefold():
            rows.append(f"{code:04X}\t{read}")
    header = (
        "# What each character reads as (progsum.messages._reading): code point, tab, reading.\n"
        "# Written by bench/lookalikes.py from Unicode's UTS #39 confusables (Unicode License v3)\n"
        f"# and Unicode {unicodedata.unidata_version} character names; do not edit by hand.\n"
    )
    args.out.write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    print(f"{len(rows)} characters written to {args.out}")


if __name__ == "__main__":
    main()
