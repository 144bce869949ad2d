"""The end of a run on the controller: the results file closed, the gate's
decision, the report, the run history, the baseline and the Markdown
summary written, each on its own (a write that fails is noted as a lost
output; the rest are still written)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .gate.run import GateResult
    from .session import CtxSession


def finish_session(self: CtxSession) -> dict[str, Path]:
    """Close the results file and write the report; returns what was written.

    A run in which no ctxeval item was selected writes nothing, so the
    previous run's results and report stay side by side.  A run that
    selected items but recorded none (interrupted) still empties the
    results file: it sits next to this run's report.  What cannot be
    written is in ``losses``; the rest is still written."""
    if not (self.will_record or self.records):
        return {}
    written: dict[str, Path] = {}
    if self.outputs.close():
        written["results"] = self.options.results
    try:
        self.gate_result = _finish_gate(self)
    except OSError as exc:
        self.outputs.lost(
            self.options.baseline, "the baseline update (the old baseline is as it was)", exc
        )
    from .report.html import write_report

    # The gate above judged this run's records only; the report shows a
    # partial rerun's items with the earlier ones that still stand.
    whole = self.history.merged(self.records, self.outputs) if self.history else self.records
    try:
        write_report(
            self.options.report,
            whole,
            run_info=self.run_info,
            comparison=self.gate_result.comparison if self.gate_result else None,
            gate=self.gate_result,
            gated=self.gate is not None,
            fail_on=self.options.fail_on,
        )
        written["report"] = self.options.report
    except OSError as exc:
        self.outputs.lost(self.options.report, "the report (no part of it was written)", exc)
    if self.history is not None:
        self.history.keep(whole, self.run_info, written, self.outputs)
    if self.gate_result and self.gate_result.baseline_written:
        written["baseline"] = self.gate_result.baseline_written
    if self.options.summary is not None:
        try:
            _append_summary(self, self.options.summary)
            written["summary"] = self.options.summary
        except OSError as exc:
            self.outputs.lost(self.options.summary, "the Markdown summary", exc)
    self.lock.release()  # everything is on disk: the next run may start
    return written


def _finish_gate(self: CtxSession) -> GateResult | None:
    if self.options.baseline is None:
        return None
    from . import __version__

    gate = self.gate
    assert gate is not None
    return gate.finish(
        self.records,
        ran=self.ran,
        selected=self.selected,
        filtered=self.filtered,
        model=self.options.model,
        plugin_version=__version__,
        git_commit=self.run_info.git_commit,
    )


def _append_summary(self: CtxSession, path: Path) -> None:
    from .report.markdown import markdown_summary

    result = self.gate_result
    text = markdown_summary(
        self.records,
        comparison=result.comparison if result else None,
        breaches=result.breaches if result else None,
    )
    from .safe_files import append_text

    # Appended: $GITHUB_STEP_SUMMARY collects every step's summary in one file.
    append_text(path, text)
