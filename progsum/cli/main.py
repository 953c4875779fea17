"""The ``progsum`` command line: compact, replay and render conversations from files.

Commands (``progsum COMMAND --help`` for every option):

* ``progsum compact FILE``: compact a conversation under a token budget and print what a model
  would be sent: the summary header and the verbatim messages (``--json``: the provider-ready
  request fields). A report goes to stderr: tokens before and after, items per field, model
  calls and cost.
* ``progsum replay FILE``: feed the conversation turn by turn through ``maybe_compact``, as an
  agent would, printing one line per compaction; ``--probes probes.json`` checks which facts
  survive to the end, beside plain truncation at the same budget (`progsum.replay._probes`).
* ``progsum render STATE.json``: a state saved by ``compact --save`` or
  ``ConversationState.to_json()``, as the header and the view.
* ``progsum schemas [NAME]``: the summary schemas and their fields.
* ``progsum store init URL``: create or upgrade a store's tables (`progsum.cli._store`).

Messages are numbered from 1, as in the summary header and in the placeholders of cleared tool
output. Input files are read by `progsum.replay._importers` (Anthropic or OpenAI JSON and JSON
Lines,
Claude Code session logs, τ-bench records, SWE-agent trajectories). Without
``ANTHROPIC_API_KEY`` the extractive summarizer runs offline. Bad input is one line on stderr and
exit status 1 (bad file) or 2 (bad usage), never a traceback. When ``compact`` prints a context
that is still over the model's input window, the report says why in one line and the exit status
is 3 (``--allow-overflow`` accepts it: status 0).

`main` is the console entry point. Each command is a module of `progsum.cli` (``compact``,
``replay``, ``render``, ``schemas``, ``store``) whose options `progsum.cli._parser` declares;
`progsum.cli._options` turns them into values, `progsum.cli._summarizer` picks the summarizer and
`progsum.cli._output` prints. `budget_policy`, `DEFAULT_BUDGET` and `PRICES` are re-exported for
scripts (``bench/``).
"""

from progsum.cli._main import main

__all__ = ["main"]
