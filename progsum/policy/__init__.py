"""The configuration of a compaction: when to compact, how much to keep, what to clear first.

`Policy` (trigger, target, tail, header budget, window) and `Reduction` (which old tool data is
cleared or clipped before any model call) are the two values a `Compactor` is configured with.
"""

from progsum.policy._policy import Policy
from progsum.policy._reduction import Reduction

__all__ = ["Policy", "Reduction"]
