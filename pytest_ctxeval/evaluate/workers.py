"""Run model-call jobs in threads that Ctrl-C can walk away from.

A ThreadPoolExecutor will not do: its worker threads are joined when the
interpreter exits, so after Ctrl-C the process would wait for every call
in flight, and a server that never answers would keep it alive for good.
Here the workers are daemon threads that nothing joins: on
KeyboardInterrupt the waiting thread stops waiting, jobs not yet started
never start, and calls in flight are abandoned (they end with their socket,
or with the process).  The answers that did arrive ride on the interrupt
(``finished_before``), so the items they complete keep their records.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

_K = TypeVar("_K", bound=Hashable)
_T = TypeVar("_T")


def finished_before(interrupt: KeyboardInterrupt) -> dict[Any, Any]:
    """The results of the jobs that had finished when Ctrl-C came (none
    when it came from outside ``run_jobs``).  They ride on the interrupt
    itself, so pytest still reports a plain KeyboardInterrupt."""
    return getattr(interrupt, "ctxeval_finished", {})


def run_jobs(jobs: dict[_K, Callable[[], _T]], workers: int) -> dict[_K, _T]:
    """Each job's result by key, with at most ``workers`` jobs running at once.

    A job that raises makes this raise the same exception once it is the
    first to finish that way (callers hand in jobs that catch their own
    errors).  With one worker or one job, jobs run in the calling thread."""
    results: dict[_K, _T] = {}
    if workers <= 1 or len(jobs) <= 1:
        try:
            for key, job in jobs.items():
                results[key] = job()
        except KeyboardInterrupt as interrupt:
            interrupt.ctxeval_finished = results  # type: ignore[attr-defined]
            raise
        return results
    todo: queue.SimpleQueue[tuple[_K, Callable[[], _T]]] = queue.SimpleQueue()
    for item in jobs.items():
        todo.put(item)
    done: queue.SimpleQueue[tuple[_K, bool, Any]] = queue.SimpleQueue()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                key, job = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((key, True, job()))
            except BaseException as exc:  # handed to the waiting thread
                done.put((key, False, exc))

    for n in range(min(workers, len(jobs))):
        threading.Thread(target=work, name=f"ctxeval-model-{n}", daemon=True).start()
    try:
        while len(results) < len(jobs):
            # A blocking queue wait: Ctrl-C interrupts it in the main thread.
            key, ok, value = done.get()
            if not ok:
                raise value
            results[key] = value
    except KeyboardInterrupt as interrupt:
        interrupt.ctxeval_finished = dict(results)  # type: ignore[attr-defined]
        raise
    finally:
        # On an interrupt or a failed job, no queued job starts any more.
        stop.set()
    return {key: results[key] for key in jobs}
