"""``toolprune``: deterministic pruning of older tool outputs, no model involved.

JSON arrays keep their first 2 items plus a count and the key schema; logs
keep 5 lines before and 15 after every error marker (else head and tail);
file reads keep their first and last 20 lines with a count of what was
pruned.  The last ``keep_last`` tool results (1) go in whole: the model is
usually working on the newest one.

Known failure: it drops the one line that mattered.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .base import Message, content_text
from .pruning import PruneRules, prune
from .registration import register_strategy
from .tool_results import ToolResultStrategy
from .turns import require_at_least
from .unchanged_prefix import tracks_unchanged_prefix

CAPPED = "\n[… output capped at {cap} tokens; {n} more characters not shown …]"


@register_strategy("toolprune")
@tracks_unchanged_prefix
class ToolPruneStrategy(ToolResultStrategy):
    name = "toolprune"
    description = (
        "Prune older tool outputs: JSON to 2 items + schema, logs around errors, files head/tail."
    )

    def __init__(
        self,
        keep_last: int = 1,
        json_items: int = 2,
        log_before: int = 5,
        log_after: int = 15,
        log_head: int = 10,
        log_tail: int = 20,
        file_head: int = 20,
        file_tail: int = 20,
        budget_tokens: int | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        super().__init__(keep_last, budget_tokens)
        self.rules = PruneRules(
            json_items, log_before, log_after, log_head, log_tail, file_head, file_tail
        )
        require_at_least("toolprune", 0, **asdict(self.rules))
        if max_output_tokens is not None:
            require_at_least("toolprune", 1, max_output_tokens=max_output_tokens)
        # A cap on every single output, the newest too: what is left after
        # pruning is cut to its first max_output_tokens tokens.
        self.max_output_tokens = max_output_tokens

    def params(self) -> dict[str, Any]:
        params = {**super().params(), **asdict(self.rules)}
        if self.max_output_tokens is not None:
            params["max_output_tokens"] = self.max_output_tokens
        return params

    def add(self, message: Message) -> None:
        super().add(message)
        if self.max_output_tokens is not None and message.get("role") == "tool":
            self._shown[-1] = self._capped(message)

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        if self._shown[index] is message and message.get("role") == "tool":
            self._shown[index] = self._capped(message)

    def condense(self, index: int, message: Message) -> Message:
        text = content_text(message)
        pruned = prune(text, self.rules)
        condensed = message if pruned == text else {**message, "content": pruned}
        return self._capped(condensed)

    def _capped(self, message: Message) -> Message:
        text = content_text(message)
        cap = self.max_output_tokens
        if cap is None or self.count_tokens(text) <= cap:
            return message
        low, high = 0, len(text)  # tokens grow with length: binary search the cut
        while low < high:
            middle = (low + high + 1) // 2
            if self.count_tokens(text[:middle]) <= cap:
                low = middle
            else:
                high = middle - 1
        note = CAPPED.format(cap=cap, n=len(text) - low)
        return {**message, "content": text[:low] + note}
