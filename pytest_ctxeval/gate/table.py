"""The gate's rule: one table over every (baseline outcome, run outcome) pair.

Rows are what the baseline recorded for a probe, columns what this run found;
each cell is one symbol (``LEGEND``).  The README and docs/ci.md show this very
table (``markdown_table``), and the tests walk every cell.

The rule behind the cells: a probe regresses when the strategy's verdict falls
(pass -> fail), whatever the new classification is called, unless the full
context now fails too where it passed before (the model, not the strategy).
With ``--ctx-repeat`` on either side, a cell that compares verdicts (R, I, =,
~) compares pass rates instead, with the Wilson rule of ``evaluate.outcome``:
only a credible fall regresses, only a credible rise improves.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..evaluate.outcome import credibly_below

OUTCOMES: tuple[str, ...] = (
    "ok",
    "rescued",
    "divergent",
    "unstable",
    "model_miss",
    "context_loss",
    "beyond_context-pass",
    "beyond_context-fail",
    "error",
    "uncheckable",
    "absent",
)

# symbol -> (decision, what it means)
LEGEND: dict[str, tuple[str, str]] = {
    "R": (
        "regression",
        "the verdict fell (pass -> fail); repeated, the pass rate fell credibly: fails the gate",
    ),
    "I": ("improvement", "the verdict rose (fail -> pass); repeated, credibly: listed"),
    "=": (
        "unchanged",
        "the same verdict, or a change the Wilson rule calls not credible: not gated "
        "(a failing one is a known failure)",
    ),
    "~": ("by pass rate", "only with --ctx-repeat: the Wilson rule decides R, I or ="),
    "M": (
        "model",
        "a model miss: the full context fails too, so the model, not the strategy; "
        "never fails (listed when the verdict fell)",
    ),
    "E": ("error", "the run has no verdict (an error): not gated; errors give exit code 7"),
    "U": (
        "no verdict",
        "uncheckable: the probe measures nothing; listed, never a regression or an improvement",
    ),
    "N": ("new", "the baseline has no verdict (not in it, or an error there): not gated"),
    "-": (
        "missing",
        "not in the results: incomplete if the scenarios still have it (exit 8), matched "
        "by content if renamed, else unmatched (exit 9 unless --ctx-allow-removed)",
    ),
    ".": ("nothing", "in neither"),
}

# Rows: the baseline's outcome; columns, in OUTCOMES order (abbreviated): the run's.
_GRID = """
                     ok  resc  div  unst  miss  loss  bc+  bc-  err  unch  abs
ok                   =   =     R    ~     M     R     =    R    E    U     -
rescued              =   =     R    ~     R     R     =    R    E    U     -
divergent            I   I     =    ~     M     =     I    =    E    U     -
unstable             ~   ~     ~    ~     M     ~     ~    ~    E    U     -
model_miss           I   I     =    ~     M     =     I    =    E    U     -
context_loss         I   I     =    ~     M     =     I    =    E    U     -
beyond_context-pass  =   =     R    ~     R     R     =    R    E    U     -
beyond_context-fail  I   I     =    ~     M     =     I    =    E    U     -
error                N   N     N    N     N     N     N    N    E    U     -
uncheckable          U   U     U    U     U     U     U    U    E    U     -
absent               N   N     N    N     N     N     N    N    E    U     .
"""


def _parse(grid: str) -> dict[tuple[str, str], str]:
    lines = [line.split() for line in grid.strip().splitlines()]
    header, rows = lines[0], lines[1:]
    assert len(header) == len(OUTCOMES), header
    table: dict[tuple[str, str], str] = {}
    for row in rows:
        before, cells = row[0], row[1:]
        assert before in OUTCOMES and len(cells) == len(OUTCOMES), row
        for after, symbol in zip(OUTCOMES, cells, strict=True):
            assert symbol in LEGEND, symbol
            table[(before, after)] = symbol
    assert len(table) == len(OUTCOMES) ** 2
    return table


TABLE: dict[tuple[str, str], str] = _parse(_GRID)
# Cells decided by the verdicts, or by the pass rates when repeated.
_BY_RATE = frozenset("RI=~")


@dataclass(frozen=True)
class Outcome:
    """What one side knows of a probe: its table name and the strategy's pass count."""

    name: str
    passed: int = 0
    asked: int = 1

    @property
    def passes(self) -> bool:
        """The verdict: at least half of the asks passed."""
        has_verdict = self.name not in ("error", "uncheckable", "absent")
        return has_verdict and self.passed > 0 and self.passed * 2 >= self.asked

    def shown(self) -> str:
        if self.asked > 1 and self.name not in ("error", "uncheckable", "absent"):
            return f"{self.name} ({self.passed}/{self.asked})"
        return self.name


ABSENT = Outcome("absent", 0, 0)


def outcome_of(classification: str, verdict: str, pass_rate: float | None, repeat: int) -> Outcome:
    """A record's or a baseline entry's outcome as the table names it."""
    name = classification
    if classification == "beyond_context":
        # Without an expectation it has nothing to check against: no verdict.
        if verdict not in ("pass", "fail"):
            name = "uncheckable"
        else:
            name = f"beyond_context-{verdict}"
    asked = max(repeat, 1)
    if pass_rate is not None:
        passed = round(pass_rate * asked)
    else:
        passed = asked if verdict == "pass" else 0
    return Outcome(name if name in OUTCOMES else "error", passed, asked)


@dataclass(frozen=True)
class Decision:
    symbol: str
    why: str

    @property
    def decision(self) -> str:
        return LEGEND[self.symbol][0]

    @property
    def regression(self) -> bool:
        return self.symbol == "R"

    @property
    def improvement(self) -> bool:
        return self.symbol == "I"


def decide(before: Outcome, after: Outcome) -> Decision:
    """The table's cell for the pair, with the Wilson rule applied when repeated."""
    symbol = TABLE[(before.name, after.name)]
    if symbol not in _BY_RATE:
        return Decision(symbol, LEGEND[symbol][1])
    if before.asked > 1 or after.asked > 1 or symbol == "~":
        rates = f"{before.passed}/{before.asked} -> {after.passed}/{after.asked}"
        if credibly_below(after.passed, after.asked, before.passed, before.asked):
            return Decision("R", f"the pass rate fell credibly ({rates})")
        if credibly_below(before.passed, before.asked, after.passed, after.asked):
            return Decision("I", f"the pass rate rose credibly ({rates})")
        return Decision("=", f"the change is not credible ({rates}: the Wilson bounds meet)")
    if symbol == "R":
        return Decision("R", f"the verdict fell: {before.name} -> {after.name}")
    if symbol == "I":
        return Decision("I", f"the verdict rose: {before.name} -> {after.name}")
    return Decision("=", LEGEND["="][1])


def markdown_table() -> str:
    """The table as the README and docs/ci.md show it."""
    short = {"beyond_context-pass": "bc-pass", "beyond_context-fail": "bc-fail"}
    head = ["baseline ↓ · run →", *(f"`{short.get(o, o)}`" for o in OUTCOMES)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for before in OUTCOMES:
        cells = [TABLE[(before, after)] for after in OUTCOMES]
        lines.append(f"| `{short.get(before, before)}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_legend() -> str:
    return "\n".join(
        f"- **{symbol}** {decision}: {meaning}" for symbol, (decision, meaning) in LEGEND.items()
    )
