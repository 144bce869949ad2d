"""Importing litellm offline and quiet, before any mock is registered: what
token counting needs, below the mock provider that counts tokens itself."""

from __future__ import annotations

import os
import warnings
from functools import cache
from types import ModuleType


@cache
def import_litellm() -> ModuleType:
    # The bundled cost map and no tokenizer downloads: nothing may fetch at run time.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    with warnings.catch_warnings():
        # litellm's import emits pydantic warnings about its own types; they
        # are noise in every user's test summary.
        warnings.simplefilter("ignore")
        import litellm

    # litellm builds pydantic schemas of its own types lazily, on first use,
    # and each one warns; that noise is not the user's.
    warnings.filterwarnings(
        "ignore", message=r".* using the `ReadOnly` qualifier", category=UserWarning
    )
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm
