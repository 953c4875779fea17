"""The compaction pipeline: measure, plan, reduce, cut, fold, enforce, merge, observe.

`Compactor` (offered by `progsum`) drives these stages, each a function over frozen values, with
one sync and one async driver.

Internal: the modules here are private (underscore names) and may change; use `progsum.Compactor`.
"""

__all__: list[str] = []
