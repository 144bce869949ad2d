"""The share of imported probes a decoy passes (``uncheckable``), per decoy kind.

    python benchmarks/decoy_share.py tests/fixtures/importers/locomo.json
    python benchmarks/decoy_share.py --format locomo FILE [FILE ...]
    python benchmarks/workload.py locomo-json /tmp/locomo10.json --conversations 10
    python benchmarks/decoy_share.py /tmp/locomo10.json

Each file is imported as ``ctxeval import`` would (nothing is written), the
scenarios are built, and every probe with an expectation is scored against
its decoys (see ``pytest_ctxeval.evaluate.calibration``).  No model is asked.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from pytest_ctxeval.evaluate.calibration import decoy_pass
from pytest_ctxeval.scenario.importers import import_file, render_scenarios
from pytest_ctxeval.scenario.loader import parse_conversations


def share(fmt: str, path: Path) -> tuple[int, int, Counter[str]]:
    """(probes with an expectation, of them uncheckable, uncheckable by decoy kind)."""
    files = render_scenarios(import_file(fmt, path), str(path))
    scored = passed = 0
    kinds: Counter[str] = Counter()
    for name, text in files.items():
        for conversation in parse_conversations(text, name):
            for probe in conversation.probes:
                if probe.expect is None and probe.constraint_check is None:
                    continue
                scored += 1
                found = decoy_pass(conversation, probe)
                if found is not None:
                    passed += 1
                    kinds[found.decoy.kind] += 1
    return scored, passed, kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--format", default="locomo")
    args = parser.parse_args(argv)
    for path in args.files:
        scored, passed, kinds = share(args.format, path)
        ratio = passed / scored if scored else 0.0
        detail = ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()) or "none"
        print(f"{path}: {passed} of {scored} probes uncheckable ({ratio:.1%}): {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
