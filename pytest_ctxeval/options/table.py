"""The ``--ctx-*`` options and their ini twins, as pytest is told of them.

The order of the table is the order of ``pytest --help``.
"""

from __future__ import annotations

import pytest

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
# Models named so are answered in-process and never recorded in cassettes.
MOCK_MODEL_PREFIX = "ctxeval/"

# option dest -> (flag, ini help, default)
OPTIONS: dict[str, tuple[str, str, str | None]] = {
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


def _literal(help_text: str) -> str:
    """Help text as argparse shows it: it reads ``%`` as a format, so a
    literal one ("tokens:+10%") is doubled.  The ini help is printed as is."""
    return help_text.replace("%", "%%")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxeval", "context-strategy evaluation (pytest-ctxeval)")
    for dest, (flag, help_text, default) in OPTIONS.items():
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
