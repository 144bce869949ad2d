"""The end of a run on the controller: what is kept after an interruption,
the exit status the gate, the fact ledger and a lost output give, and the
ctxeval section of the terminal summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .report.terminal_text import printable
from .session import CtxSession

# Exit codes a lost output does not replace: they say something worse.
_NOT_OVERRIDDEN = (
    pytest.ExitCode.INTERRUPTED,
    pytest.ExitCode.INTERNAL_ERROR,
    pytest.ExitCode.USAGE_ERROR,
)


def before_finish(ctx: CtxSession, session: pytest.Session, *, runs_workers: bool) -> None:
    """What the session's end settles before the outputs are written."""
    if ctx.options.shard is not None and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        # A shard that drew no scenario is a success with an empty results
        # file, so the CI matrix's merge step finds every shard's file.
        ctx.check_outputs()
        ctx.will_record = True
        session.exitstatus = pytest.ExitCode.OK
    if session.exitstatus == pytest.ExitCode.INTERRUPTED and not runs_workers:
        _keep_finished_before_interrupt(ctx, session)


def _keep_finished_before_interrupt(ctx: CtxSession, session: pytest.Session) -> None:
    """Ctrl-C stopped the run inside a batch of model calls: the items
    whose answers had all come back keep their records (the calls were
    paid for), though pytest never reported them."""
    from .collect import ProbeItem

    kept = {record.nodeid for record in ctx.records}
    for item in session.items:
        if isinstance(item, ProbeItem) and item.nodeid not in kept:
            record = item.finished_before_interrupt()
            if record is not None:
                ctx.keep(record)


def exit_status(ctx: CtxSession, session: pytest.Session, *, other_failures: int) -> list[str]:
    """Set the run's exit status once the outputs are written; returns the
    fact-ledger rules (--ctx-fail-if) the run broke."""
    _gate_exit_status(ctx, session, other_failures=other_failures)
    breaches: list[str] = []
    if ctx.options.ledger_rules:  # --ctx-fail-if=mutated:>0 and the like
        from .gate.ledger_rules import ledger_exit

        breaches, session.exitstatus = ledger_exit(
            ctx.options.ledger_rules, ctx.records, session.exitstatus
        )
    if ctx.outputs.losses and session.exitstatus not in _NOT_OVERRIDDEN:
        from .output_loss import OUTPUT_LOST

        session.exitstatus = OUTPUT_LOST
    return breaches


def _gate_exit_status(ctx: CtxSession, session: pytest.Session, *, other_failures: int) -> None:
    result = ctx.gate_result
    # The gate's exit code tells a regression from a broken budget or from
    # errors; it never hides an interruption, a usage error or a failure
    # of a test that is not a ctxeval item.
    if (
        result is not None
        and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
        and not other_failures
    ):
        session.exitstatus = int(result.exit)


def write_summary(
    terminalreporter: Any,
    ctx: CtxSession,
    written: dict[str, Path],
    ledger_breaches: list[str],
) -> None:
    """The lost outputs, then the ctxeval section: outcomes, sweeps, the
    gate, the fact ledger and where the outputs went."""
    for loss in ctx.outputs.losses:
        terminalreporter.write_line(printable(loss.line()))
    if not written:
        return
    from .report.terminal import summary_lines

    terminalreporter.section("ctxeval")
    for line in summary_lines(ctx.records):
        terminalreporter.write_line(line)
    from .report.sweeps import sweep_summary_lines

    for line in sweep_summary_lines(ctx.records, budget_note=ctx.budget_note()):
        terminalreporter.write_line(printable(line))
    if ctx.gate_result is not None:
        for line in ctx.gate_result.lines():
            terminalreporter.write_line(printable(line))
    for line in ledger_breaches:
        terminalreporter.write_line(printable(f"FACT LEDGER  {line}"))
    for what, path in written.items():
        terminalreporter.write_line(f"{what}: {path}")
