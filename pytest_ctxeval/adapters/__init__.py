"""Adapters: the context code teams ship, run unchanged as strategies.

Each module here wraps one library (LangChain, the OpenAI Agents SDK) and
imports it only when a strategy is built, so the package never needs it.  The
registry knows the kinds from :data:`ADAPTERS` below and imports a module only
when one of its kinds is built or its parameters are checked; nothing else
imports these modules.  A kind whose library is missing is one usage error
naming the extra to install.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["ADAPTERS", "Adapter", "require"]


@dataclass(frozen=True)
class Adapter:
    """Where a kind lives and what it needs: read without importing anything."""

    module: str
    attr: str
    # The module of the library it runs, imported when the kind is named.
    library: str
    # The extra that installs the library: ``pip install "pytest-ctxeval[<extra>]"``.
    extra: str
    description: str


ADAPTERS: dict[str, Adapter] = {
    "langchain-trim": Adapter(
        "pytest_ctxeval.adapters.langchain_trim",
        "LangChainTrimStrategy",
        "langchain_core.messages",
        "langchain",
        "LangChain's own trim_messages (langchain_core.messages), unchanged.",
    ),
    "openai-agents-session": Adapter(
        "pytest_ctxeval.adapters.openai_agents",
        "AgentsSessionStrategy",
        "agents",
        "openai-agents",
        "The OpenAI Agents SDK's SQLiteSession and call_model_input_filter, unchanged.",
    ),
}


def require(module: str, kind: str) -> Any:
    """``module`` imported, or one line naming the extra that installs it."""
    from ..strategies.registration import UnknownStrategyError

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = ADAPTERS[kind].extra
        raise UnknownStrategyError(
            f"strategy {kind!r} needs {module.split('.')[0]!r}, which is not installed "
            f'({exc}); install it with: pip install "pytest-ctxeval[{extra}]"'
        ) from None
