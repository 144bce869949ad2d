"""Workloads for the model-free path, written as scenario files.

    python benchmarks/workload.py pairs DIR --pairs 200 --count 50
    python benchmarks/workload.py locomo DIR
    python benchmarks/workload.py locomo-json FILE --conversations 10

``pairs``: COUNT conversations of PAIRS user/assistant pairs each, written
out turn by turn (no ``generate:``), with one needle and one probe: what a
user importing their own transcripts runs.

``locomo``: one file the size of an imported LoCoMo conversation: about 600
short turns in 20 sessions and 200 probes with expectations.

``locomo-json``: a LoCoMo-shaped dataset in the published layout (a list of
samples with ``conversation`` and ``qa``; 19 sessions of about 30 turns and
about 200 QA items per conversation, each citing its evidence turn, some of
them adversarial), for ``ctxeval import locomo FILE -o DIR``: the import and
run a user does with the real dataset, at its size.

The files are generated, never committed: the point is their size.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

_SUBJECTS = (
    "the build",
    "the deploy script",
    "the staging database",
    "the billing service",
    "the nightly job",
    "the login page",
    "the search index",
    "the cache layer",
    "the report export",
    "the mobile app",
)
_VERBS = ("failed again", "looks slow", "needs a review", "was restarted", "passed", "timed out")
_REPLIES = (
    "I checked the logs and the error comes from a missing environment variable.",
    "The retry loop now backs off exponentially, which should stop the flood.",
    "I updated the configuration and reran the tests; everything is green.",
    "That query scans the whole table, so I added an index on the user column.",
    "The timeout was too short for the larger payloads, so I raised it.",
)


def _quoted(text: str) -> str:
    return json.dumps(text)  # JSON strings are YAML double-quoted scalars


def pairs_scenario(index: int, pairs: int, *, planted: bool = False) -> str:
    """``planted``: the needle is declared as one (``needles:``), so the fact
    ledger and fact survival follow it through every request, as they do in
    a scenario written by hand; otherwise it is only a turn of the session."""
    rng = random.Random(index)
    needle_at = -1 if planted else pairs // 2
    needle = f"For the record, the vault code for project {index} is 7-3-9-{index}."
    lines = [f"id: pairs-{index}", "system: You are a coding agent.", "turns:"]
    for turn in range(pairs):
        user = f"Turn {turn}: {rng.choice(_SUBJECTS)} {rng.choice(_VERBS)}, can you look?"
        if turn == needle_at:
            user = needle
        lines.append(f"  - user: {_quoted(user)}")
        reply = f"On turn {turn}: {rng.choice(_REPLIES)} {rng.choice(_REPLIES)}"
        lines.append(f"  - assistant: {_quoted(reply)}")
    if planted:
        lines += [
            "needles:",
            "  - id: vault",
            "    depth: 0.5",
            "    role: user",
            f"    text: {_quoted(needle)}",
            f"    answer: '7-3-9-{index}'",
        ]
    lines += [
        "probes:",
        "  - id: vault",
        f"    user: What is the vault code for project {index}?",
        f"    expect: {{contains: '7-3-9-{index}'}}",
    ]
    return "\n".join(lines) + "\n"


def locomo_scenario(sessions: int = 20, turns_per_session: int = 30, probes: int = 200) -> str:
    """Facts stated in passing across sessions, asked about at the end."""
    rng = random.Random(7)
    facts: list[tuple[str, str, str]] = []
    lines = ["id: locomo-like", "system: You are a helpful companion with a long memory.", "turns:"]
    fact_no = 0
    for session in range(sessions):
        lines.append(f"  - user: {_quoted(f'Session {session + 1} starts. How was your week?')}")
        lines.append(f"  - assistant: {_quoted('It was good, thanks for asking.')}")
        for turn in range(turns_per_session // 2 - 1):
            if fact_no < probes and rng.random() < 0.75:
                person = f"friend{fact_no}"
                thing = f"item{fact_no}x{rng.randint(100, 999)}"
                said = f"My {person} bought a {thing} at the market on day {session * 7 + turn}."
                facts.append((person, thing, said))
                fact_no += 1
            else:
                said = f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_VERBS)} today."
            lines.append(f"  - user: {_quoted(said)}")
            lines.append(f"  - assistant: {_quoted(rng.choice(_REPLIES))}")
    lines.append("probes:")
    for number, (person, thing, _) in enumerate(facts):
        lines.append(f"  - id: q{number}")
        lines.append(f"    user: {_quoted(f'What did my {person} buy at the market?')}")
        lines.append(f"    expect: {{contains: {_quoted(thing)}}}")
    return "\n".join(lines) + "\n"


def locomo_sample(index: int, sessions: int = 19, turns_per_session: int = 30) -> dict[str, Any]:
    """One conversation as LoCoMo publishes it, with QA items citing their turns."""
    rng = random.Random(index)
    speakers = (f"Ana{index}", f"Ben{index}")
    conversation: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    qa: list[dict[str, Any]] = []
    for session in range(1, sessions + 1):
        conversation[f"session_{session}_date_time"] = f"1:56 pm on {session} May, 2023"
        turns = []
        for turn in range(1, turns_per_session + 1):
            speaker = speakers[turn % 2]
            dia_id = f"D{session}:{turn}"
            if turn % 3 == 1:
                thing = f"item{session}x{turn}x{rng.randint(100, 999)}"
                text = f"My friend{session}t{turn} bought a {thing} at the market."
                qa.append(
                    {
                        "question": f"What did {speaker}'s friend{session}t{turn} buy?",
                        "answer": thing,
                        "evidence": [dia_id],
                        "category": rng.choice((1, 2, 3, 4)),
                    }
                )
            else:
                text = f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_VERBS)} today."
            turns.append({"speaker": speaker, "dia_id": dia_id, "text": text})
        conversation[f"session_{session}"] = turns
        qa.append(
            {
                "question": f"What instrument does {speakers[0]}'s cat{session} play?",
                "adversarial_answer": "violin",
                "evidence": [],
                "category": 5,
            }
        )
    return {"sample_id": f"conv-{index}", "conversation": conversation, "qa": qa}


def write_locomo_json(path: Path, conversations: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = [locomo_sample(index) for index in range(conversations)]
    path.write_text(json.dumps(samples, indent=1), encoding="utf-8")
    return path


def import_locomo(folder: Path, scenarios: Path) -> Path:
    """The LoCoMo-shaped dataset (10 conversations) written in ``folder`` and
    imported into ``scenarios`` by ``ctxeval import locomo``, as a user would."""
    data = write_locomo_json(folder / "locomo10.json", 10)
    subprocess.run(
        [sys.executable, "-c", "from pytest_ctxeval.cli import main; main()", "import", "locomo"]
        + [str(data), "-o", str(scenarios)],
        check=True,
        capture_output=True,
    )
    return scenarios


def write_pairs(directory: Path, pairs: int, count: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for index in range(count):
        path = directory / f"pairs-{pairs}-{index:03}.yaml"
        path.write_text(pairs_scenario(index, pairs), encoding="utf-8")
        written.append(path)
    return written


def write_locomo(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "locomo-like.yaml"
    path.write_text(locomo_scenario(), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="kind", required=True)
    pairs = sub.add_parser("pairs")
    pairs.add_argument("directory", type=Path)
    pairs.add_argument("--pairs", type=int, default=50)
    pairs.add_argument("--count", type=int, default=50)
    locomo = sub.add_parser("locomo")
    locomo.add_argument("directory", type=Path)
    locomo_json = sub.add_parser("locomo-json")
    locomo_json.add_argument("file", type=Path)
    locomo_json.add_argument("--conversations", type=int, default=10)
    args = parser.parse_args()
    if args.kind == "pairs":
        write_pairs(args.directory, args.pairs, args.count)
    elif args.kind == "locomo-json":
        print(write_locomo_json(args.file, args.conversations))
    else:
        print(write_locomo(args.directory))


if __name__ == "__main__":
    main()
