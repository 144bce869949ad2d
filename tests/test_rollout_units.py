"""The rollout's comparisons with its shadow, model-free: where the two
sessions diverge (token F1, differing checks, or a judge) and the diff of
their final artifacts."""

from __future__ import annotations

from pytest_ctxeval.evaluate.rollout.checks import TurnChecks, artifact_diff, divergence_turn
from pytest_ctxeval.evaluate.rollout.loop import Rollout, TurnRecord
from pytest_ctxeval.evaluate.rollout.script import RolloutScript, UserTurn


def rollout(name: str, *answers: str, files: dict[str, str] | None = None) -> Rollout:
    turns = [TurnRecord(i + 1, answer) for i, answer in enumerate(answers)]
    return Rollout(name, turns, files=files or {})


SCRIPT = RolloutScript(None, tuple(UserTurn(f"question {i}") for i in range(1, 4)), {})


def test_divergence_is_the_first_turn_that_agrees_too_little_or_breaks_another_check() -> None:
    mine = rollout("sliding", "the port is 5432", "we ship thursday", "import requests")
    shadow = rollout("full", "the port is 5432", "we ship on thursday", "import urllib3")
    assert divergence_turn(mine, shadow, 0.6) == 3
    checks = ([TurnChecks(2, ["rule"], {"rule": ["no"]})], [TurnChecks(2, ["rule"])])
    assert divergence_turn(mine, shadow, 0.6, checks) == 2


def test_a_judge_decides_instead_of_token_f1_and_is_not_asked_about_equal_turns() -> None:
    mine = rollout("sliding", "same", "we ship thursday", "x")
    shadow = rollout("full", "same", "we ship on thursday", "x")
    asked: list[str] = []

    def judge(question: str, answer: str, reference: str) -> bool:
        asked.append(question)
        return question != "question 2"

    assert divergence_turn(mine, shadow, 0.6, judge=(SCRIPT, judge)) == 2
    assert asked == ["question 2"]


def test_the_artifact_diff_is_of_the_files_or_else_of_the_last_answers() -> None:
    mine = rollout("sliding", "a", files={"app.py": "import requests\n"})
    shadow = rollout("full", "a", files={"app.py": "import urllib3\n"})
    diff = artifact_diff(mine, shadow)
    assert diff is not None
    assert "--- full/app.py" in diff and "+++ sliding/app.py" in diff
    assert "-import urllib3" in diff and "+import requests" in diff
    last = artifact_diff(rollout("sliding", "one", "two"), rollout("full", "one", "three"))
    assert last is not None and "-three" in last and "+two" in last
    assert artifact_diff(rollout("sliding", "same"), rollout("full", "same")) is None
