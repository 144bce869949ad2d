"""Under ``pytest -n N`` each scenario file is parsed once per run, not once
per worker.

xdist has every worker collect every file (it checks that their collections
agree), and parsing is the part of collecting that grows with the suite.
So the workers share it.  The controller makes a private folder for the run
and names it in each worker's input.  A worker that is about to collect a
file it has no outcome for goes through every scenario file it has been
handed and not yet seen: it claims each one no worker has claimed yet (an
exclusive create), parses it and leaves the outcome in the folder: the
scenarios, the problems found, or that a YAML file in the default
scenarios folder is not a scenario file after all.  Then it reads what the
others left for the files they claimed, waiting while a live worker is
still parsing one.
Workers start from opposite ends of the list, so their claims rarely collide
and they finish at about the same time.

An outcome is the same data whoever parsed it, so every worker collects the
same scenarios and reports the same problems.  Nothing is shared in a run
without xdist.  The controller learns from the folder which files the
workers took as scenario files, and how long each scenario's session is,
without reading any of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scenario.build import Conversation

# How a file is parsed: its scenarios, None for YAML that turned out not to
# be a scenario file, or ScenarioError for its problems.
Parse = Callable[[], "list[Conversation] | None"]
# An outcome: ("scenarios", [Conversation, ...] or None) or ("problems",
# [Problem, ...]); ("parse here", None) when parsing failed in a way that is
# not the file's problem, so each worker parses it again where its error is
# reported.
Outcome = tuple[str, Any]
_NO_OUTCOME: Outcome = ("parse here", None)
# A worker that claimed a file and is alive is parsing it; one that cannot
# leave its outcome (a full disk) must not hold the others up for ever.
WAIT_LIMIT_S = 120.0


def make_folder() -> Path:
    """The run's folder, readable only by this user (outcomes are pickles)."""
    return Path(tempfile.mkdtemp(prefix="ctxeval-parsed-"))


def remove_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def file_key(path: Path | str) -> str:
    """The name of a file's entries in the folder: the same for the path a
    worker collects and the one the controller rebuilds from a node id."""
    return hashlib.sha1(os.path.normpath(os.fspath(path)).encode()).hexdigest()


def was_parsed(folder: Path, path: Path | str) -> bool:
    """Whether a worker collected ``path`` as a scenario file in this run."""
    return (folder / f"{file_key(path)}.scenario").exists()


def scenario_sizes(folder: Path, path: Path | str) -> dict[str, int]:
    """The characters of each scenario's session in ``path``, by scenario id,
    as the worker that parsed it noted them; empty when none were noted."""
    try:
        sizes = json.loads((folder / f"{file_key(path)}.scenario").read_text() or "{}")
    except (OSError, ValueError):
        return {}
    return sizes if isinstance(sizes, dict) else {}


def _sizes(conversations: list[Conversation]) -> dict[str, int]:
    from .messages import content_text

    return {c.id: sum(len(content_text(m)) for m in c.messages) for c in conversations}


class SharedParsing:
    """One worker's side: the scenario files it has been handed, the outcomes it
    parsed itself and the files other workers claimed."""

    def __init__(self, folder: Path, worker_index: int) -> None:
        self.folder = folder
        self._backwards = worker_index % 2 == 1
        self._pending: dict[str, Parse] = {}
        self._mine: dict[str, Outcome] = {}
        self._theirs: set[str] = set()

    def expect(self, path: Path, parse: Parse) -> None:
        """A file this worker will collect as a scenario file, and how to parse it."""
        self._pending[file_key(path)] = parse

    def conversations(self, path: Path, parse: Parse) -> list[Conversation] | None:
        """What ``parse`` gives for ``path``, run here or by another worker;
        a ScenarioError for its problems, as parsing it here would raise."""
        from .scenario.errors import ScenarioError

        key = file_key(path)
        if key not in self._mine and key not in self._theirs:
            self._pending.setdefault(key, parse)
            self._claim_pending()
        if key in self._mine:
            outcome = self._mine.pop(key)
        else:
            self._theirs.discard(key)
            outcome = self._wait_for(key)
        kind, value = outcome
        if kind == "scenarios":
            return value  # type: ignore[no-any-return]
        if kind == "problems":
            raise ScenarioError(value)
        return parse()

    def _claim_pending(self) -> None:
        from .scenario.errors import ScenarioError

        pending = list(self._pending.items())
        self._pending.clear()
        for key, parse in reversed(pending) if self._backwards else pending:
            claimed = self._claim(key)
            if claimed is None:  # the folder cannot be used: parse it when it is collected
                self._mine[key] = _NO_OUTCOME
                continue
            if not claimed:
                self._theirs.add(key)
                continue
            try:
                outcome: Outcome = ("scenarios", parse())
            except ScenarioError as problem:
                outcome = ("problems", problem.problems)
            except Exception:  # noqa: BLE001 - reported where that file is collected
                outcome = _NO_OUTCOME
            self._publish(key, outcome)
            self._mine[key] = outcome

    def _claim(self, key: str) -> bool | None:
        """True: this worker parses ``key``; False: another one does; None:
        the folder cannot be used."""
        try:
            fd = os.open(self.folder / f"{key}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        except OSError:
            return None
        with os.fdopen(fd, "w") as claim:
            claim.write(str(os.getpid()))
        return True

    def _publish(self, key: str, outcome: Outcome) -> None:
        try:
            data = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - something unpicklable: each worker parses it
            data = pickle.dumps(_NO_OUTCOME)
        try:
            kind, value = outcome
            if kind == "problems" or value is not None:
                # For the controller: see was_parsed, and scenario_sizes.
                sizes = _sizes(value) if kind == "scenarios" else {}
                (self.folder / f"{key}.scenario").write_text(json.dumps(sizes))
            partial = self.folder / f"{key}.{os.getpid()}.partial"
            partial.write_bytes(data)
            os.replace(partial, self.folder / f"{key}.outcome")  # all of it or nothing
        except OSError:
            pass  # the others parse it themselves once they stop waiting

    def _wait_for(self, key: str) -> Outcome:
        """The outcome another worker left for ``key``, once it is there; if
        that worker is gone without leaving one, or takes too long, parse here."""
        done = self.folder / f"{key}.outcome"
        give_up = time.monotonic() + WAIT_LIMIT_S
        pause = 0.0005
        while True:
            try:
                return pickle.loads(done.read_bytes())  # type: ignore[no-any-return]
            except FileNotFoundError:
                pass
            except Exception:  # noqa: BLE001 - unreadable: parse it here
                return _NO_OUTCOME
            if time.monotonic() > give_up or not (self._claimer_alive(key) or done.exists()):
                return _NO_OUTCOME
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def _claimer_alive(self, key: str) -> bool:
        try:
            pid = int((self.folder / f"{key}.claim").read_text() or 0)
        except (OSError, ValueError):
            return False
        if not pid:  # claimed a moment ago, its pid not yet written
            return True
        return _process_alive(pid)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A worker that crashed stays a zombie until xdist reaps it, and
    # kill(0) still succeeds on a zombie: Linux says so in /proc.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
