"""How the report writes numbers; "—" where a value is undefined."""

from __future__ import annotations

import math
from typing import Any

# A measure an item never got (it errored before it): not a zero.
NOT_MEASURED = "not measured"
# Costs under a mock model (ctxeval/...): no provider prices it.
MOCK_COST = "n/a (mock model)"


def undefined(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def thousands(value: Any) -> str:
    return "—" if undefined(value) else f"{round(value):,}"


def percent(value: Any) -> str:
    return "—" if undefined(value) else f"{value * 100:.1f} %"


def usd(value: Any) -> str:
    return f"${value:,.4f}"


def is_mock_model(model: str) -> bool:
    """The mock and oracle models: tokens are counted, nothing is priced."""
    return model.startswith("ctxeval/")
