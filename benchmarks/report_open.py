"""How big the HTML report of a LoCoMo-size run is, how long writing it
takes, and how long headless Chromium takes to open it.

    python benchmarks/bench.py --only report-open       # the whole run first (5-10 min on 2 cores)
    python benchmarks/report_open.py                    # the same
    python benchmarks/report_open.py --results FILE     # a results file instead of a run
    python benchmarks/report_open.py --open A.html B.html   # only open reports already written

The run is benchmarks/workload.py's LoCoMo-shaped dataset (10 conversations,
2,090 QA items), imported with ``ctxeval import locomo`` and run under the
8 strategies of the README's performance notes on the mock model: 16,720
items.  Writing is timed inside that pytest run (the session's own report,
its records in memory); with ``--results``, after loading the file, as
``ctxeval report`` writes it.  Opening is Chromium at /usr/bin/chromium
through playwright, as the browser tests drive it, best of 3 fresh pages:
the ``load`` event, the summary table visible (the page answers again), and
the first item's drill-down drawn after a click.

Not a test: the machine is shared and noisy; the figures are for reading.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import workload  # noqa: E402  (the scenario generators next to this file)

STRATEGIES = "full,headtail,sliding,truncate,summarize,rag,toolprune,observation-mask"
CHROMIUM = "/usr/bin/chromium"
# As tests/test_report_browser.py launches it.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROUNDS = 3

# A plugin for the run (-p): times the session's own report writing.
TIMING_PLUGIN = """\
import os, time
from pathlib import Path
import pytest_ctxeval.report.html as html

_write = html.write_report

def _timed(*args, **kw):
    start = time.perf_counter()
    out = _write(*args, **kw)
    Path(os.environ["CTXEVAL_BENCH_WRITE"]).write_text(str(time.perf_counter() - start))
    return out

html.write_report = _timed
"""


def run_locomo(folder: Path) -> tuple[Path, float, float]:
    """The LoCoMo-size run in ``folder``: its report, the run's seconds and
    the seconds the session spent writing the report."""
    workload.import_locomo(folder, folder / "imported")
    (folder / "ctxeval_bench_timing.py").write_text(TIMING_PLUGIN)
    written = folder / "write-seconds"
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    env = {
        **os.environ,
        "PYTHONPATH": path,
        "CTXEVAL_BENCH_WRITE": str(written),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "imported", f"--ctx-strategy={STRATEGIES}"]
        + ["--ctx-fail-on=never", "-p", "no:cacheprovider", "-p", "ctxeval_bench_timing"],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
    )
    return (
        folder / "reports" / "ctxeval.html",
        time.perf_counter() - start,
        float(written.read_text()),
    )


def write_from_results(results: Path, out: Path) -> tuple[float, float]:
    """Seconds to load ``results`` and to write the report from them."""
    from pytest_ctxeval.report.html import write_report
    from pytest_ctxeval.results.store import load_results

    start = time.perf_counter()
    records = load_results(results)
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    write_report(out, records)
    return loaded, time.perf_counter() - start


def open_seconds(report: Path) -> dict[str, float]:
    """Best of ``ROUNDS`` fresh pages: load event, summary visible, first drill-down."""
    from playwright.sync_api import sync_playwright

    best: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for _ in range(ROUNDS):
                page = browser.new_page(viewport={"width": 1280, "height": 860})
                start = time.perf_counter()
                page.goto(report.as_uri(), wait_until="load", timeout=300_000)
                figures = {"load": time.perf_counter() - start}
                page.wait_for_selector("#summary table", state="visible", timeout=300_000)
                figures["summary"] = time.perf_counter() - start
                start = time.perf_counter()
                page.locator("#items-table tbody tr").first.click()
                # Reports before packed drill-downs drew the panel at once, with no aria-busy.
                page.wait_for_selector("#detail:not([hidden]):not([aria-busy='true'])")
                figures["drill-down"] = time.perf_counter() - start
                page.close()
                for name, seconds in figures.items():
                    best[name] = min(best.get(name, seconds), seconds)
        finally:
            browser.close()
    return best


def print_open(report: Path, label: str = "") -> None:
    size = report.stat().st_size
    label = label or str(report)
    if not os.access(CHROMIUM, os.X_OK):
        print(f"  {label}: {size / 1e6:.1f} MB; {CHROMIUM} is missing, not opened")
        return
    best = open_seconds(report)
    print(
        f"  {label}: {size / 1e6:.1f} MB; opens in {best['load']:.2f} s (load event), "
        f"summary visible at {best['summary']:.2f} s, first drill-down {best['drill-down']:.2f} s "
        f"(best of {ROUNDS}, target: open under 3 s)"
    )


def figures(results: Path | None = None) -> None:
    print("\nreport of a LoCoMo-size run (16,720 items under 8 strategies):")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if results is None:
            report, run, write = run_locomo(folder)
            print(f"  the run: {run:.1f} s; the session wrote the report in {write:.2f} s")
        else:
            report = folder / "ctxeval.html"
            loaded, write = write_from_results(results, report)
            print(f"  {results}: loaded in {loaded:.1f} s; report written in {write:.2f} s")
        print_open(report, "the report")
    print("  reproduce: python benchmarks/bench.py --only report-open")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--results", type=Path, help="write the report from this results file")
    parser.add_argument("--open", type=Path, nargs="+", metavar="HTML", help="only open these")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if args.open:
        print("opening reports already written:")
        for report in args.open:
            print_open(report)
        return
    figures(args.results)


if __name__ == "__main__":
    main()
