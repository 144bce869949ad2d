"""``ctxeval conform STRATEGY``: is a strategy safe to ship, and what does it cost?

Two checks, one table:

1. The invariant sessions (``strategies/invariant_sessions.py``) replayed
   through the strategy, every window checked by the window rules and the
   other invariants (``strategies/invariants.py``), model-free.  A violation
   is shown with the first window that breaks the rule.
2. The bundled suite (``./scenarios`` by default) run by pytest on the mock
   model under ``full`` and the strategy: passed probes, context losses
   against ``full``, the sessions' tokens and prompt-cache hit ratio.

The exit code is 1 when any rule is broken (whatever the suite says), 2 on a
usage error (an unknown strategy or parameter), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..llm.error_text import error_line
from .command import AddCommand, Handler

# "check: session at message N: detail", as check_invariants words a violation.
_WHERE = re.compile(r"^(?P<check>[\w-]+): (?P<session>\S+) at message (?P<n>\d+): (?P<detail>.*)$")
SHOWN_CHARS = 60
_COUNTS = ("passed", "items", "context_loss", "error", "cumulative_input_tokens")


def add(command: AddCommand) -> None:
    conform = command(
        "conform",
        "Check a strategy against the window rules and run the bundled suite under it",
    )
    conform.add_argument(
        "strategy",
        metavar="STRATEGY",
        help="As --ctx-strategy takes it: a built-in, preset, adapter, module:Class or "
        'pipeline, with parameters ("langchain-trim(max_tokens=2000)")',
    )
    conform.add_argument(
        "--suite",
        type=Path,
        default=Path("scenarios"),
        help="The scenarios to run on the mock model (default: ./scenarios)",
    )
    conform.add_argument(
        "--no-suite", action="store_true", help="Check the rules only, without running the suite"
    )


def conform(args: argparse.Namespace) -> int:
    from ..strategies.registry import UnknownStrategyError, resolve

    try:
        specs = resolve(args.strategy, preset_dirs=[Path.cwd() / "strategies"])
    except UnknownStrategyError as exc:
        print(f"ctxeval conform: {error_line(exc)}", file=sys.stderr)
        return 2
    if len(specs) != 1:
        print(
            f"ctxeval conform: {args.strategy!r} names {len(specs)} strategies; give one",
            file=sys.stderr,
        )
        return 2
    spec = specs[0]
    violations = rule_violations(spec)
    suite: dict[str, dict[str, str]] = {}
    note = ""
    if args.no_suite:
        note = "suite not run (--no-suite)"
    elif not args.suite.is_dir():
        note = f"suite not run: no directory {str(args.suite)!r} (give one with --suite)"
    else:
        suite, note = run_suite(args.suite, spec.resolvable)
    for line in table(spec.name, violations, suite):
        print(line)
    if note:
        print(note)
    for violation in first_per_check(violations):
        print()
        print(violation)
        try:
            shown = offending_window(spec, violation)
        except Exception as exc:  # the replay failed where the check did not
            shown = [
                f"  (the window could not be rebuilt: {type(exc).__name__}: {error_line(exc)})"
            ]
        for line in shown:
            print(line)
    return 1 if violations else 0


HANDLERS: dict[str, Handler] = {"conform": conform}


def rule_violations(spec: Any) -> list[str]:
    """Every invariant broken over the invariant sessions; a window that raises is one."""
    from ..strategies.invariants import check_invariants

    try:
        return check_invariants(lambda **_: spec.create(), params=dict(spec.params))
    except Exception as exc:  # the strategy itself failed: that is its result
        return [f"window: the strategy raised {type(exc).__name__}: {error_line(exc)}"]


def first_per_check(violations: list[str]) -> list[str]:
    seen: set[str] = set()
    first = []
    for violation in violations:
        check = violation.partition(":")[0]
        if check not in seen:
            seen.add(check)
            first.append(violation)
    return first


def offending_window(spec: Any, violation: str) -> list[str]:
    """The window the violation names, one line a message."""
    from ..strategies.base import content_text
    from ..strategies.invariant_sessions import Session, default_sessions
    from ..strategies.invariants import oracle_context

    where = _WHERE.match(violation)
    if where is None:
        return []
    sessions = {s.name: s for s in (Session(*e) for e in default_sessions())}
    session = sessions.get(where["session"])
    if session is None:
        return []
    strategy: Any = spec.create()
    if callable(getattr(strategy, "setup", None)):
        strategy.setup(oracle_context())
    for index, message in enumerate(session.messages[: int(where["n"])]):
        if index in session.chat_starts and callable(getattr(strategy, "end_session", None)):
            strategy.end_session()
        strategy.add(message)
    lines = ["  first offending window:"]
    for index, message in enumerate(strategy.window().messages):
        ids = [str(c.get("id")) for c in message.get("tool_calls") or []]
        tag = f" calls {','.join(ids)}" if ids else ""
        if message.get("role") == "tool":
            tag = f" answers {message.get('tool_call_id')}"
        text = json.dumps(content_text(message)[:SHOWN_CHARS], ensure_ascii=False)
        lines.append(f"    [{index}] {message.get('role')}{tag}: {text}")
    return lines


def run_suite(suite: Path, strategy: str) -> tuple[dict[str, dict[str, str]], str]:
    """The suite's figures per strategy (``full`` and ``strategy``), by pytest on the mock."""
    from ..results.frame import records_frame, strategy_summary
    from ..results.store import load_results

    with tempfile.TemporaryDirectory(prefix="ctxeval-conform-") as tmp:
        results = Path(tmp) / "results.jsonl"
        command = [
            sys.executable,
            "-m",
            "pytest",
            str(suite),
            "-p",
            "no:cacheprovider",
            "-q",
            "--ctx-model=ctxeval/oracle",
            f"--ctx-strategy=full,{strategy}",
            f"--ctx-results={results}",
            f"--ctx-report={Path(tmp) / 'report.html'}",
        ]
        run = subprocess.run(command, capture_output=True, text=True, check=False)
        if not results.is_file():
            tail = (run.stdout + run.stderr).strip().splitlines()[-1:] or ["no output"]
            return {}, f"suite not run: pytest exited {run.returncode}: {tail[0]}"
        records = load_results(results)
    summary = strategy_summary(records_frame(records))
    figures: dict[str, dict[str, str]] = {}
    for name in summary.index:
        # .at, not iterrows: a row of mixed columns comes back as floats.
        count = {c: int(summary.at[name, c]) for c in _COUNTS}  # type: ignore[arg-type]
        hits = float(summary.at[name, "cache_hit_ratio"])  # type: ignore[arg-type]
        figures[str(name)] = {
            "passed": f"{count['passed']}/{count['items']}",
            "context_loss": str(count["context_loss"]),
            "errors": str(count["error"]),
            "tokens": f"{count['cumulative_input_tokens']:,}",
            "cache hit": "-" if hits != hits else f"{hits:.0%}",
        }
    return figures, f"suite: {suite} on the mock model ({len(records)} items)"


def table(name: str, violations: list[str], suite: dict[str, dict[str, str]]) -> list[str]:
    counts: dict[str, int] = {}
    for violation in violations:
        check = violation.partition(":")[0]
        counts[check] = counts.get(check, 0) + 1
    rules = ", ".join(f"{check} {n}" for check, n in sorted(counts.items())) or "none"
    header = ["strategy", "rule violations", "passed", "context_loss", "errors", "tokens"]
    header.append("cache hit")
    rows = [header]
    shown = [("full", "-")] if name != "full" else []
    for row_name, broken in [*shown, (name, rules)]:
        figures = suite.get(row_name, {})
        rows.append(
            [row_name, broken]
            + [figures.get(k, "-") for k in ("passed", "context_loss", "errors", "tokens")]
            + [figures.get("cache hit", "-")]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
