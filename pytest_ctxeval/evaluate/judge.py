"""A model as judge: does the strategy's answer convey what the full-context
answer does?  For probes without an expectation, where token overlap cannot
tell a rewording from a different fact."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..llm.client import ModelClient, ModelError

SYSTEM = (
    "You compare two answers to the same question and decide whether they convey the same "
    "information. You never answer the question yourself."
)

PROMPT = """\
Question:
<question>
{question}
</question>

Reference answer:
<reference>
{reference}
</reference>

Answer to judge:
<answer>
{answer}
</answer>

Does the answer convey the same information as the reference, for this question?
Wording, length, order, formatting and politeness do not matter. It does NOT agree if it \
states a different fact or value, leaves out or contradicts part of what the reference says, \
or says it does not know (or refuses) where the reference answers, or answers where the \
reference says it does not know.

Reply with only a JSON object: {{"agrees": true or false, "reason": "one short sentence"}}"""

_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
# "YES", "Yes.", "**No**", "> no -", "Verdict: yes"; "not" or "nope" is no verdict.
_LEADING = re.compile(
    r"^[\W_]*(?:(?:verdict|answer|judgement|judgment|decision)[\W_]*)?(yes|no)\b[\W_]*(.*)",
    re.IGNORECASE | re.DOTALL,
)
_VERDICT_KEYS = ("agrees", "agree", "same", "verdict")
_WORDS = {"yes": True, "true": True, "no": False, "false": False}


@dataclass(frozen=True)
class JudgeResult:
    agrees: bool
    reason: str
    cost_usd: float = 0.0
    # Set when there is no verdict (the call failed, or the reply said
    # neither yes nor no); ``agrees`` is then False and means nothing.
    error: str | None = None


def judge_agreement(client: ModelClient, question: str, answer: str, reference: str) -> JudgeResult:
    """Ask ``client`` whether ``answer`` conveys the same information as
    ``reference`` for ``question``.  The call goes through the client like
    any other (litellm, retries, cassettes)."""
    messages = [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": PROMPT.format(question=question, reference=reference, answer=answer),
        },
    ]
    try:
        completion = client.complete(messages)
    except ModelError as exc:
        return JudgeResult(False, "", 0.0, f"judge model error: {exc}")
    verdict = parse_verdict(completion.content or "")
    if verdict is None:
        shown = (completion.content or "").strip()
        shown = shown if len(shown) <= 200 else shown[:200] + "\u2026"
        return JudgeResult(
            False,
            "",
            completion.cost_usd,
            f"judge reply has no verdict (expected JSON with 'agrees', or YES/NO): {shown!r}",
        )
    agrees, reason = verdict
    return JudgeResult(agrees, reason, completion.cost_usd)


def parse_verdict(reply: str) -> tuple[bool, str] | None:
    """(agrees, reason) from a JSON object or a leading YES/NO; None if neither."""
    text = reply.strip()
    fenced = _FENCED.search(text)
    candidates = [fenced.group(1)] if fenced else []
    whole = _outermost_braces(text)
    candidates += [whole] if whole else []
    for candidate in candidates:
        found = _from_json(candidate)
        if found is not None:
            return found
    leading = _LEADING.match(text)
    if leading is None:
        return None
    return leading.group(1).lower() == "yes", leading.group(2).strip()


def _outermost_braces(text: str) -> str | None:
    """From the first "{" to the last "}" after it (what ``\\{.*\\}`` finds),
    in linear time: the regex takes quadratic time on a reply of many "{"."""
    first, last = text.find("{"), text.rfind("}")
    return text[first : last + 1] if first != -1 and last > first else None


def _from_json(text: str) -> tuple[bool, str] | None:
    try:
        data: Any = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    for key in _VERDICT_KEYS:
        value = data.get(key)
        if isinstance(value, bool):
            agrees = value
        elif isinstance(value, str) and value.strip().lower() in _WORDS:
            agrees = _WORDS[value.strip().lower()]
        else:
            continue
        reason = data.get("reason", data.get("explanation", ""))
        return agrees, str(reason).strip()
    return None
