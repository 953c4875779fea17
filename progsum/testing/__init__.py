"""Testing code that uses progsum, without a model or a network.

* Fakes: `FunctionSummarizer` and `QueuedSummarizer` record every request they receive
  (``.requests``), work sync and async, and implement the `progsum.summary._request.Summarizer`
  protocol::

      fake = QueuedSummarizer(SummaryUpdate(add={"constraints": ["Never touch the prod DB."]}))
      state = Compactor(policy=policy, summarizer=fake).compact(state, force=True)
      assert fake.requests[0].segment.start == 1

  The engine holds a fake to the same contract as a model (`progsum.contract`): a constraint
  stands only if a user message of the segment (or the kept first message) states it, and an
  item carrying a value the conversation does not hold is refused. Script conversations that say
  what the fake's updates record.

* `scripted_state` builds a compacted state from a scripted conversation (messages, with the update
  the fake model answers at each compaction), for snapshot tests of a schema's header.
* `summary_request` and `summarizer_prompt` show what a summarizer receives for a segment.
* `progsum.testing.snapshot` (needs syrupy) stores rendered headers as readable ``.md`` snapshot
  files: add ``pytest_plugins = ["progsum.testing.snapshot"]`` to ``conftest.py`` and use the
  ``snapshot_md`` fixture.
"""

from progsum.testing._fakes import (
    FIXED_TIME,
    FunctionSummarizer,
    QueuedSummarizer,
    scripted_state,
    segment_of,
    summarizer_prompt,
    summary_request,
)

__all__ = [
    "FIXED_TIME",
    "FunctionSummarizer",
    "QueuedSummarizer",
    "scripted_state",
    "segment_of",
    "summarizer_prompt",
    "summary_request",
]
