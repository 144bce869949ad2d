"""Where this run's scenarios are, as its configuration says: the rule that
decides which YAML files are scenarios, and the ``ctx_scenario_dirs``
entries that name no folder."""

from __future__ import annotations

import pytest

from .scenario_files import ScenarioFileRule, named_dirs, named_files
from .session import SESSION_KEY

_RULE_KEY = pytest.StashKey[ScenarioFileRule]()


def scenario_file_rule(config: pytest.Config) -> ScenarioFileRule:
    """Which YAML files are scenarios, decided once per run."""
    if _RULE_KEY not in config.stash:
        options = config.stash[SESSION_KEY].options
        config.stash[_RULE_KEY] = ScenarioFileRule(
            dirs=options.scenario_dirs,
            dirs_declared=options.scenario_dirs_declared,
            named_files=named_files(config.args, config.invocation_params.dir),
            # Only folders the user typed: pytest's default (the current folder,
            # or testpaths) must not sweep a project's YAML for scenarios.
            named_dirs=named_dirs(config.args, config.invocation_params.dir)
            if config.args_source == pytest.Config.ArgsSource.ARGS
            else (),
        )
    return config.stash[_RULE_KEY]


def missing_scenario_dirs(config: pytest.Config) -> list[str]:
    """One line per ``ctx_scenario_dirs`` entry that is not a directory."""
    declared: list[str] = config.getini("ctx_scenario_dirs") or []
    where = config.inipath or config.rootpath
    problems = []
    for entry in declared:
        folder = (config.rootpath / entry).resolve()
        if not folder.is_dir():
            what = "is not a directory" if folder.exists() else "does not exist"
            problems.append(
                f"{where}: ctx_scenario_dirs: {entry!r} {what} (looked for {folder}); "
                "expected directories relative to the project root"
            )
    return problems
