"""``observation-mask``: older tool results become a placeholder; the last 3 stay.

Observation masking as studied by JetBrains Research (Lindenbauer et al.,
"The Complexity Trap", 2025: as good as LLM summarisation for coding agents,
at a fraction of the cost), with the default of Anthropic's context editing
(``clear_tool_uses``: keep the 3 most recent tool results).  The calls stay,
so the model still sees what it did, only not what it saw.
"""

from __future__ import annotations

from typing import Any

from .base import Message, content_text
from .registration import register_strategy
from .tool_results import ToolResultStrategy
from .unchanged_prefix import tracks_unchanged_prefix

PLACEHOLDER = "[Old tool result content cleared: {lines}]"


@register_strategy("observation-mask")
@tracks_unchanged_prefix
class ObservationMaskStrategy(ToolResultStrategy):
    name = "observation-mask"
    description = "Replace older tool results with a placeholder; keep the last 3 whole."

    def __init__(
        self, keep_last: int = 3, placeholder: str = PLACEHOLDER, budget_tokens: int | None = None
    ) -> None:
        super().__init__(keep_last, budget_tokens)
        self.placeholder = placeholder

    def params(self) -> dict[str, Any]:
        return {**super().params(), "placeholder": self.placeholder}

    def condense(self, index: int, message: Message) -> Message:
        lines = len(content_text(message).splitlines())
        counted = "1 line" if lines == 1 else f"{lines} lines"
        # replace(), not format(): a placeholder may hold other braces.
        return {**message, "content": self.placeholder.replace("{lines}", counted)}
