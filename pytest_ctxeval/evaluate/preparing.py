"""Preparing a probe: the session simulated (once per run), the probe's
window built and checked, everything about it recorded that needs no model
call.  A probe that needs none comes back without a window."""

from __future__ import annotations

from functools import partial
from typing import Any

from ..llm.cassettes import CallContext, call_context
from ..llm.client import ModelClient
from ..llm.tokens import message_tokens, shared_prefix_tokens, tools_tokens, window_tokens
from ..probe_session import ProbeSession
from ..results.run_info import strategy_params
from ..scenario.build import Conversation, ProbeCase
from ..strategies.base import fork_strategy
from ..strategies.registry import StrategySpec
from ..strategies.window_rules import keeps_system_prompt, window_violations
from .calibration import decoy_pass, uncheckable
from .items import new_record as _new_record
from .ledger import FactLedger, put_ledger
from .run_state import EvalSettings, RunKey, _Pending
from .session_costs import cache_rules_named, fill_session_fields
from .simulate import SessionTrace, simulate
from .survival import fact_survival
from .sweep import history, planted_facts, sweep_cuts, trace_at
from .window_trace import window_trace


class Preparing:
    """The evaluator's preparing half (a mixin of ``runner.Evaluator``)."""

    settings: EvalSettings
    client: ModelClient
    _traces: dict[RunKey, SessionTrace]
    _ledgers: dict[RunKey, FactLedger]

    def _prepare(
        self, conversation: Conversation, spec: StrategySpec, probe: ProbeCase, source: str
    ) -> _Pending:
        model = self.settings.model
        record = _new_record(conversation, spec, probe, source, model)
        item = _Pending(probe, record)
        try:
            item.trace = trace = trace_at(self._trace(conversation, spec, source), probe)
            record.session_prompt_tokens = [r.prompt_tokens for r in trace.requests]
            fill_session_fields(record, trace, model)
            record.strategy_params = strategy_params(spec, trace.strategy)
            # The fork still counts into the shared trace: take this probe's
            # share (the session's calls are counted once, in session_*), then
            # put the session's totals back for the next probe.
            totals = (trace.strategy_calls, trace.strategy_cost_usd, trace.strategy_prompt_tokens)
            try:
                strategy = fork_strategy(trace.strategy)
                strategy.add({"role": "user", "content": probe.question})
                window = strategy.window()
            finally:
                item.strategy_calls = trace.strategy_calls - totals[0]
                item.strategy_cost_usd = trace.strategy_cost_usd - totals[1]
                item.strategy_input_tokens = trace.strategy_prompt_tokens - totals[2]
                trace.strategy_calls, trace.strategy_cost_usd, trace.strategy_prompt_tokens = totals
        except Exception as exc:  # a strategy bug is this item's error, not the run's
            record.error = f"strategy {spec.name!r} raised {type(exc).__name__}: {exc}"
            return item
        # What the full context would send: the history, then the question.
        given = ProbeSession(
            history(conversation, probe), {"role": "user", "content": probe.question}
        )
        record.window_trace = window_trace(
            given,
            window.messages,
            window.tools,
            message_tokens=partial(message_tokens, model=model),
            tools_tokens=partial(tools_tokens, model=model),
            tokens_key=model,
        )
        ledger = self._ledgers.get((source, conversation.id, spec.name))
        if ledger is not None and not hasattr(probe, "base_id"):  # a sweep point sees less
            put_ledger(record, ledger)
        record.fact_survival = fact_survival(
            planted_facts(conversation, probe),
            window,
            coincidental=conversation.coincidental_answers,
        )
        record.prompt_tokens = window_tokens(window.messages, window.tools, model)
        record.cached_prefix_tokens = shared_prefix_tokens(
            item.trace.last_window,
            window.messages,
            model,
            previous_tools=item.trace.last_tools,
            tools=window.tools,
        )
        if item.trace.cache is not None:
            use = item.trace.cache.peek(window.messages, window.tools)
            record.probe_cached_tokens = use.cached_tokens
            record.probe_cache_write_tokens = use.write_tokens
        broken = window_violations(given, window, keep_system=keeps_system_prompt(spec.params))
        if broken:
            # A window that breaks the rules would make any verdict meaningless.
            record.error = f"strategy {spec.name!r} broke the window rules: " + "; ".join(broken)
            return item
        limit = self.settings.context_window
        if limit is not None and record.prompt_tokens > limit:
            record.error = (
                f"strategy {spec.name!r} built a window of {record.prompt_tokens:,} tokens, "
                f"over the model's context window of {limit:,}"
            )
            return item
        found = decoy_pass(conversation, probe)
        if found is not None:
            # A decoy that knows nothing meets the expectation: no verdict, no model call.
            uncheckable(record, found, item.trace)
            return item
        item.window = window
        return item

    def _trace(self, conversation: Conversation, spec: StrategySpec, source: str) -> SessionTrace:
        key = (source, conversation.id, spec.name)
        if key not in self._traces:
            strategy = spec.create()
            context = CallContext(conversation.id, spec.name, None, "strategy call in the session")
            with call_context(context):
                self._traces[key] = simulate(
                    conversation,
                    strategy,
                    client=self.client,
                    model=self.settings.model,
                    fork_at=sweep_cuts(conversation, self.settings.sweep_every),
                    cache_rules=cache_rules_named(self.settings.cache_model, self.settings.model),
                    seconds_per_request=self.settings.seconds_per_request,
                    observe=self._ledger_for(key, conversation),
                )
        return self._traces[key]

    def _ledger_for(self, key: RunKey, conversation: Conversation) -> Any:
        """The observer that keeps the run's fact ledger (see evaluate.ledger);
        None when the scenario plants no facts."""
        if not conversation.facts:
            return None
        ledger = FactLedger(list(conversation.facts), dict(conversation.coincidental_answers))
        self._ledgers[key] = ledger
        return lambda window, compacted, unchanged: ledger.observe(
            window, compacted=compacted, unchanged=unchanged
        )
