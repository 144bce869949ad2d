"""Example: evaluate the context code you already have, in a few lines.

Most teams already call a trimming function before each model request, for
example LangChain's ``trim_messages``.  To evaluate it, wrap it in a strategy:
keep the history, call your function in ``window()``.  This example calls
the real ``langchain_core.messages.trim_messages`` (install it with
``pip install "pytest-ctxeval[langchain]"``):

    pytest --ctx-strategy=pytest_ctxeval.examples.trim:TrimMessagesStrategy
    pytest --ctx-strategy="pytest_ctxeval.examples.trim:TrimMessagesStrategy(max_tokens=2000)"

The ``langchain-trim`` strategy runs the same function with every one of its
parameters; this file shows how little it takes to wrap your own.  To adapt
it, copy it into your project's ``strategies/`` folder (say as
``strategies/my_trim.py``) and run ``--ctx-strategy=my_trim:TrimMessagesStrategy``:
pytest-ctxeval finds modules in that folder even when it is not on
``sys.path``.  Or register it for your package's users in ``pyproject.toml``:

    [project.entry-points."pytest_ctxeval.strategies"]
    trim-messages = "yourpkg.strategies:TrimMessagesStrategy"
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import trim_messages

from pytest_ctxeval.adapters.langchain_trim import back_to_session, from_langchain, to_langchain
from pytest_ctxeval.strategies.base import (
    BaseStrategy,
    Window,
    current_exchange_start,
    messages_tokens,
)


class TrimMessagesStrategy(BaseStrategy):
    """The whole integration: history in, your function's output out."""

    name = "example-trim"
    description = "LangChain's trim_messages(strategy='last'), wrapped as a strategy."

    def __init__(self, max_tokens: int = 4000) -> None:
        super().__init__()
        self.max_tokens = max_tokens

    def params(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens}

    def window(self) -> Window:
        kept = trim_messages(
            to_langchain(self.history),  # OpenAI-style dicts as LangChain messages
            max_tokens=self.max_tokens,
            # Count as the harness counts every budget.
            token_counter=lambda ms: messages_tokens(from_langchain(ms), self.count_tokens),
            strategy="last",
            include_system=True,
            start_on="human",
        )
        messages = back_to_session(self.history, kept)  # the session's own dicts
        # Your function may drop everything when one turn is over the limit;
        # the question being asked must still reach the model.
        current = self.history[current_exchange_start(self.history) :]
        if messages[-len(current) :] != current:
            messages = [m for m in messages if m["role"] == "system"] + current
        return Window(messages=messages)
