"""What the session does for the run history, in the order it does it:
read the latest results before this run writes (``before_writing``), merge
a partial rerun into them (``merge``), then keep the run (``save``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .options import HistoryOptions

if TYPE_CHECKING:
    from ..options import CtxOptions
    from ..output_loss import RunOutputs
    from ..results.record import ResultRecord
    from ..results.run_info import RunInfo
    from .packing import Packing
    from .partial import PreviousResults


class RunHistory:
    def __init__(self, options: HistoryOptions, run: CtxOptions, *, root: Path) -> None:
        self.options = options
        self.results = run.results
        self.model = run.model
        self.repeat = run.repeat
        self.root = root  # the scenario paths in the records are relative to it
        # A shard's results are its part of one CI run: never merged.
        self.merges = not (options.fresh or run.shard is not None)
        # Read only once the run has scenarios: a run without them imports nothing heavy.
        self._previous: PreviousResults | None = None
        self._packing: Packing | None = None
        self.saved: Path | None = None

    @property
    def previous(self) -> PreviousResults:
        if self._previous is None:
            from .partial import PreviousResults

            self._previous = PreviousResults()
        return self._previous

    def before_writing(self) -> None:
        if self.merges:
            self.previous.read(self.results)
        if self.options.keep_runs > 0:
            from .packing import Packing
            from .store import runs_folder

            # The kept runs' results compressed while this run works.
            self._packing = Packing(runs_folder(self.results))

    def merged(self, records: list[ResultRecord], outputs: RunOutputs) -> list[ResultRecord]:
        """The records the results file and the report hold: this run's and,
        for a partial rerun, the earlier ones that still stand (see partial).
        The results file is rewritten whole when any earlier one is kept; a
        failed rewrite is noted in ``outputs`` (the file keeps this run's)."""
        if not self.merges:
            return records
        merged = self.previous.merged(records, model=self.model, repeat=self.repeat, root=self.root)
        if self.previous.kept:
            from .store import write_records

            try:
                write_records(self.results, merged)
            except OSError as exc:
                outputs.lost(self.results, "the earlier runs' items", exc)
        return merged

    def keep(
        self,
        records: list[ResultRecord],
        run_info: RunInfo,
        written: dict[str, Path],
        outputs: RunOutputs,
    ) -> None:
        """``save``, noting the folder in ``written`` or a failure in ``outputs``."""
        # The results file holds ``records`` (this run's, and the earlier
        # ones a partial rerun kept) unless a write to it failed.
        results = self.results if outputs.holds_every_record() else None
        try:
            saved = self.save(records, run_info, written.get("report"), results_file=results)
        except OSError as exc:
            from .store import runs_folder

            outputs.lost(runs_folder(self.results), "the run history", exc)
            return
        if saved is not None:
            written["run history"] = saved

    def save(
        self,
        records: list[ResultRecord],
        run_info: RunInfo,
        report: Path | None,
        *,
        results_file: Path | None = None,
    ) -> Path | None:
        """Keep this run under runs/<run_id>/ (OSError when that fails)."""
        from .store import marker_text, runs_folder, save_run

        if self._packing is not None:  # done with the runs that pruning may remove
            self._packing.wait()

        marker = marker_text(
            run_info.run_id,
            records,
            started_at=run_info.started_at,
            git_commit=run_info.git_commit,
            model=run_info.model,
            strategies=sorted(run_info.strategies),
        )
        self.saved = save_run(
            runs_folder(self.results),
            run_info.run_id,
            records,
            report=report,
            marker=marker,
            keep=self.options.keep_runs,
            results_file=results_file,
        )
        return self.saved

    def lines(self) -> list[str]:
        """For the terminal summary: what a partial rerun kept."""
        kept = self._previous.kept if self._previous is not None else 0
        if not kept:
            return []
        items = "item" if kept == 1 else "items"
        return [
            f"ctxeval: the results and the report also hold {kept} {items} from earlier runs "
            "(this run selected only some; --ctx-fresh replaces them instead)"
        ]
