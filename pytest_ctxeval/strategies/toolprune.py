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
from .registry import register_strategy
from .tool_results import ToolResultStrategy
from .turns import require_at_least


@register_strategy("toolprune")
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
    ) -> None:
        super().__init__(keep_last, budget_tokens)
        self.rules = PruneRules(
            json_items, log_before, log_after, log_head, log_tail, file_head, file_tail
        )
        require_at_least("toolprune", 0, **asdict(self.rules))

    def params(self) -> dict[str, Any]:
        return {**super().params(), **asdict(self.rules)}

    def condense(self, index: int, message: Message) -> Message:
        text = content_text(message)
        pruned = prune(text, self.rules)
        return message if pruned == text else {**message, "content": pruned}
