"""``pipeline``: strategies run one after another, e.g. ``toolprune+compaction-cached``.

What a later stage sees: every message the session adds goes to every stage,
in order.  The stages before the last *rewrite messages in place*, one for one
(``toolprune`` prunes an older tool output, ``observation-mask`` clears it,
``subagent`` replaces it with a sub-call's answer): they never drop, add or
reorder a message.  Before the last stage builds the window, each message an
earlier stage rewrote since the previous call replaces that message in the
next stage (``revise``), so the last stage works on the session as the
earlier stages show it.  Each stage keeps its own incremental state: a call
does the new work only, never a rebuild of a later stage from the start.

The window is the last stage's, with the tools, tool handlers and retrievable
texts of every stage (an earlier stage offering none adds none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .base import BaseStrategy, ContextStrategy, Message, StrategyContext, Window
from .registration import StrategySpec, register_strategy
from .unchanged_prefix import unchanged_prefix_of

# A stage is a kind's name, or a one-key mapping of the kind to its parameters.
StageEntry = str | dict[str, dict[str, Any]]


@register_strategy("pipeline")
class PipelineStrategy(BaseStrategy):
    name = "pipeline"
    description = (
        "Stages in order: earlier ones rewrite messages in place, the last builds the window."
    )

    def __init__(self, stages: list[StageEntry]) -> None:
        super().__init__()
        self._init_stages([_built(position, entry) for position, entry in enumerate(stages, 1)])

    @classmethod
    def of(cls, stages: Sequence[tuple[str, ContextStrategy]]) -> PipelineStrategy:
        """A pipeline of already-built stages, each with the name it is shown under."""
        pipeline = cls.__new__(cls)
        BaseStrategy.__init__(pipeline)
        pipeline._init_stages(list(stages))
        return pipeline

    def _init_stages(self, stages: list[tuple[str, ContextStrategy]]) -> None:
        if len(stages) < 2:
            raise ValueError(
                f"pipeline: needs at least two stages, got {len(stages)}; "
                "as in [toolprune, compaction-cached]"
            )
        for position, (label, stage) in enumerate(stages[:-1], 1):
            _check_rewriting_stage(position, label, stage)
        last_label, last = stages[-1]
        if not callable(getattr(last, "revise", None)):
            raise ValueError(
                f"pipeline: stage {len(stages)} {last_label!r} cannot follow another stage: "
                "it has no revise(index, message) to take the earlier stages' rewrites "
                "(subclass BaseStrategy)"
            )
        # A pipeline of rewriting stages is one itself: it may come first in another.
        self.rewrites_in_place = all(getattr(s, "rewrites_in_place", False) for _, s in stages)
        self.labels = [label for label, _ in stages]
        self.stages = [stage for _, stage in stages]
        self.name = "+".join(self.labels)
        # Per stage after the first: the messages it holds, as it was last given
        # them; a message an earlier stage rewrites is compared by identity.
        self._given: list[list[Message]] = [[] for _ in self.stages[1:]]

    def params(self) -> dict[str, Any]:
        return {
            "stages": [
                {label: _own_params(stage)}
                for label, stage in zip(self.labels, self.stages, strict=True)
            ]
        }

    def setup(self, ctx: StrategyContext) -> None:
        super().setup(ctx)
        for stage in self.stages:
            setup = getattr(stage, "setup", None)
            if callable(setup):
                setup(ctx)

    def add(self, message: Message) -> None:
        super().add(message)
        for stage in self.stages:
            stage.add(message)
        for given in self._given:
            given.append(message)

    def revise(self, index: int, message: Message) -> None:
        """A pipeline after another stage: the rewrite reaches its first stage."""
        super().revise(index, message)
        revise = getattr(self.stages[0], "revise", None)
        if callable(revise):
            revise(index, message)

    def end_session(self) -> None:
        super().end_session()
        for stage in self.stages:
            end_session = getattr(stage, "end_session", None)
            if callable(end_session):
                end_session()
        # Each stage starts the new chat from the system prompt, as the pipeline does.
        self._given = [list(self.history) for _ in self.stages[1:]]

    def window(self) -> Window:
        windows: list[Window] = []
        for position, stage in enumerate(self.stages[:-1]):
            window = stage.window()
            windows.append(window)
            self._pass_on(position, window.messages)
        last = self.stages[-1].window()
        return _combined(windows, last)

    def _pass_on(self, position: int, shown: list[Message]) -> None:
        """Give the next stage every message this stage rewrote since the last call."""
        given = self._given[position]
        label = self.labels[position]
        if len(shown) != len(given):
            raise RuntimeError(
                f"pipeline: stage {position + 1} {label!r} showed {len(shown)} messages for "
                f"{len(given)}: a stage before the last must rewrite messages one for one"
            )
        after = self.stages[position + 1]
        # Messages a stage kept from its previous window were passed on then:
        # a long session's call looks at its new part only.
        for index in range(unchanged_prefix_of(self.stages[position]) or 0, len(shown)):
            message = shown[index]
            if message is not given[index]:
                given[index] = message
                after.revise(index, message)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class PipelineFactory:
    """Builds a pipeline from stages given on the command line (each a resolved
    name: a built-in, a preset, ``module:Class``, with its parameters)."""

    stages: tuple[StrategySpec, ...]
    # What the records call its kind (``own_name`` reads it).
    name: str = "pipeline"
    description: str = PipelineStrategy.description

    def __call__(self) -> PipelineStrategy:
        return PipelineStrategy.of([(spec.name, spec.create()) for spec in self.stages])


def _combined(earlier: list[Window], last: Window) -> Window:
    """The last stage's messages with every stage's tools and retrievable texts."""
    if not any(w.tools or w.retrievable for w in earlier):
        return last
    handlers: dict[str, Any] = {}
    tools: list[dict[str, Any]] = []
    for window in (*earlier, last):
        for tool in window.tools:
            name = str((tool.get("function") or tool).get("name", ""))
            if name not in handlers:  # the first stage to offer a tool answers it
                handlers[name] = window.tool_handler
                tools.append(tool)

    def handle(name: str, args: dict[str, Any]) -> str:
        handler = handlers.get(name)
        if handler is None:
            return f"error: unknown tool {name!r}; known tools: {', '.join(handlers) or 'none'}"
        return str(handler(name, args))

    return Window(
        messages=last.messages,
        tools=tools,
        tool_handler=handle if tools else None,
        retrievable=[text for w in (*earlier, last) for text in w.retrievable],
    )


def _check_rewriting_stage(position: int, label: str, stage: ContextStrategy) -> None:
    if not getattr(stage, "rewrites_in_place", False):
        raise ValueError(
            f"pipeline: stage {position} {label!r} cannot come before another stage: only a "
            f"stage that rewrites messages in place can ({', '.join(rewriting_kinds())}); "
            f"put {label!r} last"
        )
    if getattr(stage, "budget_tokens", None) is not None:
        raise ValueError(
            f"pipeline: stage {position} {label!r} has budget_tokens, which drops messages; "
            "give the budget to the last stage"
        )


def rewriting_kinds() -> list[str]:
    """The built-in strategies that may come before another stage."""
    from .lookup import builtin_strategies

    return sorted(
        name
        for name, factory in builtin_strategies().items()
        if getattr(factory, "rewrites_in_place", False)
    )


def _built(position: int, entry: Any) -> tuple[str, ContextStrategy]:
    """A stage from its preset form: ``toolprune`` or ``{compaction-cached: {keep_turns: 6}}``."""
    from .lookup import strategy_kinds
    from .names import display_name
    from .params import StrategyParamError, check_params

    params: dict[str, Any] = {}
    if isinstance(entry, str):
        kind = entry
    elif (
        isinstance(entry, dict)
        and len(entry) == 1
        and isinstance(next(iter(entry.values())) or {}, dict)
    ):
        kind, given = next(iter(entry.items()))
        params = dict(given or {})
    else:
        raise ValueError(
            f"pipeline: stage {position} must be a strategy name or one name with its "
            f"parameters, as in {{compaction-cached: {{keep_turns: 6}}}}; got {entry!r}"
        )
    kinds = strategy_kinds()
    if kind == "pipeline" or kind not in kinds:
        from .params import did_you_mean

        known = sorted(k for k in kinds if k != "pipeline")
        raise ValueError(
            f"pipeline: stage {position} names unknown strategy {kind!r}"
            f"{did_you_mean(kind, known)}; known strategies: {', '.join(known)}"
        )
    try:
        checked = check_params(f"stage {position} {kind!r}", kinds[kind], params)
    except StrategyParamError as exc:
        raise ValueError(f"pipeline: {exc}") from None
    return display_name(kind, checked), kinds[kind](**checked)


def _own_params(stage: ContextStrategy) -> dict[str, Any]:
    params = getattr(stage, "params", None)
    return dict(params()) if callable(params) else {}
