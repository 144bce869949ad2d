"""Which model strings can be used: the mocks, or anything litellm routes."""

from __future__ import annotations

from .providers import MOCK_MODELS, PROVIDER


def describe_unknown_model(model: str, api_base: str | None = None) -> str | None:
    """None when the model can be called, else what is wrong with it."""
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
    return None
