"""The mock models, registered as a litellm custom provider so mock and real
runs take the same path: ``ctxeval/oracle``, ``ctxeval/lost-in-middle``,
``ctxeval/echo``."""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

from . import oracle, structured

PROVIDER = "ctxeval"
MOCK_MODELS = ("oracle", "lost-in-middle", "echo")


class MockModelError(ValueError):
    """A request the mock models cannot serve; says what they expect."""


def _reply_for(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    response_format: dict[str, Any] | None = None,
    seed: int | None = None,
) -> oracle.Reply:
    schema = structured.requested_schema(response_format)
    if schema is not None and model in ("oracle", "lost-in-middle"):
        return oracle.Reply(content=structured.fill_json(messages, schema))
    if model == "oracle":
        return oracle.respond(messages, tools)
    if model == "lost-in-middle":
        question = next(
            (m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), ""
        )
        # A seed (a repeated ask, --ctx-repeat) draws attention afresh.
        draw = question if seed is None else f"{question}\x00seed={seed}"
        return oracle.respond(messages, tools, attention=oracle.lost_in_middle_attention(draw))
    if model == "echo":
        return oracle.Reply(content=oracle.echo(messages))
    raise MockModelError(
        f"unknown mock model 'ctxeval/{model}'; available: "
        + ", ".join(f"ctxeval/{m}" for m in MOCK_MODELS)
    )


def register_mock_provider(litellm: ModuleType) -> None:
    from .tokens import count_text_tokens, window_tokens

    class CtxevalMockLLM(litellm.CustomLLM):  # type: ignore[name-defined,misc]
        def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            if not isinstance(messages, list) or not messages:
                raise MockModelError("the mock models expect a non-empty list of chat messages")
            params = kwargs.get("optional_params") or {}
            tools = params.get("tools") or []
            reply = _reply_for(
                model.removeprefix(f"{PROVIDER}/"),
                messages,
                tools,
                params.get("response_format"),
                params.get("seed"),
            )
            message: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if reply.tool_calls:
                message["tool_calls"] = reply.tool_calls
            prompt = window_tokens(messages, tools)
            completion = count_text_tokens(reply.content or "") + (8 if reply.tool_calls else 0)
            return litellm.ModelResponse(
                model=f"{PROVIDER}/{model}",
                created=int(time.time()),
                choices=[
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                    }
                ],
                usage={
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            )

        async def acompletion(
            self, model: str, messages: list[Any], *args: Any, **kwargs: Any
        ) -> Any:
            return self.completion(model, messages, *args, **kwargs)

    entry = {"provider": PROVIDER, "custom_handler": CtxevalMockLLM()}
    others = [
        p for p in getattr(litellm, "custom_provider_map", []) if p.get("provider") != PROVIDER
    ]
    litellm.custom_provider_map = [*others, entry]  # type: ignore[attr-defined]
