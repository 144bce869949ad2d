"""The regression gate's options (``--ctx-baseline``, ``--ctx-fail-if``,
``--ctx-shard``...), read together: budget rules need a baseline."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .table import DEFAULT_BASELINE


def gate_options(
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
        from ..gate.ledger_rules import usage_split

        gate["ledger_rules"], fail_if = usage_split(fail_if)
    if fail_if:
        if not baseline or update:
            raise pytest.UsageError(
                "--ctx-fail-if: budget rules compare against a baseline; "
                "give --ctx-baseline=PATH (and not --ctx-update-baseline)"
            )
        from ..gate.rules import RuleError, parse_rules

        try:
            gate["fail_if"] = tuple(parse_rules(fail_if))
        except RuleError as exc:
            raise pytest.UsageError(f"--ctx-fail-if: {exc}") from None
    if shard:
        from ..gate.shard import parse_shard

        try:
            gate["shard"] = parse_shard(shard)
        except ValueError as exc:
            raise pytest.UsageError(f"--ctx-shard: {exc}") from None
    if get("ctx_summary"):
        gate["summary"] = output_path("ctx_summary")
    return gate
