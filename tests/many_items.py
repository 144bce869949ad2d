"""A run of hundreds of items built in code, for the tests of how the
report carries a large run (test_report_writing.py, and in a browser
test_report_paging_browser.py)."""

from __future__ import annotations

from pytest_ctxeval.results.record import ResultRecord

SCENARIOS = [f"conv-{n}" for n in range(6)]
STRATEGIES = ["full", "rag", "sliding", "truncate"]
PROBES = [f"qa-{n:02d}" for n in range(25)]
ITEMS = len(SCENARIOS) * len(STRATEGIES) * len(PROBES)  # 600: six pages, three chunks


def record(scenario: str, strategy: str, probe: str, n: int) -> ResultRecord:
    """An item whose every drill-down part names it, so a mixed-up chunk shows."""
    lost = strategy == "sliding"
    errored = (scenario, strategy, probe) == ("conv-5", "truncate", "qa-24")
    return ResultRecord(
        # conv-0 was kept from an earlier run of a partial rerun.
        run_id="run-old" if scenario == "conv-0" else "run-new",
        started_at="2026-12-01T10:00:00+00:00" if scenario == "conv-0" else "2026-12-02T10:00:00",
        scenario=scenario,
        strategy=strategy,
        model="ctxeval/oracle",
        probe=probe,
        verdict="error" if errored else "fail" if lost else "pass",
        classification="error" if errored else "context_loss" if lost else "ok",
        error="ModelError: the server closed the connection" if errored else None,
        answer=f"answer of {scenario}/{strategy}/{probe}",
        ground_truth_answer=f"truth of {scenario}/{probe}",
        ground_truth_verdict="pass",
        fact_survival={f"fact-{scenario}-{probe}": "gone" if lost else "verbatim"},
        window_trace=[
            {"mark": "kept", "role": "system", "n": 0, "text": "You remember.", "tokens": 3},
            {
                "mark": "summary",
                "role": "user",
                "text": f"window of {scenario}/{strategy}/{probe}",
                "tokens": 7,
            },
        ],
        prompt_tokens=0 if errored else 1_000 + n,
        full_prompt_tokens=0 if errored else 2_000,
        cumulative_input_tokens=0 if errored else 10_000 + n,
        tags=["locomo", f"group-{scenario}"],
    )


def many_records() -> list[ResultRecord]:
    keys = [(c, s, p) for c in SCENARIOS for s in STRATEGIES for p in PROBES]
    return [record(*key, n) for n, key in enumerate(keys)]
