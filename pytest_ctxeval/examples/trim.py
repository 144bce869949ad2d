"""Example: evaluate the context code you already have, in a few lines.

Most teams already call a trimming function before each model request, for
example LangChain's ``trim_messages``.  To evaluate it, wrap it in a strategy:
keep the history, call your function in ``window()``.  This example ships with
pytest-ctxeval, so it runs in any project:

    pytest --ctx-strategy=pytest_ctxeval.examples.trim:TrimMessagesStrategy
    pytest --ctx-strategy="pytest_ctxeval.examples.trim:TrimMessagesStrategy(max_tokens=2000)"

To adapt it, copy this file into your project's ``strategies/`` folder (say as
``strategies/my_trim.py``) and run ``--ctx-strategy=my_trim:TrimMessagesStrategy``:
pytest-ctxeval finds modules in that folder even when it is not on
``sys.path``.  Or register it for your package's users in ``pyproject.toml``:

    [project.entry-points."pytest_ctxeval.strategies"]
    trim-messages = "yourpkg.strategies:TrimMessagesStrategy"

``trim_messages`` below is a small stand-in with LangChain's signature, over
OpenAI-style dicts, so this example needs no extra dependency; with
LangChain installed, import the real one instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_ctxeval.strategies.base import (
    BaseStrategy,
    Window,
    current_exchange_start,
    messages_tokens,
)

Message = dict[str, Any]


def trim_messages(
    messages: list[Message],
    *,
    max_tokens: int,
    token_counter: Callable[[list[Message]], int],
    strategy: str = "last",
    include_system: bool = True,
    start_on: str = "human",
) -> list[Message]:
    """Stand-in for ``langchain_core.messages.trim_messages`` (strategy="last")."""
    if strategy != "last":
        raise NotImplementedError("this stand-in implements strategy='last' only")
    system = messages[:1] if include_system and messages and messages[0]["role"] == "system" else []
    kept: list[Message] = []
    for message in reversed(messages[len(system) :]):
        if token_counter(system + [message] + kept) > max_tokens:
            break
        kept.insert(0, message)
    wanted = {"human": "user", "ai": "assistant"}.get(start_on, start_on)
    while kept and kept[0]["role"] != wanted:  # never start on a tool result
        kept.pop(0)
    return system + kept


class TrimMessagesStrategy(BaseStrategy):
    """The whole integration: history in, your function's output out."""

    name = "example-trim"
    description = "LangChain-style trim_messages(strategy='last'), wrapped as a strategy."

    def __init__(self, max_tokens: int = 4000) -> None:
        super().__init__()
        self.max_tokens = max_tokens

    def params(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens}

    def window(self) -> Window:
        kept = trim_messages(
            self.history,
            max_tokens=self.max_tokens,
            token_counter=lambda ms: messages_tokens(ms, self.count_tokens),
        )
        # Your function may drop everything when one turn is over the limit;
        # the question being asked must still reach the model.
        current = self.history[current_exchange_start(self.history) :]
        if kept[-len(current) :] != current:
            kept = [m for m in kept if m["role"] == "system"] + current
        return Window(messages=kept)
