"""Which model strings can be used: the mocks, or anything litellm routes and
has credentials for."""

from __future__ import annotations

import os
from types import ModuleType

from .providers import MOCK_MODELS, PROVIDER


def describe_unknown_model(
    model: str, api_base: str | None = None, *, calls_model: bool = True
) -> str | None:
    """None when the model can be called, else what is wrong with it, in one line.

    ``calls_model=False`` (replaying cassettes only) skips the credentials
    check: a replay sends nothing, so it needs no key."""
    if model.startswith(f"{PROVIDER}/"):
        name = model.removeprefix(f"{PROVIDER}/")
        if name in MOCK_MODELS:
            return None
        return f"unknown mock model {model!r}; available: " + ", ".join(
            f"{PROVIDER}/{m}" for m in MOCK_MODELS
        )
    from ._litellm import get_litellm

    litellm = get_litellm()
    try:
        litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:
        return (
            f"litellm cannot route model {model!r}; use 'provider/model' "
            "(e.g. openai/gpt-4o-mini, or openai/<name> with --ctx-api-base) or a mock: "
            + ", ".join(f"{PROVIDER}/{m}" for m in MOCK_MODELS)
        )
    # A server named with --ctx-api-base is usually local and needs no key.
    if api_base is None and calls_model:
        return describe_missing_credentials(litellm, model)
    return None


def describe_missing_credentials(litellm: ModuleType, model: str) -> str | None:
    """One line naming the variables to set, when the provider's API key is
    missing from the environment; None when it is there, or cannot be known."""
    try:
        reported = litellm.validate_environment(model=model).get("missing_keys") or []
    except Exception:  # litellm could not tell: the first call will
        return None
    # litellm names every variable of a provider when any is missing.
    unset = [name for name in reported if name not in os.environ]
    # Only a missing API key is certain to fail. Cloud credentials (AWS,
    # Vertex AI) also come from files and instance roles, and a missing base
    # URL or version often has a default (Ollama's is localhost): those are
    # left to the call.
    if not any(name.endswith(("_API_KEY", "_API_TOKEN")) for name in unset):
        return None
    return (
        f"model {model!r} needs an API key from the environment; not set: {', '.join(unset)} "
        "(or pass --ctx-api-base for a server that needs no key)"
    )
