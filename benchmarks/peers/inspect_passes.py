"""Print how many samples an Inspect AI log scored, and how many passed, as JSON.

Run with the peers venv's Python: ``inspect_passes.py LOG_DIR``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from inspect_ai.log import read_eval_log


def main(log_dir: str) -> None:
    samples = passed = 0
    status = []
    for path in sorted(Path(log_dir).glob("*.eval")):
        log = read_eval_log(str(path))
        status.append(log.status)
        for sample in log.samples or []:
            samples += 1
            scores = sample.scores or {}
            passed += any(score.value == "C" for score in scores.values())
    print(json.dumps({"samples": samples, "passed": passed, "status": status}))


if __name__ == "__main__":
    main(sys.argv[1])
