"""Everything a server sends back, bounded before anyone sees it.

An answer's text is capped (and scrubbed of the environment's and the
client's keys), and so is every other
field: a tool call's id, name and arguments, the finish reason, the token
counts.  Too many tool calls in one answer is an error, not a long list.
Live answers and cassettes go through the same bounds, so a replay scores
what the live call scored."""

from __future__ import annotations

from typing import Any

from ..redact import scrub_values
from ..textcap import cap_text

# The longest answer kept and scored, live and in a cassette alike: the
# cassette keeps exactly what was scored, so a replay gives the same verdict.
# About 50k tokens, far beyond any answer under --ctx-max-tokens' default,
# and small enough that a runaway server cannot fill a repository with
# cassettes or the scorer's memory.  Records keep less (see results.record).
MAX_ANSWER_CHARS = 200_000
# A tool call's arguments: far above any real retrieve_memory query, small
# enough that a server sending megabytes cannot bloat cassettes and records
# (cut arguments are no longer JSON: the model is told they are malformed).
MAX_TOOL_ARGUMENTS_CHARS = 20_000
# Function names are at most 64 characters at OpenAI; ids are short tokens.
MAX_TOOL_NAME_CHARS = 256
MAX_FIELD_CHARS = 256
# Tool calls in one answer; each is answered, so more is a runaway, an error.
MAX_TOOL_CALLS_PER_ANSWER = 16
# A token count beyond any context window: a larger one is a broken server's.
MAX_TOKEN_COUNT = 100_000_000


def bounded(text: str | None) -> str | None:
    """An answer as it is scored and recorded: keys scrubbed, length capped."""
    # Only the environment's and the client's keys: a key-like fact a
    # scenario planted is scored as the model gave it (see redact).
    return None if text is None else cap_text(_keys_scrubbed(text), MAX_ANSWER_CHARS)


def bounded_field(text: str | None) -> str | None:
    """A short field (an id, a finish reason): scrubbed and capped."""
    return None if text is None else cap_text(_keys_scrubbed(text), MAX_FIELD_CHARS)


def bounded_call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call whose id, name and arguments are scrubbed and capped: they
    go back to the model, into the next request's cassette and the record."""
    function = call["function"]
    arguments = function.get("arguments") or ""
    return {
        **call,
        "id": bounded_field(call["id"]),
        "function": {
            **function,
            "name": cap_text(_keys_scrubbed(function["name"]), MAX_TOOL_NAME_CHARS),
            "arguments": cap_text(_keys_scrubbed(arguments), MAX_TOOL_ARGUMENTS_CHARS),
        },
    }


def too_many_calls(calls: list[Any]) -> str | None:
    """Why an answer's tool calls are refused, or None."""
    if len(calls) <= MAX_TOOL_CALLS_PER_ANSWER:
        return None
    return (
        f"{len(calls):,} tool calls in one answer; at most {MAX_TOOL_CALLS_PER_ANSWER} are answered"
    )


def token_count(value: Any) -> int:
    """A usage count as a whole number in 0..MAX_TOKEN_COUNT (0 if it is none)."""
    try:
        count = int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0
    return min(max(count, 0), MAX_TOKEN_COUNT)


def _keys_scrubbed(text: str) -> str:
    return scrub_values(text, scenario=False)
