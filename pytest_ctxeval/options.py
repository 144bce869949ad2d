"""Command-line options and their ini twins (the option wins over the ini)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from .gate.ledger_rules import LedgerRule
    from .gate.rules import Rule
    from .output_paths import OutputPath

FAIL_ON = ("context_loss", "fail", "never")
DEFAULT_SCENARIO_DIR = "scenarios"
# Where --ctx-update-baseline writes without --ctx-baseline: committed next to the scenarios.
DEFAULT_BASELINE = "ctxeval-baseline.json"
RECORD_MODES = ("none", "new", "all")
SWEEP_HELP = (
    "Also ask every probe at earlier points of the session, for the forgetting curve: "
    "alone at every user turn, =K at every K-th (default: off)."
)
BUDGET_HELP = (
    "Run each strategy that takes a budget_tokens parameter once per budget, e.g. "
    "1000,2000,4000; the summary gives the smallest budget that still passes everything"
)
ALLOW_REMOVED_HELP = (
    "Pass the gate although some baseline probes match nothing in the run (their scenario "
    "or probe was deleted, or renamed and changed); they are still listed"
)
_N = TypeVar("_N", int, float)
_SWEEP_ON = ("true", "yes", "on")
_SWEEP_OFF = ("false", "no", "off")
# Models named so are answered in-process and never recorded in cassettes.
MOCK_MODEL_PREFIX = "ctxeval/"

# option dest -> (flag, ini help, default)
_OPTIONS: dict[str, tuple[str, str, str | None]] = {
    "ctx_strategy": (
        "--ctx-strategy",
        "Strategies to run: names, a comma list, 'all', or module:Class",
        "all",
    ),
    "ctx_model": (
        "--ctx-model",
        "Any litellm model string, or a mock: ctxeval/oracle, ctxeval/lost-in-middle, ctxeval/echo",
        "ctxeval/oracle",
    ),
    "ctx_api_base": ("--ctx-api-base", "Base URL of an OpenAI-compatible server", None),
    "ctx_report": ("--ctx-report", "Where to write the HTML report", "reports/ctxeval.html"),
    "ctx_results": (
        "--ctx-results",
        "Where to write JSONL result records",
        "reports/results.jsonl",
    ),
    "ctx_fail_on": (
        "--ctx-fail-on",
        "What fails the run: context_loss, fail (also model misses) or never",
        "context_loss",
    ),
    "ctx_mode": (
        "--ctx-mode",
        "replay (the scenario's scripted turns; a scenario's own 'mode' when unset) or "
        "rollout (the model writes every assistant turn, beside a full-context shadow)",
        None,
    ),
    "ctx_cassettes": (
        "--ctx-cassettes",
        "Directory of recorded real-model responses (cassettes)",
        "reports/cassettes",
    ),
    "ctx_record": (
        "--ctx-record",
        "Cassette mode: none (replay only, a miss is an error), new (record misses) "
        "or all (call and re-record everything)",
        "new",
    ),
    "ctx_concurrency": (
        "--ctx-concurrency",
        "Parallel model calls within a worker",
        "8",
    ),
    "ctx_repeat": (
        "--ctx-repeat",
        "Ask each probe N times under the strategy and under the full context; "
        "records carry both pass rates with Wilson intervals",
        "1",
    ),
    "ctx_agreement": (
        "--ctx-agreement",
        "Without an expectation, the normalised token F1 (0..1) an answer needs "
        "against the full-context answer to agree with it",
        "0.6",
    ),
    "ctx_judge": (
        "--ctx-judge",
        "A litellm model that decides whether two answers agree when a probe has no "
        "expectation (replaces the token F1 measure; recorded in cassettes)",
        None,
    ),
    "ctx_max_tokens": (
        "--ctx-max-tokens",
        "The longest answer asked of a real model, in tokens (an answer cut off there "
        "is an error, never scored)",
        "1024",
    ),
    "ctx_timeout": (
        "--ctx-timeout",
        "Seconds one model call may take in all, retries included",
        "300",
    ),
    "ctx_breaker": (
        "--ctx-breaker",
        "After this many calls in a row to one model time out or cannot connect, "
        "the remaining calls to it fail at once (0 = never)",
        "3",
    ),
    "ctx_baseline": (
        "--ctx-baseline",
        "A baseline file (written by --ctx-update-baseline): only a probe that regressed "
        "against it fails the run; known losses, new and removed probes are reported",
        None,
    ),
    "ctx_fail_if": (
        "--ctx-fail-if",
        "Budget rules against the baseline, per strategy: [STRATEGY:]METRIC:CHANGE, "
        "comma-separated, e.g. 'tokens:+10%,cost:+5%,headtail:pass_rate:-0.05'",
        None,
    ),
    "ctx_shard": (
        "--ctx-shard",
        "Run shard I of N (I/N): a stable share of the scenarios, for a CI matrix",
        None,
    ),
    "ctx_summary": (
        "--ctx-summary",
        "Append a Markdown summary of the run to this file (e.g. $GITHUB_STEP_SUMMARY)",
        None,
    ),
    "ctx_cache_model": (
        "--ctx-cache-model",
        "Whose prompt-cache rules price the session: openai (automatic, from 1,024 "
        "tokens in 128-token steps), anthropic (breakpoints, write premium, the "
        "model family's minimum) or anthropic-auto (Anthropic's automatic caching); "
        "default: the model's provider",
        None,
    ),
    "ctx_seconds_per_turn": (
        "--ctx-seconds-per-turn",
        "Simulated seconds between the session's requests, against the prompt cache's "
        "5-minute lifetime",
        "30",
    ),
    "ctx_tokenizer": (
        "--ctx-tokenizer",
        "The model's own tokenizer, for a model served locally or unknown to litellm: "
        "a tokenizer.json, or a GGUF model file (its metadata holds one); "
        "default: litellm's for the model",
        None,
    ),
    "ctx_context_window": (
        "--ctx-context-window",
        "The model's context window in tokens (default: litellm's model info; "
        "otherwise only the provider's context-length error tells)",
        None,
    ),
}


def _one_of(flag: str, value: str, choices: Iterable[str]) -> str:
    if value not in choices:
        raise pytest.UsageError(
            f"{flag}: invalid value {value!r}; expected one of: {', '.join(choices)}"
        )
    return value


def _number(
    flag: str,
    value: str,
    convert: Callable[[str], _N],
    accept: Callable[[_N], bool],
    expected: str,
) -> _N:
    """``value`` converted, or one usage error naming the option, the value and what it takes."""
    try:
        number = convert(value)
    except ValueError:
        number = None
    # ``accept`` is written so NaN fails it ("not x > 0" would let NaN through).
    if number is None or not accept(number):
        raise pytest.UsageError(f"{flag}: invalid value {value!r}; expected {expected}")
    return number


def _fail_on(value: str) -> str:
    return _one_of("--ctx-fail-on", value, FAIL_ON)


def _mode(value: str | None) -> str | None:
    return None if value is None else _one_of("--ctx-mode", value, ("replay", "rollout"))


def _record_mode(value: str) -> str:
    return _one_of("--ctx-record", value, RECORD_MODES)


def _at_least_one(flag: str, value: str) -> int:
    return _number(flag, value, int, lambda n: n >= 1, "a whole number >= 1")


def _breaker(value: str) -> int:
    return _number("--ctx-breaker", value, int, lambda n: n >= 0, "a whole number >= 0")


def _seconds(value: str) -> float:
    return _number("--ctx-timeout", value, float, lambda n: n > 0, "a number of seconds > 0")


def _agreement(value: str) -> float:
    return _number(
        "--ctx-agreement",
        value,
        float,
        lambda n: 0.0 < n <= 1.0,
        "a number in (0, 1], e.g. 0.6 (1 = equal after normalisation)",
    )


def _cache_model(value: str | None) -> str | None:
    if value is None:
        return None
    from .llm.cache_rules import RULES

    return _one_of("--ctx-cache-model", value, RULES)


def _seconds_per_turn(value: str) -> float:
    return _number(
        "--ctx-seconds-per-turn", value, float, lambda n: n >= 0, "a number of seconds >= 0"
    )


def _tokenizer_file(value: str | None, base: Path) -> Path | None:
    if value is None:
        return None
    path = (base / value).expanduser().resolve()
    if not path.is_file():
        raise pytest.UsageError(
            f"--ctx-tokenizer: no such file {value!r}; "
            "expected a tokenizer.json or a .gguf model file"
        )
    return path


def _context_window(value: str | None) -> int | None:
    if value is None:
        return None
    return _number(
        "--ctx-context-window",
        value,
        lambda text: int(text.replace(",", "").replace("_", "")),
        lambda n: n >= 1,
        "a number of tokens >= 1",
    )


def _sweep(value: str | None) -> int | None:
    """--ctx-sweep's K: 1 alone (or true in the ini), None when off."""
    if value is None:
        return None
    text = value.strip().lower()
    if text in _SWEEP_ON:
        return 1
    if text in _SWEEP_OFF:
        return None
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(
            f"--ctx-sweep: invalid value {value!r}; expected a whole number K >= 1 "
            "(ask each probe at every K-th user turn), or the flag alone for every turn; "
            "a path right after --ctx-sweep is read as K: write --ctx-sweep=K"
        )
    return int(text)


def _budgets(value: str | None) -> tuple[int, ...]:
    """--ctx-budget's token budgets, ascending, each once."""
    if value is None:
        return ()
    budgets = set()
    for part in value.split(","):
        text = part.strip().replace("_", "")
        if not text.isdigit() or int(text) < 1:
            raise pytest.UsageError(
                f"--ctx-budget: invalid value {value!r} ({part.strip()!r} is not a number "
                "of tokens >= 1); expected whole numbers, comma-separated, e.g. 1000,2000,4000"
            )
        budgets.add(int(text))
    return tuple(sorted(budgets))


def _literal(help_text: str) -> str:
    """Help text as argparse shows it: it reads ``%`` as a format, so a
    literal one ("tokens:+10%") is doubled.  The ini help is printed as is."""
    return help_text.replace("%", "%%")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxeval", "context-strategy evaluation (pytest-ctxeval)")
    for dest, (flag, help_text, default) in _OPTIONS.items():
        shown = f" (default: {default})" if default else ""
        group.addoption(flag, dest=dest, default=None, help=_literal(help_text + shown))
        parser.addini(dest, help_text + shown, default=default)
    group.addoption(
        "--ctx-sweep",
        dest="ctx_sweep",
        nargs="?",
        const="1",
        default=None,
        metavar="K",
        help=_literal(SWEEP_HELP + " Write --ctx-sweep=K, or put --ctx-sweep after the paths."),
    )
    parser.addini("ctx_sweep", SWEEP_HELP + " (ini: a number, or true for every turn)")
    group.addoption(
        "--ctx-budget",
        dest="ctx_budget",
        default=None,
        metavar="TOKENS[,TOKENS...]",
        help=_literal(BUDGET_HELP),
    )
    parser.addini("ctx_budget", BUDGET_HELP)
    group.addoption(
        "--ctx-update-baseline",
        dest="ctx_update_baseline",
        action="store_true",
        default=False,
        help="Write this run's outcomes to the --ctx-baseline file "
        f"(default {DEFAULT_BASELINE}) instead of comparing; probes outside the run "
        "keep their entries",
    )
    group.addoption(
        "--ctx-allow-removed",
        dest="ctx_allow_removed",
        action="store_true",
        default=False,
        help=_literal(ALLOW_REMOVED_HELP + " (default: off)"),
    )
    parser.addini("ctx_allow_removed", ALLOW_REMOVED_HELP, type="bool", default=False)
    parser.addini(
        "ctx_scenario_dirs",
        "Directories whose YAML files are scenarios. Unset, the plugin looks in "
        f"{DEFAULT_SCENARIO_DIR}/ and takes only files with probes, so other YAML there "
        "is left alone",
        type="linelist",
        # None tells "not set" from a value: only a set value makes every YAML a scenario.
        default=None,
    )


@dataclass(frozen=True)
class CtxOptions:
    strategies: str
    model: str
    api_base: str | None
    report: Path
    results: Path
    fail_on: str
    scenario_dirs: tuple[Path, ...]
    # The ini names the scenario directories: every YAML file there is a scenario.
    scenario_dirs_declared: bool = False
    cassettes: Path = Path("reports/cassettes")
    record: str = "new"
    concurrency: int = 8
    repeat: int = 1
    agreement: float = 0.6
    judge: str | None = None
    context_window: int | None = None
    max_tokens: int = 1024
    timeout: float = 300.0
    # --ctx-breaker: calls in a row that time out or cannot connect before the rest fail at once.
    breaker: int = 3
    baseline: Path | None = None
    update_baseline: bool = False
    # --ctx-allow-removed: baseline probes that match nothing do not fail the gate.
    allow_removed: bool = False
    fail_if: tuple[Rule, ...] = ()
    # --ctx-fail-if's fact-ledger rules (``mutated:>0``), checked without a baseline.
    ledger_rules: tuple[LedgerRule, ...] = ()
    shard: tuple[int, int] | None = None
    summary: Path | None = None
    # --ctx-sweep: ask every probe at every this-many-th user turn too; None = off.
    sweep_every: int | None = None
    # --ctx-budget: the budgets (ascending) each budgeted strategy runs at; () = off.
    budgets: tuple[int, ...] = ()
    # Prompt-cache rules by name (None: the model's provider's), and the
    # simulated time between requests.
    cache_model: str | None = None
    seconds_per_turn: float = 30.0
    # --ctx-tokenizer: the model's own tokenizer file; None = litellm's.
    tokenizer: Path | None = None
    # --ctx-mode: replay or rollout for every scenario; None = each scenario's own.
    mode: str | None = None

    @property
    def gated(self) -> bool:
        return self.baseline is not None

    @classmethod
    def from_config(cls, config: pytest.Config) -> CtxOptions:
        def get(dest: str) -> str | None:
            value = config.getoption(dest)
            if value is None:
                value = config.getini(dest)
            return value or None

        root = config.rootpath
        invocation = config.invocation_params.dir
        # pytest before 8 gives [] for an unset list: an empty setting counts as unset.
        declared_dirs: list[str] | None = config.getini("ctx_scenario_dirs") or None
        dirs = [DEFAULT_SCENARIO_DIR] if declared_dirs is None else declared_dirs

        def output_path(dest: str) -> Path:
            # A path given on the command line is relative to where pytest ran;
            # one from the ini file is relative to the project root.
            value = get(dest) or _OPTIONS[dest][2] or ""
            base = invocation if config.getoption(dest) else root
            # Absolute but not resolved: a symbolic link on the way must be
            # seen (and refused, see output_paths), not silently followed.
            return Path(os.path.normpath(os.path.abspath(base / value)))

        return cls(
            strategies=get("ctx_strategy") or "all",
            model=get("ctx_model") or "ctxeval/oracle",
            api_base=get("ctx_api_base"),
            report=output_path("ctx_report"),
            results=output_path("ctx_results"),
            fail_on=_fail_on(get("ctx_fail_on") or "context_loss"),
            scenario_dirs=tuple((root / d).resolve() for d in dirs),
            scenario_dirs_declared=declared_dirs is not None,
            cassettes=output_path("ctx_cassettes"),
            record=_record_mode(get("ctx_record") or "new"),
            concurrency=_at_least_one("--ctx-concurrency", get("ctx_concurrency") or "8"),
            repeat=_at_least_one("--ctx-repeat", get("ctx_repeat") or "1"),
            agreement=_agreement(get("ctx_agreement") or "0.6"),
            judge=get("ctx_judge"),
            context_window=_context_window(get("ctx_context_window")),
            max_tokens=_at_least_one("--ctx-max-tokens", get("ctx_max_tokens") or "1024"),
            timeout=_seconds(get("ctx_timeout") or "300"),
            breaker=_breaker(get("ctx_breaker") or "3"),
            sweep_every=_sweep(get("ctx_sweep")),
            budgets=_budgets(get("ctx_budget")),
            cache_model=_cache_model(get("ctx_cache_model")),
            seconds_per_turn=_seconds_per_turn(get("ctx_seconds_per_turn") or "30"),
            tokenizer=_tokenizer_file(
                get("ctx_tokenizer"), invocation if config.getoption("ctx_tokenizer") else root
            ),
            mode=_mode(get("ctx_mode")),
            **_gate_options(config, get, output_path),
        )

    @property
    def writes_cassettes(self) -> bool:
        """Whether a model answer may be recorded: a mock's never is, and
        replaying (--ctx-record=none) only reads."""
        real = [m for m in (self.model, self.judge) if m and not m.startswith(MOCK_MODEL_PREFIX)]
        return bool(real) and self.record != "none"

    def output_paths(self) -> list[OutputPath]:
        """Where the run writes, with the option that says so."""
        from .output_paths import OutputPath

        outputs = [
            OutputPath("--ctx-results", self.results, "file"),
            OutputPath("--ctx-report", self.report, "file"),
        ]
        if self.baseline is not None and self.update_baseline:
            outputs.append(OutputPath("--ctx-baseline", self.baseline, "file"))
        if self.summary is not None:
            outputs.append(OutputPath("--ctx-summary", self.summary, "file"))
        if self.writes_cassettes:
            outputs.append(OutputPath("--ctx-cassettes", self.cassettes, "directory"))
        return outputs


def _gate_options(
    config: pytest.Config, get: Callable[[str], str | None], output_path: Callable[[str], Path]
) -> dict[str, Any]:
    """The regression gate's options, checked together: rules need a baseline."""
    update = bool(config.getoption("ctx_update_baseline"))
    baseline = get("ctx_baseline")
    fail_if = get("ctx_fail_if")
    shard = get("ctx_shard")
    allowed = bool(config.getoption("ctx_allow_removed") or config.getini("ctx_allow_removed"))
    gate: dict[str, Any] = {"update_baseline": update, "allow_removed": allowed}
    if baseline or update:
        gate["baseline"] = (
            output_path("ctx_baseline") if baseline else (config.rootpath / DEFAULT_BASELINE)
        )
    if fail_if:  # fact-ledger rules ("mutated:>0") need no baseline; budget rules do
        from .gate.ledger_rules import usage_split

        gate["ledger_rules"], fail_if = usage_split(fail_if)
    if fail_if:
        if not baseline or update:
            raise pytest.UsageError(
                "--ctx-fail-if: budget rules compare against a baseline; "
                "give --ctx-baseline=PATH (and not --ctx-update-baseline)"
            )
        from .gate.rules import RuleError, parse_rules

        try:
            gate["fail_if"] = tuple(parse_rules(fail_if))
        except RuleError as exc:
            raise pytest.UsageError(f"--ctx-fail-if: {exc}") from None
    if shard:
        from .gate.shard import parse_shard

        try:
            gate["shard"] = parse_shard(shard)
        except ValueError as exc:
            raise pytest.UsageError(f"--ctx-shard: {exc}") from None
    if get("ctx_summary"):
        gate["summary"] = output_path("ctx_summary")
    return gate
