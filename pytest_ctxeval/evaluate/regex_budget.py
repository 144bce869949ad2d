"""Time for ``regex`` / ``not_regex`` checks, bounded three ways.

Each search stops after REGEX_TIMEOUT_S; but ten catastrophic patterns
("(a|aa)+$") in a 1 KB file would still cost ten times that per strategy,
and a matrix multiplies it into hours.  So the searches of one scenario file
share a budget (``CTXEVAL_MAX_REGEX_SECONDS``, default 10 s), and all the
searches of a run another (``CTXEVAL_MAX_REGEX_RUN_SECONDS``, default 60 s;
each xdist worker counts its own).  A search gets at most what is left;
once a budget is spent, the searches it covers are not run and their items
are ``error``s that say so.  The same search on the same text is done once:
a full-context answer scored for every strategy costs one search."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict

import regex

from ..scenario.limits import InvalidLimit, Limits, env_name
from .uncheckable import UncheckableAnswer

# Seconds one search may take.  A pattern that backtracks catastrophically
# ("(a+)+$") on a long answer would otherwise hang the run.
REGEX_TIMEOUT_S = 2.0

_CACHED = 1024  # searches remembered (keyed by a digest of the text)


class RegexBudget:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.run_left = float(limits.regex_run_seconds)
        self.file_left: dict[str, float] = {}
        self._done: OrderedDict[tuple[str, int, bytes], bool | str] = OrderedDict()
        self._lock = threading.Lock()

    def search(self, pattern: str, text: str, flags: int, source: str | None) -> bool:
        """Whether ``pattern`` is found in ``text``; UncheckableAnswer when
        the search ran out of time, or its file's or the run's time is spent."""
        key = (pattern, flags, hashlib.blake2b(text.encode("utf-8", "surrogatepass")).digest())
        with self._lock:
            done = self._done.get(key)
            if done is None:
                allowed, why = self._allowance(source)
        if isinstance(done, bool):
            return done
        if isinstance(done, str):
            raise UncheckableAnswer(done)
        if allowed <= 0:
            raise UncheckableAnswer(f"regex /{pattern}/ not run: {why}")
        start = time.monotonic()
        try:
            found: bool | str = regex.search(pattern, text, flags, timeout=allowed) is not None
        except TimeoutError:
            size = f"a {len(text):,}-char answer"
            found = f"regex /{pattern}/ took longer than its {allowed:g} s limit on {size}"
            if allowed < REGEX_TIMEOUT_S:  # a budget, not the search's own limit, cut it short
                found = (
                    f"regex /{pattern}/ took longer than the {allowed:.2g} s left on {size}; {why}"
                )
        finally:
            self._spend(source, time.monotonic() - start)
        with self._lock:
            self._done[key] = found
            if len(self._done) > _CACHED:
                self._done.popitem(last=False)
        if isinstance(found, str):
            raise UncheckableAnswer(found)
        return found

    def _allowance(self, source: str | None) -> tuple[float, str]:
        """Seconds the next search may take, and what bounds it."""
        options = [(REGEX_TIMEOUT_S, "")]
        if source is not None:
            left = self.file_left.setdefault(source, float(self.limits.regex_seconds))
            options.append((left, self._spent_file(source)))
        options.append((self.run_left, self._spent_run()))
        return min(options, key=lambda option: option[0])

    def _spend(self, source: str | None, seconds: float) -> None:
        with self._lock:
            self.run_left -= seconds
            if source is not None:
                self.file_left[source] = self.file_left.get(source, 0.0) - seconds

    def _spent_file(self, source: str) -> str:
        return (
            f"the {self.limits.regex_seconds:,} s of regex time of {source} is spent "
            f"(set {env_name('regex_seconds')} to raise it)"
        )

    def _spent_run(self) -> str:
        return (
            f"the {self.limits.regex_run_seconds:,} s of regex time of this run is spent "
            f"(set {env_name('regex_run_seconds')} to raise it)"
        )


_BUDGET: RegexBudget | None = None
_BUDGET_LOCK = threading.Lock()


def regex_budget() -> RegexBudget:
    """This process's budget, with the limits of the environment when first asked."""
    global _BUDGET
    with _BUDGET_LOCK:
        if _BUDGET is None:
            try:
                limits = Limits.from_env()
            except InvalidLimit:  # the loader reports it, naming the variable
                limits = Limits()
            _BUDGET = RegexBudget(limits)
        return _BUDGET


def reset_regex_budget() -> None:
    """A new run (pytest in-process runs several in one process)."""
    global _BUDGET
    with _BUDGET_LOCK:
        _BUDGET = None
