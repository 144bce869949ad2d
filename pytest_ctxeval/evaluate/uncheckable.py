"""The exception for an answer that cannot be scored."""

from __future__ import annotations


class UncheckableAnswer(ValueError):
    """An answer no check can give a verdict on in bounded time and memory
    (a regex that runs past its time limit, code past the size code checks
    read).  Not a failed check: the item becomes an ``error`` record with
    this message, and the run goes on."""
