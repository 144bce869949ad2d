"""What a failed ctxeval item prints: one line by default (classification,
probe, strategy and the command that shows its window), the full block
(answers, expectation, fact survival, tokens) under -v or --ctx-verbose.

At thousands of items a block per failure buries the summary; the one line
carries what is needed to pick the item up again."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .report.rollout_text import rollout_failure_lines
from .report.terminal_text import printable

if TYPE_CHECKING:
    from .results.record import ResultRecord


def one_line_failure(record: ResultRecord, reason: str = "") -> str:
    """``context_loss: probe launch-code under sliding; see: ctxeval show ...``,
    the gate's reason (a regression) first when there is one."""
    item = f"probe {record.probe} under {record.strategy}"
    what = f"{record.classification}: {item}"
    if record.repeat > 1 and record.classification != "error":  # the rates are the verdict
        what = f"{record.classification}: {rates(record)}; {item}"
    if record.error:  # what went wrong is the one thing to read first
        error = record.error if len(record.error) <= 500 else record.error[:500] + "…"
        what = f"{record.classification}: {error}; {item}"
    if reason:
        what = f"{reason}; {what}"
    from .show_command import show_command  # pydantic: only once an item failed

    command = show_command(record)
    line = f"{what}; see: {command}" if command else what
    # Answers never get here, but scenario ids and reasons may carry anything.
    return printable(" ".join(line.split()))


def format_failure(record: ResultRecord) -> str:
    lines = [f"{record.classification}: {_explain(record)}"]
    if record.error:
        lines.append(f"error: {record.error}")
    if record.expected is not None:
        lines.append(f"expected:            {json.dumps(record.expected, sort_keys=True)}")
    for check in record.failed_checks:
        lines.append(f"failed check:        {check}")
    lines.append(f"strategy answer:     {_quote(record.answer)}")
    lines.append(f"full-context answer: {_quote(record.ground_truth_answer)}")
    lines += rollout_failure_lines(record)
    if record.fact_survival:
        facts = ", ".join(f"{k}={v}" for k, v in sorted(record.fact_survival.items()))
        lines.append(f"fact survival:       {facts}")
    lines.append(
        f"prompt tokens:       {record.prompt_tokens:,} "
        f"(full context: {record.full_prompt_tokens:,})"
    )
    # Answers and errors are text from outside: no escape sequence reaches the terminal.
    return printable("\n".join(lines))


def _explain(record: ResultRecord) -> str:
    if record.repeat > 1 and record.classification != "error":
        return rates(record)
    return {
        "context_loss": f"strategy {record.strategy!r} lost what the model needed "
        "(the full-context answer meets the expectation)",
        "model_miss": "the model fails even with the full context",
        "uncheckable": "a decoy that knows nothing of the session meets the expectation, "
        "so the probe was not asked",
        "divergent": "the answer differs from the full-context answer (no expectation given)",
        "beyond_context": "the full context does not fit the model's window, so there is no "
        "ground truth; the strategy's answer fails the expectation",
        "error": "the item could not be evaluated",
    }.get(record.classification, record.classification)


def rates(record: ResultRecord) -> str:
    """``passed 1/5 [0.04, 0.62] under the strategy, 5/5 [...] with the full context``."""

    def rate(value: float | None, interval: tuple[float, float] | None) -> str:
        if value is None:
            return "unscored"
        shown = f"{round(value * record.repeat)}/{record.repeat}"
        return f"{shown} [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else shown

    text = f"passed {rate(record.pass_rate, record.pass_rate_interval)} under the strategy"
    if record.ground_truth_pass_rate is not None:
        full = rate(record.ground_truth_pass_rate, record.ground_truth_pass_rate_interval)
        text += f", {full} with the full context"
    return text


def _quote(text: str | None) -> str:
    if text is None:
        return "(none)"
    text = text if len(text) <= 600 else text[:600] + f"… ({len(text):,} chars)"
    return text.replace("\n", "\n" + " " * 21)
