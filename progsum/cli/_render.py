"""``progsum render STATE.json``: a saved state as the summary header and the view.

Reads what ``progsum compact --save`` writes and the Claude Code hook's
``<transcript>.progsum.json`` (its messages from the transcript beside it; `progsum.cli._states`).
"""

from __future__ import annotations

import argparse
import sys

from progsum.cli._output import write_view
from progsum.cli._states import read_state

__all__ = ["run_render"]


def run_render(args: argparse.Namespace) -> int:
    """Print the saved state ``STATE.json`` as the header and the view; exit status 0."""
    saved = read_state(args.state, args.schema)
    state = saved.state
    write_view(sys.stdout, state, None, as_json=args.json)
    compactions = sum(e.outcome == "compacted" for e in state.events)
    source = f", read with its transcript {saved.transcript.name}" if saved.transcript else ""
    sys.stderr.write(
        f"{len(state)} messages logged, {state.effective_length} verbatim, "
        f"{compactions} compaction(s){source}\n"
    )
    return 0
