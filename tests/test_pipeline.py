"""Pipelines: strategies composed in order, on the command line and in presets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import by_key

from pytest_ctxeval.strategies.base import BaseStrategy, Message, Window
from pytest_ctxeval.strategies.invariant_sessions import tool_session
from pytest_ctxeval.strategies.invariants import check_invariants, oracle_context
from pytest_ctxeval.strategies.pipeline import PipelineStrategy
from pytest_ctxeval.strategies.presets import PresetError
from pytest_ctxeval.strategies.registry import UnknownStrategyError, available, resolve
from pytest_ctxeval.strategies.toolprune import ToolPruneStrategy


def call_points(messages: list[Message]) -> list[int]:
    after = [*messages[1:], {"role": None}]
    return [
        i + 1
        for i, (m, n) in enumerate(zip(messages, after, strict=True))
        if m["role"] == "user" or (m["role"] == "tool" and n["role"] != "tool")
    ]


def windows(strategy: Any, messages: list[Message]) -> list[Window]:
    """The window at every point where the agent calls the model."""
    setup = getattr(strategy, "setup", None)
    if callable(setup):
        setup(oracle_context())
    points = set(call_points(messages))
    shown = []
    for count, message in enumerate(messages, 1):
        strategy.add(message)
        if count in points:
            shown.append(strategy.window())
    return shown


# --- names --------------------------------------------------------------------------------


def test_a_plus_joins_stages_and_the_name_shows_each_with_its_parameters() -> None:
    (spec,) = resolve("toolprune+compaction-cached(keep_turns=6)", preset_dirs=[])
    assert spec.name == "toolprune+compaction-cached[keep_turns:6]"
    pipeline = spec.create()
    assert isinstance(pipeline, PipelineStrategy)
    stages = pipeline.params()["stages"]
    assert [next(iter(stage)) for stage in stages] == [
        "toolprune",
        "compaction-cached[keep_turns:6]",
    ]
    assert stages[0]["toolprune"]["keep_last"] == 1
    assert stages[1]["compaction-cached[keep_turns:6]"]["keep_turns"] == 6
    # The shown name is accepted back and is the same strategy.
    (again,) = resolve(spec.name, preset_dirs=[])
    assert again.name == spec.name and again.create().params() == pipeline.params()


def test_a_stage_may_be_a_preset_and_keeps_its_name() -> None:
    (spec,) = resolve("observation-mask+sliding-8", preset_dirs=[])
    assert spec.name == "observation-mask+sliding-8"
    assert spec.create().params()["stages"][1] == {"sliding-8": {"turns": 8, "keep_system": True}}


@pytest.mark.parametrize(
    ("written", "message"),
    [
        (
            "sliding+toolprune",
            "'sliding+toolprune': pipeline: stage 1 'sliding' cannot come before another "
            "stage: only a stage that rewrites messages in place can (observation-mask, "
            "subagent, toolprune); put 'sliding' last",
        ),
        (
            "toolprune(budget_tokens=500)+full",
            "stage 1 'toolprune[budget_tokens:500]' has budget_tokens, which drops messages; "
            "give the budget to the last stage",
        ),
        ("toolprune+", "'toolprune+': a pipeline needs a strategy on each side of '+'"),
        ("all+full", "'all+full': 'all' cannot be a pipeline stage"),
        ("toolprune+slidng", "unknown strategy 'slidng' (did you mean 'sliding'"),
        ("toolprune(keep=1)+full", "strategy 'toolprune' has no parameter 'keep'"),
    ],
)
def test_a_bad_pipeline_is_one_error_naming_what_is_wrong(written: str, message: str) -> None:
    with pytest.raises(UnknownStrategyError) as info:
        resolve(written, preset_dirs=[])
    assert message in str(info.value)


def test_all_leaves_the_pipeline_kind_out() -> None:
    assert "pipeline" not in [spec.name for spec in resolve("all", preset_dirs=[])]


# --- what a later stage sees ---------------------------------------------------------------


def test_a_later_stage_sees_the_earlier_stages_rewrites() -> None:
    alone = windows(ToolPruneStrategy(), tool_session())
    (spec,) = resolve("toolprune+full", preset_dirs=[])
    piped = windows(spec.create(), tool_session())
    assert [w.messages for w in piped] == [w.messages for w in alone]
    pruned = [m for m in piped[-1].messages if "lines pruned" in str(m.get("content"))]
    assert pruned  # the check above compared windows where pruning happened


def test_the_compaction_stage_distils_pruned_outputs() -> None:
    requests: list[str] = []
    ctx = oracle_context()
    assert ctx.complete_json is not None
    fill = ctx.complete_json

    def recording(messages: list[Message], schema: dict[str, Any]) -> dict[str, Any]:
        requests.append(json.dumps(messages))
        return fill(messages, schema)

    ctx.complete_json = recording
    (spec,) = resolve("toolprune+compaction(every_turns=3)", preset_dirs=[])
    pipeline = spec.create()
    pipeline.setup(ctx)  # type: ignore[attr-defined]
    for count, message in enumerate(tool_session(), 1):
        pipeline.add(message)
        if count in call_points(tool_session()):
            pipeline.window()
    assert requests and all("lines pruned" in r or "pruned_items" in r for r in requests)


class Counting(BaseStrategy):
    """A last stage that counts what it is given."""

    name = "counting"

    def __init__(self) -> None:
        super().__init__()
        self.added = 0
        self.revised = 0

    def add(self, message: Message) -> None:
        super().add(message)
        self.added += 1

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        self.revised += 1

    def window(self) -> Window:
        return Window(messages=list(self.history))


def test_each_message_reaches_the_last_stage_once_and_each_rewrite_once() -> None:
    last = Counting()
    pipeline = PipelineStrategy.of([("toolprune", ToolPruneStrategy()), ("counting", last)])
    session = tool_session()
    windows(pipeline, session)
    results = sum(1 for m in session if m["role"] == "tool")
    assert last.added == len(session)
    assert 0 < last.revised < results  # only the results toolprune rewrote, once each


def test_tools_and_retrievable_texts_of_the_last_stage_come_through() -> None:
    (spec,) = resolve("toolprune+headtail(head=20,tail=20)", preset_dirs=[])
    window = windows(spec.create(), tool_session())[-1]
    assert [t["function"]["name"] for t in window.tools] == ["retrieve_memory"]
    assert window.tool_handler is not None and window.retrievable
    assert window.tool_handler("retrieve_memory", {"id": "m1"}).strip()
    (spec,) = resolve("observation-mask+rag", preset_dirs=[])
    assert windows(spec.create(), tool_session())[-1].retrievable


def test_a_fork_continues_on_its_own() -> None:
    (spec,) = resolve("toolprune+full", preset_dirs=[])
    pipeline = spec.create()
    windows(pipeline, tool_session()[:10])
    fork = pipeline.fork()  # type: ignore[attr-defined]
    fork.add({"role": "user", "content": "Only in the fork."})
    assert "Only in the fork." not in json.dumps(pipeline.window().messages)
    assert fork.window().messages[-1]["content"] == "Only in the fork."


@pytest.mark.parametrize(
    "stages",
    [
        ["toolprune", "compaction-cached"],
        ["observation-mask", {"rag": {"k": 2}}],
        ["toolprune", "subagent", {"sliding": {"turns": 3}}],
        ["toolprune", {"summarize": {"trigger_tokens": 2000}}],
        ["observation-mask", {"compaction": {"budget_tokens": 3000}}],
    ],
)
def test_pipelines_keep_the_invariants(stages: list[Any]) -> None:
    assert check_invariants(PipelineStrategy, params={"stages": stages}) == []


def test_strategy_d_keeps_the_invariants_and_shows_its_stages() -> None:
    factory = available(preset_dirs=[])["strategy-d"]
    assert check_invariants(factory) == []
    (spec,) = resolve("strategy-d", preset_dirs=[])
    stages = spec.create().params()["stages"]
    assert [next(iter(stage)) for stage in stages] == [
        "toolprune",
        "compaction-cached[every_turns:10+keep_turns:6]",
    ]


# --- presets ---------------------------------------------------------------------------------


def preset(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_pipeline_preset_names_kinds_with_their_parameters(tmp_path: Path) -> None:
    preset(
        tmp_path,
        "name: prune-then-slide\nkind: pipeline\n"
        "params: {stages: [toolprune, {sliding: {turns: 2}}]}\n",
    )
    (spec,) = resolve("prune-then-slide", preset_dirs=[tmp_path])
    assert spec.create().params()["stages"][1] == {
        "sliding[turns:2]": {"turns": 2, "keep_system": True}
    }


@pytest.mark.parametrize(
    ("stages", "problem"),
    [
        ("[sliding, toolprune]", "stage 1 'sliding' cannot come before another stage"),
        ("[toolprune, {slidin: {}}]", "stage 2 names unknown strategy 'slidin'"),
        ("[toolprune, {sliding: {turn: 2}}]", "stage 2 'sliding' has no parameter 'turn'"),
        ("[toolprune]", "needs at least two stages, got 1"),
        ("[toolprune, {sliding: {}, full: {}}]", "stage 2 must be a strategy name or one name"),
        ("[toolprune, strategy-d]", "stage 2 names unknown strategy 'strategy-d'"),
    ],
)
def test_a_bad_pipeline_preset_is_an_error_naming_the_file(
    tmp_path: Path, stages: str, problem: str
) -> None:
    path = preset(tmp_path, f"name: broken\nkind: pipeline\nparams: {{stages: {stages}}}\n")
    with pytest.raises(PresetError) as info:
        available(preset_dirs=[tmp_path])
    message = str(info.value)
    assert message.startswith(f"{path}: ") and problem in message
    assert "Traceback" not in message


# --- end to end ------------------------------------------------------------------------------

ROWS = "generate: {kind: json_rows, rows: 40, seed: %d}"
SCENARIO = f"""
    id: rows
    system: You are an analyst.
    turns:
      - user: Query the orders.
      - tool: {{name: query_rows, args: {{table: orders}}, {ROWS % 4}}}
      - assistant: Forty rows came back.
      - user: Query the refunds. The refund limit is 250 euros.
      - tool: {{name: query_rows, args: {{table: refunds}}, {ROWS % 5}}}
      - assistant: Forty more.
    probes:
      - {{id: limit, user: "What is the refund limit?", expect: {{contains: "250"}}}}
"""


def test_a_pipeline_runs_from_the_command_line_and_k_selects_it(ctx) -> None:
    ctx.scenario("rows", SCENARIO)
    strategies = "--ctx-strategy=toolprune+sliding(turns=2),sliding"
    item = "scenarios/rows.yaml::rows::limit[toolprune+sliding[turns:2]]"
    assert ctx.collect_ids(strategies, "-k", "toolprune+sliding[turns:2]") == [item]
    result = ctx.run(strategies)
    assert result.ret == 0, result.stdout.str()
    records = by_key(ctx.results())
    record = records[("rows", "toolprune+sliding[turns:2]", "limit")]
    assert record["classification"] == "ok"
    # The older output was pruned before sliding built the window.
    assert record["prompt_tokens"] < records[("rows", "sliding", "limit")]["prompt_tokens"]
    assert record["strategy_params"]["stages"][1] == {
        "sliding[turns:2]": {"turns": 2, "keep_system": True}
    }
