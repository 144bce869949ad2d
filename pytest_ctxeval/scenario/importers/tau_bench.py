"""``tau-bench``: tau-bench trajectories (task_id, reward, info, traj, trial).

The trajectory is kept up to its last substantive user message, which
becomes a probe scored against the full-context answer: the simulated
user's closing ``###STOP###`` message and goodbye-only messages ask
nothing and are never probes.  Tool results are where agents lose facts,
so up to three values from earlier tool outputs become probes with a known
answer; each output they ask about is planted as a needle, so fact
survival reports whether a strategy kept it.  Only probes that losing the
output fails are made: a value the session says anywhere else, or a value
of a tool called more than once (the question could name the call only by
its order), is left out, and the draft counts why."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any

from ...text import occurs
from ._common import EVIDENCE_PREFIX, Draft, TranscriptError, Where, json_items, require_object
from ._messages import Session, chat_scenario, message_numbers, split_at_last_user
from .writer import slugify

FORMAT = "tau-bench"
MAX_VALUE_PROBES = 3
# Values shorter than this match by accident ("1" is in every answer);
# longer ones are not facts a model would repeat verbatim.
MIN_LEN, MAX_LEN = 3, 100
_BOOLEAN_WORDS = {"true", "false", "yes", "no", "none", "null"}
STOP = "###STOP###"
# Words of a message that only closes the chat ("No, that's all. Thanks! ###STOP###").
_COURTESY = frozenset(
    "thanks thank you so much very for your the help bye goodbye that that's thats is it's "
    "all it i i'm im need needed nothing else great ok okay perfect awesome alright good "
    "have a nice day wonderful no appreciate cheers helpful everything sounds fine really "
    "again done then".split()
)
_WORD = re.compile(r"[a-z']+")
# Why a candidate probe was left out, as ``ctxeval import`` reports it.
SAID_ELSEWHERE = "tool values said elsewhere in the session (losing the output would not fail them)"
SEVERAL_CALLS = "tool values of a tool called more than once (the call has no name to ask by)"
OVER_LIMIT = f"tool values over the {MAX_VALUE_PROBES} per trajectory"
GOODBYE = "goodbyes after the last request (###STOP### and thanks)"


def import_tau_bench(text: str, source: str) -> list[Draft]:
    stem = PurePath(source).stem
    drafts = []
    for where, value in json_items(text, source):
        item = require_object(value, source, where, "a trajectory object")
        if "traj" not in item:
            raise TranscriptError(source, where, "missing 'traj'")
        session = split_at_last_user(
            item["traj"], source, where, "traj", worth_asking=asks_something, never=ends_chat
        )
        dropped: Counter[str] = Counter()
        data = _scenario(item, session, stem, source, where, dropped)
        if session.later_users:
            dropped[GOODBYE] += session.later_users
        kept = len(data["probes"])
        drafts.append(Draft(where, data, kept=kept, dropped=dict(dropped)))
    return drafts


def _scenario(
    item: dict[str, Any],
    session: Session,
    stem: str,
    source: str,
    where: Where,
    dropped: Counter[str],
) -> dict[str, Any]:
    task, trial, reward = item.get("task_id"), item.get("trial"), item.get("reward")
    if task in (None, ""):
        scenario_id = f"{stem}-{where.item}"
    else:
        scenario_id = f"tau-bench-task-{task}" + (
            f"-trial-{trial}" if trial not in (None, "") else ""
        )
    facts = ", ".join(
        f"{label} {value}"
        for label, value in (("task", task), ("trial", trial), ("reward", reward))
        if value is not None
    )
    numbers = message_numbers(session.turns)
    probes: list[dict[str, Any]] = []
    asked: dict[int, list[str]] = {}  # output index -> the values probes ask about
    picked, skipped = pick_values(session.tool_outputs, elsewhere=_other_texts(session))
    dropped.update(skipped)
    for n, (at, path, value) in enumerate(picked, 1):
        asked.setdefault(at, []).append(value)
        probes.append(
            {
                "id": f"tool-value-{n}",
                "user": f"What was the {path} in the result of {session.tool_outputs[at][0]}?",
                "expect": {"contains": value},
                "evidence": [_needle_id(session, at)],
            }
        )
    needles = []
    for at, values in sorted(asked.items()):
        # The output moves into the needle, planted back at its own message.
        turn = session.turns[session.tool_turns[at]]["tool"]
        text, turn["output"] = turn["output"], ""
        needle: dict[str, Any] = {"id": _needle_id(session, at), "text": text}
        found = [v for v in values if occurs(v, text)]
        if found:
            needle["answer"] = found[0] if len(found) == 1 else found
        needle["turn"] = numbers[session.tool_turns[at]]
        needles.append(needle)
    description = f"tau-bench trajectory ({facts})" if facts else "tau-bench trajectory"
    if needles:
        description += (
            f"\n{len(needles)} tool output(s) that probes ask about are left empty and planted "
            "as needles (evidence-<tool>-<call>), so fact survival follows them."
        )
    return chat_scenario(
        scenario_id,
        session,
        source,
        where,
        FORMAT,
        description=description,
        probes=probes,
        needles=needles,
    )


def ends_chat(text: str) -> bool:
    """The simulated user's last message (it carries ``###STOP###``): no
    agent answers it, so it is never a probe, whatever else it says."""
    return STOP in text


def asks_something(text: str) -> bool:
    """Whether a user message is worth asking at the end: not the
    simulator's ``###STOP###`` message, nor a goodbye."""
    if ends_chat(text):
        return False
    words = _WORD.findall(text.replace(STOP, " ").lower().replace("\u2019", "'"))
    return any(word not in _COURTESY for word in words)


def _nth_call(session: Session, at: int) -> int:
    tool = session.tool_outputs[at][0]
    return sum(1 for name, _ in session.tool_outputs[: at + 1] if name == tool)


def _needle_id(session: Session, at: int) -> str:
    tool = session.tool_outputs[at][0]
    return f"{EVIDENCE_PREFIX}{slugify(tool, fallback='tool')}-{_nth_call(session, at)}"


def pick_values(
    outputs: list[tuple[str, str]],
    limit: int = MAX_VALUE_PROBES,
    *,
    elsewhere: Callable[[int], str] | None = None,
) -> tuple[list[tuple[int, str, str]], Counter[str]]:
    """(index of the output, key path, value) for the first distinct scalar
    leaves of the tool outputs, in traversal order: deterministic, and early
    outputs are the ones a strategy is most likely to have dropped; and per
    reason, how many candidates were left out.

    A probe must be one that losing the output fails: a value that
    ``elsewhere(index)`` (the session's other text) says too is left out,
    and so is every value of a tool called more than once (a question can
    name the call only by its order, which word matching cannot follow)."""
    picked: list[tuple[int, str, str]] = []
    dropped: Counter[str] = Counter()
    calls = Counter(tool for tool, _ in outputs)
    seen: set[str] = set()
    for at, (tool, output) in enumerate(outputs):
        try:
            data = json.loads(output)
        except (json.JSONDecodeError, TypeError):
            continue  # plain-text results have no key path to ask about
        other = None
        for path, value in _leaves(data, ""):
            if not path or not _usable(value) or value in seen:
                continue
            seen.add(value)
            if calls[tool] > 1:
                dropped[SEVERAL_CALLS] += 1
                continue
            if elsewhere is not None:
                other = elsewhere(at) if other is None else other
                if occurs(value, other):
                    dropped[SAID_ELSEWHERE] += 1
                    continue
            if len(picked) == limit:
                dropped[OVER_LIMIT] += 1
                continue
            picked.append((at, path, value))
    return picked, dropped


def _other_texts(session: Session) -> Callable[[int], str]:
    """For an output's index, every other text of the session: the system
    prompt, the messages, tool-call arguments, the other outputs, the probe."""
    outputs = set(session.tool_turns)
    base = [session.system or "", session.probe]
    for index, turn in enumerate(session.turns):
        if index in outputs:
            continue
        for value in turn.values():
            base.append(value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    shared = "\n".join(base)

    def others(at: int) -> str:
        rest = [o for i, (_, o) in enumerate(session.tool_outputs) if i != at]
        return "\n".join([shared, *rest])

    return others


def _leaves(data: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, f"{path}[{i}]")
    elif isinstance(data, (str, int, float)) and not isinstance(data, bool):
        yield path, str(data)


def _usable(value: str) -> bool:
    return (
        MIN_LEN <= len(value.strip()) <= MAX_LEN
        and "\n" not in value
        and value.strip().lower() not in _BOOLEAN_WORDS
    )
