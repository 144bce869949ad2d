"""``anthropic-context-editing``: Anthropic's ``clear_tool_uses_20250919`` edit,
emulated offline from its documented semantics.

Anthropic applies context editing on its side, before the prompt reaches the
model: the client keeps sending the whole conversation, and the API clears
old tool results in it (https://platform.claude.com/docs/en/build-with-claude/
context-editing).  No library runs it locally, so this kind applies the
documented rules to the whole session at every call:

- ``trigger`` (default 100,000 ``input_tokens``; or ``trigger_type=tool_uses``):
  the edit activates once the prompt, as it would be sent with the results
  cleared so far, exceeds it.  Tokens are counted as every budget here is
  counted (the run's tokenizer and per-message overheads).
- When it activates it clears the oldest tool results first, all but the
  ``keep`` (3) most recent tool uses, skipping tools in ``exclude_tools``;
  each cleared result's content becomes ``placeholder``.
  ``clear_tool_inputs`` (true, or a list of tool names) also empties the
  call's arguments (``{}``).
- ``clear_at_least`` (input tokens): an activation that would clear fewer
  tokens than this clears nothing.
- What was cleared stays cleared for the rest of the chat (the same requests
  reach the same edits), so between activations the prompt grows by
  appending and its cached prefix holds; an activation edits earlier
  messages, which the prompt-cache model sees as a break
  (``message_edited``) at the first newly cleared result: the cache
  invalidation the docs warn about, and ``clear_at_least`` bounds how often
  it happens.

The thinking-block edit (``clear_thinking_20251015``) is not emulated: the
sessions here carry no thinking blocks.
"""

from __future__ import annotations

from typing import Any, Literal

from ..strategies.base import BaseStrategy, Message, Window, messages_tokens, tool_call_ids

KIND = "anthropic-context-editing"
DEFAULT_PLACEHOLDER = "[Tool result cleared by context editing]"


class AnthropicContextEditingStrategy(BaseStrategy):
    name = KIND
    description = "Anthropic's clear_tool_uses context edit, emulated from its documented rules."

    def __init__(
        self,
        trigger: int = 100_000,
        trigger_type: Literal["input_tokens", "tool_uses"] = "input_tokens",
        keep: int = 3,
        clear_at_least: int | None = None,
        exclude_tools: list[str] | None = None,
        clear_tool_inputs: bool | list[str] = False,
        placeholder: str = DEFAULT_PLACEHOLDER,
    ) -> None:
        super().__init__()
        for name, value in (
            ("trigger", trigger),
            ("keep", keep),
            ("clear_at_least", clear_at_least),
        ):
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, got {value!r}")
        self.trigger = trigger
        self.trigger_type = trigger_type
        self.keep = keep
        self.clear_at_least = clear_at_least
        self.exclude_tools = list(exclude_tools or [])
        self.clear_tool_inputs = clear_tool_inputs
        self.placeholder = placeholder
        # Call ids whose results the chat's earlier activations cleared.
        self.cleared: list[str] = []
        self.activations = 0

    def params(self) -> dict[str, Any]:
        return {
            "trigger": self.trigger,
            "trigger_type": self.trigger_type,
            "keep": self.keep,
            "clear_at_least": self.clear_at_least,
            "exclude_tools": self.exclude_tools,
            "clear_tool_inputs": self.clear_tool_inputs,
            "placeholder": self.placeholder,
        }

    def end_session(self) -> None:
        super().end_session()
        self.cleared = []

    def window(self) -> Window:
        sent = self._edited(self.cleared)
        if self._over_trigger(sent):
            candidates = self._candidates()
            if candidates:
                edited = self._edited(self.cleared + candidates)
                freed = self._tokens(sent) - self._tokens(edited)
                if self.clear_at_least is None or freed >= self.clear_at_least:
                    self.cleared = self.cleared + candidates
                    self.activations += 1
                    sent = edited
        return Window(messages=sent)

    def _tokens(self, messages: list[Message]) -> int:
        return messages_tokens(messages, self.count_tokens)

    def _over_trigger(self, messages: list[Message]) -> bool:
        if self.trigger_type == "tool_uses":
            return len(self._tool_uses()) > self.trigger
        return self._tokens(messages) > self.trigger

    def _tool_uses(self) -> list[tuple[str, str]]:
        """(call id, tool name) of every tool use in the chat, oldest first."""
        return [
            (str(call.get("id")), str(call.get("function", {}).get("name", "")))
            for m in self.history
            if m.get("role") == "assistant"
            for call in m.get("tool_calls") or []
        ]

    def _candidates(self) -> list[str]:
        """The tool uses an activation clears now: the oldest, all but ``keep``."""
        uses = self._tool_uses()
        older = uses[: max(len(uses) - self.keep, 0)]
        answered = {m.get("tool_call_id") for m in self.history if m.get("role") == "tool"}
        return [
            ident
            for ident, name in older
            if ident not in self.cleared and ident in answered and name not in self.exclude_tools
        ]

    def _clears_input(self, name: str) -> bool:
        if isinstance(self.clear_tool_inputs, list):
            return name in self.clear_tool_inputs
        return bool(self.clear_tool_inputs)

    def _edited(self, cleared: list[str]) -> list[Message]:
        """The session with the results of ``cleared`` calls cleared; other
        messages are the session's own dicts."""
        if not cleared:
            return list(self.history)
        gone = set(cleared)
        out: list[Message] = []
        for message in self.history:
            if message.get("role") == "tool" and message.get("tool_call_id") in gone:
                out.append({**message, "content": self.placeholder})
            elif set(tool_call_ids(message)) & gone:
                calls = [
                    {**call, "function": {**call["function"], "arguments": "{}"}}
                    if str(call.get("id")) in gone and self._clears_input(call["function"]["name"])
                    else call
                    for call in message["tool_calls"]
                ]
                out.append(
                    message if calls == message["tool_calls"] else {**message, "tool_calls": calls}
                )
            else:
                out.append(message)
        return out
