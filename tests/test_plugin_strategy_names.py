"""A ``module:Class`` strategy runs and is reported under its own name, even
when it subclasses a built-in that runs next to it."""

from __future__ import annotations

import pytest
from conftest import assert_no_traceback, by_key, output

SCENARIO = """
    id: recall
    turns:
      - user: "The launch code is ZEBRA-42."
      - assistant: Noted.
      - generate: {kind: chitchat, turns: 8, seed: 1}
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
"""

FORGETFUL_HEADTAIL = """
    from pytest_ctxeval.strategies.base import Window
    from pytest_ctxeval.strategies.headtail import HeadTailStrategy


    class ForgetfulHeadTail(HeadTailStrategy):
        \"\"\"headtail that forgets everything but the current message.\"\"\"

        def window(self):
            return Window(messages=self.history[-1:])


    class ClaimsHeadTail(ForgetfulHeadTail):
        name = "headtail"
"""


def test_a_subclass_of_a_built_in_runs_next_to_it_under_its_own_name(ctx):
    ctx.write("mystrategy.py", FORGETFUL_HEADTAIL)  # importable via pythonpath = .
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=mystrategy:ForgetfulHeadTail,headtail")
    result.assert_outcomes(passed=1, failed=1)
    records = by_key(ctx.results())
    assert {strategy for _, strategy, _ in records} == {"mystrategy:ForgetfulHeadTail", "headtail"}
    # Two strategies, two verdicts: the subclass was not merged into the built-in.
    assert (
        records[("recall", "mystrategy:ForgetfulHeadTail", "launch-code")]["classification"]
        == "context_loss"
    )
    assert records[("recall", "headtail", "launch-code")]["classification"] == "ok"


def test_a_class_claiming_a_built_in_name_next_to_it_is_a_usage_error(ctx):
    ctx.write("mystrategy.py", FORGETFUL_HEADTAIL)
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=mystrategy:ClaimsHeadTail,headtail")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "'mystrategy:ClaimsHeadTail' and 'headtail' are different strategies" in output(result)
    assert_no_traceback(result)
