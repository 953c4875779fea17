"""The typed summary: schemas, the update a summarizer returns, the merge and the header.

`Summary`, `BaseSummary`, `Items`, `summary_field`, `load_schema` and `SummaryUpdate` are offered
by `progsum` (docs/schemas.md). This package offers what a schema may declare beside its fields:

* `PlanningTool`: how to read one of the agent's planning tools into the work ledger
  (``planning_tools = (PlanningTool(...),)`` on a `BaseSummary` subclass, docs/work.md).

Its modules are private (underscore names) and may change.
"""

from progsum.summary._work import PlanningTool

__all__ = ["PlanningTool"]
