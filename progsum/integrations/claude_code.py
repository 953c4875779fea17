"""A Claude Code hook that hands progsum's binding summary back after Claude Code compacts.

Claude Code's own compaction replaces the conversation with a prose summary. Run this command on
two hook events (settings JSON in the README) and the typed, binding header survives it:

* ``PreCompact`` (matcher ``manual|auto``): reads the live transcript (``transcript_path``; its
  last line may be half written, and is then left for the next run), folds everything but the
  last few messages into progsum's summary, and saves progsum's state next to the transcript
  (``<transcript>.progsum.json``). A later compaction of the same session resumes from that
  state, so each one adds to the same summary instead of starting over.
* ``SessionStart`` with source ``compact``: prints the header as ``additionalContext``, which
  Claude Code adds to the context right after its own summary.

Hook protocol (Claude Code hooks reference): the event arrives as JSON on stdin with
``session_id``, ``transcript_path`` and ``hook_event_name``; a ``SessionStart`` hook adds context
by printing ``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext":
...}}``. The command never blocks Claude Code: any failure is one line on stderr and exit 0.

    python -m progsum.integrations.claude_code [--keep N] [--schema NAME] [--summarizer KIND]
"""

from progsum.integrations._claude_code import hook, main, read_transcript, state_path

__all__ = ["hook", "main", "read_transcript", "state_path"]

if __name__ == "__main__":
    raise SystemExit(main())
