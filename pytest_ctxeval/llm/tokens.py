"""Token counting, cached per distinct text so total work grows with the
amount of text, not with turns x text.

The mock models, and counts that belong to no model (scenario building at
collection), use tiktoken directly: importing litellm costs seconds. A real
model counts with litellm's tokenizer for that model, or with its own when
one is given (``--ctx-tokenizer``: see model_tokenizer).  ``tokenizer_name``
says which counted, for the records."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..messages import (
    content_text,
    identical_after_first,
    identical_prefix_length,
    kept_after_new_first,
)
from .local_tokenizer import ENCODING, count_locally, local_encoding
from .running_totals import RunningTotals

if TYPE_CHECKING:
    from .model_tokenizer import ModelTokenizer

# OpenAI's chat format costs a few tokens per message and per reply.
PER_MESSAGE_OVERHEAD = 4
PER_REQUEST_OVERHEAD = 3
# Mock models count like a current OpenAI model (see local_tokenizer.py).
MOCK_TOKENIZER_MODEL = "gpt-4o-mini"


# A model's own tokenizer, by model string (``use_tokenizer``).
_OWN: dict[str, ModelTokenizer] = {}
_NAMES: dict[str, str] = {}  # tokenizer_name's answers for the other models


def tokenizer_model(model: str) -> str:
    return MOCK_TOKENIZER_MODEL if model.startswith("ctxeval/") else model


def use_tokenizer(model: str, tokenizer: ModelTokenizer) -> None:
    """Count ``model``'s tokens with ``tokenizer`` from now on."""
    _OWN[model] = tokenizer
    clear_token_counts()  # counts made before were another tokenizer's


def forget_tokenizers() -> None:
    """Back to litellm's tokenizers for every model."""
    if _OWN:
        _OWN.clear()
        clear_token_counts()


def tokenizer_name(model: str) -> str:
    """Which tokenizer counts ``model``'s tokens, as records name it:
    ``gguf:FILE`` / ``tokenizer.json:FILE`` (its own), ``tiktoken:ENCODING``
    or ``huggingface:MODEL`` (litellm's choice)."""
    own = _OWN.get(model)
    if own is not None:
        return own.name
    name = _NAMES.get(model)
    if name is None:
        name = _NAMES[model] = _litellm_tokenizer_name(tokenizer_model(model))
    return name


def _litellm_tokenizer_name(tokenizer: str) -> str:
    if tokenizer == MOCK_TOKENIZER_MODEL and local_encoding() is not None:
        return f"tiktoken:{ENCODING}"
    try:
        from .litellm_import import import_litellm

        litellm = import_litellm()  # first: it sets litellm up to stay offline
        from litellm.litellm_core_utils import token_counter as counter

        chosen = litellm.utils.select_tokenizer(tokenizer)
        if chosen["type"] == "openai_tokenizer":
            return f"tiktoken:{counter.openai_tokenizer_encoding_name(tokenizer)}"
        return f"huggingface:{tokenizer}"
    except Exception:  # an older litellm: name what was asked for
        return f"litellm:{tokenizer}"


@lru_cache(maxsize=200_000)
def count_text_tokens(text: str, model: str = MOCK_TOKENIZER_MODEL) -> int:
    if not text:
        return 0
    own = _OWN.get(model)
    if own is not None:
        return own.count(text)
    # Every mock counts with one tokenizer's model: the text is tokenized once
    # under that name, whichever mock's name (or none) the caller passed (the
    # session path says ``ctxeval/oracle``, the mock client passes nothing).
    return _tokenized(text, tokenizer_model(model))


@lru_cache(maxsize=200_000)
def _tokenized(text: str, tokenizer: str) -> int:
    if tokenizer != MOCK_TOKENIZER_MODEL:
        try:
            return _litellm_count(text, tokenizer)
        except Exception:  # an unknown tokenizer must not break a run: fall back
            pass
    encoding = local_encoding()
    if encoding is None:  # litellm's bundled encoding is missing: litellm finds its own
        return _litellm_count(text, MOCK_TOKENIZER_MODEL)
    return count_locally(encoding, text)


def clear_token_counts() -> None:
    """Forget every count (another tokenizer counts from now on)."""
    count_text_tokens.cache_clear()
    _tokenized.cache_clear()


def _litellm_count(text: str, model: str) -> int:
    from .litellm_import import import_litellm

    return int(import_litellm().token_counter(model=model, text=text))


def message_tokens(message: dict[str, Any], model: str = MOCK_TOKENIZER_MODEL) -> int:
    tokens = PER_MESSAGE_OVERHEAD + count_text_tokens(content_text(message), model)
    if message.get("tool_calls"):
        tokens += count_text_tokens(json.dumps(message["tool_calls"], sort_keys=True), model)
    return tokens


def window_tokens(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    model: str = MOCK_TOKENIZER_MODEL,
) -> int:
    return (
        PER_REQUEST_OVERHEAD
        + sum(message_tokens(m, model) for m in messages)
        + tools_tokens(tools, model)
    )


def tools_tokens(tools: list[dict[str, Any]] | None, model: str = MOCK_TOKENIZER_MODEL) -> int:
    return count_text_tokens(json.dumps(tools, sort_keys=True), model) if tools else 0


def same_tools(previous: list[dict[str, Any]] | None, current: list[dict[str, Any]] | None) -> bool:
    """Whether two requests define the same tools (no tools and [] are the same)."""
    return (previous or []) is (current or []) or (previous or []) == (current or [])


def shared_prefix_tokens(
    previous: list[dict[str, Any]],
    current: list[dict[str, Any]],
    model: str = MOCK_TOKENIZER_MODEL,
    *,
    previous_tools: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> int:
    """Tokens two requests have in common from the start: what a provider's
    prompt cache could reuse.

    Providers put the tool definitions before the messages, so a tool that
    changed breaks the whole prefix; with the same tools the prefix is the
    tools plus the leading messages both requests share."""
    if not same_tools(previous_tools, tools):
        return 0
    shared = shared_prefix_length(previous, current)
    return tools_tokens(tools, model) + sum(message_tokens(m, model) for m in current[:shared])


def shared_prefix_length(
    previous: list[dict[str, Any]],
    current: list[dict[str, Any]],
    identical: int | None = None,
    after_first: int | None = None,
) -> int:
    """How many leading messages two requests have in common (usually the
    very same objects, so identity is checked first, in one pass, unless the
    caller knows that ``identical`` leading messages are, and, when the first
    message is not, ``after_first`` after it)."""
    if identical is None:
        identical = identical_prefix_length(previous, current)
    if identical == 0 and previous and current and current[0] == previous[0]:
        # A first message built anew with the same content: the rest may still be the same objects.
        if after_first is None:
            after_first = identical_after_first(previous, current)
        identical = 1 + after_first
    shared, limit = identical, min(len(previous), len(current))
    while shared < limit and (
        current[shared] is previous[shared] or current[shared] == previous[shared]
    ):
        shared += 1
    return shared


class PromptMeter:
    """Prompt tokens of successive requests in one session.

    Consecutive windows share most of their messages (usually the very same
    objects), so each request only counts the messages after the prefix it
    shares with the previous one, or after the first message when that alone
    is new: a long session costs time in proportion to its new text, not to
    turns x text."""

    def __init__(self, model: str = MOCK_TOKENIZER_MODEL) -> None:
        self.model = model
        self._messages: list[dict[str, Any]] = []
        self._totals = RunningTotals()  # tokens of messages[:i]
        self._tools: list[dict[str, Any]] | None = None
        self._tools_tokens = 0

    def measure(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        identical: int | None = None,
        after_first: int | None = None,
    ) -> tuple[int, int]:
        """(prompt tokens, tokens of the prefix shared with the previous request).

        The shared prefix is the tools plus the shared leading messages, or 0
        when the tools changed (see ``shared_prefix_tokens``).  ``identical``,
        when the caller knows it: how many leading messages are the very
        objects of the previous request's; ``after_first``, when that is
        none: how many after the first are."""
        previous, totals = self._messages, self._totals
        if identical is None:
            identical = identical_prefix_length(previous, messages)
        kept = kept_after_new_first(previous, messages, identical, after_first)
        if kept and messages[0] != previous[0]:
            # Only the first message is new: the totals after it stay, shifted.
            shared = 0
            totals.keep(kept)
            totals.rewrite_first(message_tokens(messages[0], self.model))
            previous[0] = messages[0]
        else:
            # A first message rebuilt equal: the same messages follow it.
            shared = kept = shared_prefix_length(previous, messages, identical, max(kept - 1, 0))
            totals.keep(kept)
        for message in messages[kept:]:
            totals.add(message_tokens(message, self.model))
        # Its own list, updated in place: the caller may reuse the window's
        # list for the next request (a lent window), and copying it whole
        # each time would cost turns x messages.
        del previous[kept:]
        previous.extend(messages[kept:])
        tools_unchanged = same_tools(self._tools, tools)
        if not tools_unchanged:
            self._tools_tokens = tools_tokens(tools, self.model)
        self._tools = tools
        prefix = self._tools_tokens + totals.at(shared) if tools_unchanged else 0
        return PER_REQUEST_OVERHEAD + totals.last + self._tools_tokens, prefix
