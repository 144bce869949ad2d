"""A run that selects only some items (-k, -m, --lf, node ids, --deselect,
-x stopping early) updates them in the latest results instead of replacing
them all.

The rule, one test per earlier record: it is kept when this run has no
record of the same item, it was measured with the same model and repeat
count, its strategy is one this run ran, and its scenario file still defines
its scenario and probe (read as the gate reads what a results file should
have had, see gate.completeness).  So a full run replaces everything, a rerun
of some items keeps the rest, and items whose scenario, probe or strategy is
gone are dropped instead of lingering.  A kept record keeps its own run id
and start time: the report says which run it came from.

The records kept are held as a run holds its own: what a session's records
share (its fact ledger, its per-request series) as one object, and out of
the cycle collector's full passes (see kept_objects).  Rerunning one
LoCoMo-size conversation keeps some 15,000 earlier records, millions of
small lists: parsed with the collector walking them again and again, they
took 24 s, and 3 GB as copies.

Nothing is merged under ``--ctx-fresh`` or ``--ctx-shard`` (a shard's
results are its own part of one CI run, joined by ``ctxeval merge``)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, ConfigDict

from ..gate.baseline import Key, record_key
from ..gate.compare import Scope
from ..kept_objects import FREEZE_EVERY_RECORDS, keep_out_of_full_collections
from ..results.record import ResultRecord
from ..results.record_lines import RecordLines


class _Earlier(BaseModel):
    """What the merge rule reads of an earlier record.  The rest of its line
    (its window trace, its fact ledger: nearly all of it) is parsed only when
    the record is kept, and a full run keeps none."""

    model_config = ConfigDict(extra="ignore")

    scenario: str
    scenario_file: str = ""
    strategy: str
    model: str
    probe: str
    repeat: int = 1

    @property
    def key(self) -> Key:
        return (self.scenario_file, self.scenario, self.strategy, self.probe)


class PreviousResults:
    """The latest results as they were before this run started writing.

    Before the run writes, each earlier record's key is read and its line
    left where it is: the file gets a second name, a hard link beside the
    results file (this run writes its results to a new file, so the link
    keeps the old one whole), and only the lines a partial rerun keeps are
    read again at the end.  At LoCoMo size the earlier results are hundreds
    of MB, which the run would otherwise hold in memory throughout.  Where
    the file system has no hard links, the lines are held instead."""

    def __init__(self) -> None:
        self.kept = 0
        # Each earlier record: what the rule reads, and where its line is.
        self.earlier: list[tuple[_Earlier, int, int]] = []
        self._aside: Path | None = None  # the earlier results' second name
        self._held: bytes | None = None  # or their bytes, where there is none

    def read(self, path: Path) -> None:
        """Keep ``path`` before this run replaces it; a file that is missing
        or unreadable, or a line that is not a record, merges nothing (the
        run then replaces it, as always)."""
        if path.is_symlink() or not path.is_file():
            return
        aside = path.with_name(f".{path.name}.before-this-run")
        try:
            aside.unlink(missing_ok=True)  # a run that was killed left it
            os.link(path, aside, follow_symlinks=False)
            self._aside = aside
        except (OSError, NotImplementedError):  # no hard links here: hold the bytes
            try:
                self._held = path.read_bytes()
            except OSError:
                return
        try:
            self.earlier = list(self._keys())
        except (OSError, ValueError):
            self.forget()

    def _keys(self) -> Iterator[tuple[_Earlier, int, int]]:
        with self._open() as fh:
            offset = 0
            for line in fh:
                if line.strip():
                    yield _Earlier.model_validate_json(line), offset, len(line)
                offset += len(line)

    def _open(self) -> BinaryIO:
        if self._held is not None:
            return io.BytesIO(self._held)
        assert self._aside is not None
        return self._aside.open("rb")

    def forget(self) -> None:
        """Drop the earlier results and their second name."""
        if self._aside is not None:
            self._aside.unlink(missing_ok=True)
            self._aside = None
        self._held = None
        self.earlier = []

    def merged(
        self, records: list[ResultRecord], *, model: str, repeat: int, root: Path
    ) -> list[ResultRecord]:
        """This run's records with the earlier ones that still stand, in the
        earlier file's order with this run's in their places, new ones last."""
        self.kept = 0
        try:
            if records and self.earlier:
                return self._merged(records, model=model, repeat=repeat, root=root)
        except (OSError, ValueError):  # an earlier line that is not a record: merge nothing
            self.kept = 0
        finally:
            self.forget()
        return list(records)

    def _merged(
        self, records: list[ResultRecord], *, model: str, repeat: int, root: Path
    ) -> list[ResultRecord]:
        from ..gate.completeness import scenario_scope

        scope = scenario_scope(records, root)
        stands = _standing(scope, root)
        mine: dict[Key, ResultRecord] = {record_key(r): r for r in records}
        out: list[ResultRecord] = []
        placed: set[Key] = set()
        lines = RecordLines()
        with self._open() as fh:
            for old, offset, length in self.earlier:
                key = old.key
                if key in placed:
                    continue
                if key in mine:
                    out.append(mine[key])
                    placed.add(key)
                elif old.model == model and old.repeat == repeat and stands(key):
                    fh.seek(offset)
                    record = lines.record(fh.read(length).decode("utf-8"))
                    out.append(record)
                    placed.add(key)
                    self.kept += 1
                    if self.kept % FREEZE_EVERY_RECORDS == 0:
                        keep_out_of_full_collections()
        out.extend(r for r in records if record_key(r) not in placed)
        return out


def _standing(scope: Callable[[Key], Scope], root: Path) -> Callable[[Key], bool]:
    """Whether an earlier item still exists: a probe the scenarios still have
    under a strategy this run ran, or a rollout item of a scenario still there
    (a rollout has no probe of that name in the file)."""
    from ..evaluate.rollout.script import ROLLOUT_ID
    from ..gate.completeness import _read

    files: dict[str, dict[str, set[str]] | None] = {}

    def stands(key: Key) -> bool:
        found = scope(key)
        if found == "expected":
            return True
        scenario_file, scenario, _, probe = key
        if found == "out" or probe != ROLLOUT_ID:
            return False
        if scenario_file not in files:
            files[scenario_file] = _read(root / scenario_file, root)
        held = files[scenario_file]
        return held is not None and scenario in held

    return stands
