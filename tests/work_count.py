"""Work counted, not timed: how many function calls (Python and built-in) a
piece of code makes. Deterministic where wall-clock time is not (the machine
is shared), so a test can tell linear work from quadratic by doubling its input."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def calls_made(work: Callable[[], Any]) -> int:
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(previous)
    return count


def growth(work: Callable[[int], Any], size: int) -> float:
    """Calls made for ``2 * size`` over calls made for ``size``: about 2 when
    the work is linear in the size, about 4 when it is quadratic."""
    return calls_made(lambda: work(2 * size)) / calls_made(lambda: work(size))
