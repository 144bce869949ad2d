"""Built-in context strategies and the strategy registry."""

from .base import BaseStrategy, ContextStrategy, Message, StrategyContext, Window
from .registry import StrategySpec, UnknownStrategyError, register_strategy, resolve

__all__ = [
    "BaseStrategy",
    "ContextStrategy",
    "Message",
    "StrategyContext",
    "StrategySpec",
    "UnknownStrategyError",
    "Window",
    "register_strategy",
    "resolve",
]
