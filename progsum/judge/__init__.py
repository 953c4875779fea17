"""The text-judgement seam: every judgement progsum makes about a sentence goes through one `Judge`.

* `Judge`: the protocol (``sentences(text)`` and ``judge(sentence, context)``); pass one to
  ``Compactor(judge=...)``.
* `using`: a context manager that makes a judge the one every progsum call inside it asks.
* `Context` and `Judgement`: what a judge is given about a sentence and what it answers.

The shipped judge learns from labelled data (docs/judge.md); its modules are private.
"""

from progsum.judge._judgement import Context, Judgement
from progsum.judge._seam import Judge, using

__all__ = ["Context", "Judge", "Judgement", "using"]
