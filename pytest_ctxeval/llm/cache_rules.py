"""Each provider's prompt-cache rules, and the minimum cacheable length of
each model family, as the providers document them (``prompt_cache`` applies
them to a session's requests).

- OpenAI caches automatically: prompts of 1,024 tokens or more, cache hits in
  128-token steps (https://developers.openai.com/api/docs/guides/prompt-caching).
- Anthropic caches at ``cache_control`` breakpoints, and a breakpoint writes
  only when its prefix is at least the model's minimum cacheable prompt
  length, which differs by model family and has changed over time
  (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
  "Cache limitations"; Claude Opus 4.8 lowered it to 1,024 tokens: release
  notes, May 28, 2026).  Its *automatic caching* (one ``cache_control`` at the
  top level of the request) puts a single breakpoint on the last cacheable
  block of each request and moves it forward as the conversation grows: a
  mode of its own, ``anthropic-auto``.  Amazon Bedrock documents minimums of
  its own, not modelled here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

DEFAULT_TTL_S = 300.0

# Anthropic's minimum cacheable prompt length per model family (Claude API),
# from the "Cache limitations" list of the page cited above, as of September
# 2026.  The first pattern that matches the model string wins, so a family
# name that contains another ("opus-4-5" in "opus-4-5-20251101") is matched
# by its version.  Model strings name a version either as "4-5" / "4.5" after
# the family ("claude-opus-4-5") or before it ("claude-3-5-haiku").
ANTHROPIC_MINIMUMS: tuple[tuple[str, str, int], ...] = (
    # (family, pattern over the lower-cased model string, minimum tokens)
    ("Claude Fable 5 / 5.1", r"fable-5", 512),
    ("Claude Mythos 5 / 5.1", r"mythos-5", 512),
    ("Claude Mythos Preview", r"mythos", 2048),
    ("Claude Opus 5 / 5.5", r"opus-5", 512),
    ("Claude Sonnet 5", r"sonnet-5", 1024),
    ("Claude Opus 4.8", r"opus-4[-.]8", 1024),
    ("Claude Opus 4.7", r"opus-4[-.]7", 2048),
    ("Claude Opus 4.6", r"opus-4[-.]6", 4096),
    ("Claude Opus 4.5", r"opus-4[-.]5", 4096),
    ("Claude Opus 4.1", r"opus-4[-.]1", 1024),
    ("Claude Opus 4", r"opus-4", 1024),
    ("Claude Sonnet 4.6", r"sonnet-4[-.]6", 1024),
    ("Claude Sonnet 4.5", r"sonnet-4[-.]5", 1024),
    ("Claude Sonnet 4", r"sonnet-4", 1024),
    ("Claude Haiku 4.5", r"haiku-4[-.]5", 4096),
    ("Claude Sonnet 3.7", r"3[-.]7-sonnet", 1024),
    ("Claude Sonnet 3.5", r"3[-.]5-sonnet", 1024),
    ("Claude Haiku 3.5", r"3[-.]5-haiku", 2048),
    ("Claude Haiku 3", r"3-haiku", 2048),
    ("Claude Opus 3", r"3-opus", 1024),
)
# A Claude model the list does not name (a newer one): the minimum most
# families share.
ANTHROPIC_DEFAULT_MINIMUM = 1024
_MINIMUMS = tuple((family, re.compile(p), n) for family, p, n in ANTHROPIC_MINIMUMS)


@dataclass(frozen=True)
class CacheRules:
    """One provider's prompt-cache behaviour; ``name`` is what records show."""

    name: str
    min_tokens: int
    step_tokens: int
    breakpoints: bool  # explicit breakpoints (Anthropic) rather than automatic
    # Price of a cached read / a cache write, as a multiple of the input price,
    # used when the price map gives none.
    read_multiplier: float
    write_multiplier: float = 1.0
    ttl_s: float = DEFAULT_TTL_S
    # Anthropic's automatic caching: one breakpoint, on the last block of
    # each request, instead of the ends of the tools, the system prompt and
    # the messages.
    last_block_only: bool = False


OPENAI = CacheRules("openai", 1024, 128, breakpoints=False, read_multiplier=0.5)
ANTHROPIC = CacheRules(
    "anthropic", ANTHROPIC_DEFAULT_MINIMUM, 1, breakpoints=True, read_multiplier=0.1,
    write_multiplier=1.25,
)  # fmt: skip
ANTHROPIC_AUTO = replace(ANTHROPIC, name="anthropic-auto", last_block_only=True)
RULES = {"openai": OPENAI, "anthropic": ANTHROPIC, "anthropic-auto": ANTHROPIC_AUTO}


def anthropic_minimum(model: str) -> tuple[str | None, int]:
    """(the documented family, its minimum cacheable prompt length) of a
    Claude model; (None, the default) for a model the list does not name."""
    name = model.lower().replace("_", "-")
    for family, pattern, minimum in _MINIMUMS:
        if pattern.search(name):
            return family, minimum
    return None, ANTHROPIC_DEFAULT_MINIMUM


def is_claude(model: str, provider: str | None = None) -> bool:
    """An Anthropic model, by provider, or a Claude model behind another host
    (the mock models never are)."""
    name = model.lower()
    return (
        provider == "anthropic"
        or (provider is None and name.startswith("anthropic/"))
        or ("claude" in name and not name.startswith("ctxeval/"))
    )


def for_model(rules: CacheRules, model: str) -> CacheRules:
    """``rules`` with the model family's minimum where it has one (Anthropic's)."""
    if not rules.breakpoints or not is_claude(model):
        return rules
    return replace(rules, min_tokens=anthropic_minimum(model)[1])


def rules_for(model: str, provider: str | None = None) -> CacheRules:
    """The rule set for a model: Anthropic's for Anthropic models (with the
    family's minimum), OpenAI's automatic caching for everything else, the
    mock models included."""
    if is_claude(model, provider):
        return replace(ANTHROPIC, min_tokens=anthropic_minimum(model)[1])
    return OPENAI


def rules_named(name: str, model: str) -> CacheRules:
    """The rule set ``name`` (a key of ``RULES``) for ``model``."""
    return for_model(RULES[name], model)
