"""The run's metadata lives with the records it stamps, in
``pytest_ctxeval.results.run_info``; this old name is that same module, so
what was imported or patched through it still is."""

from __future__ import annotations

import sys

from ..results import run_info as _run_info

sys.modules[__name__] = _run_info
