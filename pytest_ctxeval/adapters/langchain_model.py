"""The run's model as a LangChain chat model, for middleware that calls one.

LangChain's ``SummarizationMiddleware`` writes its summary with a
``BaseChatModel``.  :func:`harness_chat_model` wraps the strategy's
``StrategyContext.complete``, so the middleware's calls go through this
harness's counted client: they are counted as strategy calls, recorded in
cassettes and, on the mock model, deterministic.  The class is built on
first use, so importing this module does not import LangChain.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from ..strategies.base import Message
from . import require

LLM_TYPE = "ctxeval-harness"


@cache
def _model_class(kind: str) -> type[Any]:
    models = require("langchain_core.language_models", kind)
    lc = require("langchain_core.messages", kind)
    outputs = require("langchain_core.outputs", kind)
    from .langchain_trim import from_langchain

    class HarnessChatModel(models.BaseChatModel):  # type: ignore[misc, name-defined]
        """Sends LangChain's prompt, converted to chat messages, to the run's model."""

        complete: Callable[[list[Message]], str]

        @property
        def _llm_type(self) -> str:
            return LLM_TYPE

        def _generate(
            self,
            messages: list[Any],
            stop: list[str] | None = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> Any:
            reply = lc.AIMessage(content=self.complete(from_langchain(messages)))
            return outputs.ChatResult(generations=[outputs.ChatGeneration(message=reply)])

    return HarnessChatModel


def harness_chat_model(complete: Callable[[list[Message]], str], kind: str) -> Any:
    """A LangChain ``BaseChatModel`` whose every call is ``complete(messages)``."""
    return _model_class(kind)(complete=complete)
