"""The one place litellm is imported: lazily, offline, mocks registered."""

from __future__ import annotations

from functools import cache
from types import ModuleType

from .litellm_import import import_litellm


@cache
def get_litellm() -> ModuleType:
    litellm = import_litellm()
    from .providers import register_mock_provider

    register_mock_provider(litellm)
    return litellm
