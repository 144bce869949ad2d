"""Built-in context strategies and the strategy registry."""

from .base import BaseStrategy, ContextStrategy, Message, StrategyContext, Window
from .registry import (
    StrategyNameClashError,
    StrategySpec,
    UnknownStrategyError,
    register_strategy,
    resolve,
)

__all__ = [
    "BaseStrategy",
    "ContextStrategy",
    "Message",
    "StrategyContext",
    "StrategyNameClashError",
    "StrategySpec",
    "UnknownStrategyError",
    "Window",
    "register_strategy",
    "resolve",
]
