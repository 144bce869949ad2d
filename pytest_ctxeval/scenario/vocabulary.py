"""Word lists for the generators: bland on purpose, so filler never answers a probe."""

from __future__ import annotations

import random
from collections.abc import Iterator

TOPICS = [
    ("weather", "The forecast says light rain in the afternoon, so an umbrella would help."),
    ("lunch", "A lentil soup with crusty bread sounds like a good lunch today."),
    ("music", "That album has a calm second half that works well for focus."),
    ("garden", "Tomatoes like full sun and a deep watering twice a week."),
    ("travel", "The train along the coast is slower but the view is lovely."),
    ("books", "The novel starts slowly and gets much better after chapter four."),
    ("coffee", "A medium roast brewed a little cooler tastes less bitter."),
    ("running", "Short easy runs most days beat one long run on the weekend."),
    ("cooking", "Salting the pasta water well makes a noticeable difference."),
    ("movies", "The sequel kept the humour but lost some of the original charm."),
    ("hiking", "The ridge trail is steep at first and then flattens out nicely."),
    ("pets", "Cats often like several small meals spread over the day."),
]
OPENERS = ["Quick aside about", "Unrelated, but about", "Random thought on", "Side note on"]
ACKS = ["Good point.", "Sounds right.", "Fair enough.", "Nice."]

SPAN_NAMES = ["db.select", "http.get", "cache.lookup", "render.page", "queue.publish"]
SERVICES = ["checkout", "catalog", "billing", "search", "accounts"]
LOG_LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARN"]
LOG_EVENTS = [
    "worker heartbeat",
    "cache refreshed",
    "request served",
    "batch flushed",
    "connection pooled",
]
WORDS = (
    "the a of river stone light morning paper window garden quiet long small "
    "green old road field cloud table letter music evening city north simple "
    "warm slow bright open"
).split()

FILE_STEMS = ["orders", "catalog", "render", "queue", "models", "views", "utils", "jobs"]
TEST_MODULES = ["test_orders", "test_catalog", "test_render", "test_queue", "test_models"]
TEST_NAMES = ["creates", "updates", "rejects", "lists", "renders", "retries", "parses"]
LINT_RULES = [
    ("E501", "Line too long (104 > 100)"),
    ("F401", "`os` imported but unused"),
    ("B006", "Do not use mutable data structures for argument defaults"),
    ("UP035", "`typing.List` is deprecated, use `list` instead"),
    ("E711", "Comparison to `None` should be `cond is None`"),
]
CODING_ASKS = [
    "Can you look at src/{stem}.py and tidy it up?",
    "Run the tests after the change to {stem}.",
    "What does the {stem} module do?",
    "Check the lint output for {stem}.",
]
CODING_REPLIES = [
    "I looked at {stem}; nothing stands out yet.",
    "Done with {stem} for now; moving on.",
    "The {stem} module is in reasonable shape.",
]

_STATEMENTS = [
    "    value = compute(item)",
    "    if value is None:",
    "        continue",
    "    results.append(value)",
    "    logger.debug('processed %s', item)",
    "    total += len(results)",
]


def python_source(rng: random.Random) -> Iterator[str]:
    """An endless, plausible Python module, one line at a time."""
    yield "from __future__ import annotations"
    yield ""
    yield "import logging"
    yield ""
    yield "logger = logging.getLogger(__name__)"
    while True:
        yield ""
        yield ""
        yield f"def {rng.choice(TEST_NAMES)}_{rng.choice(FILE_STEMS)}(items):"
        yield "    results = []"
        yield "    total = 0"
        yield "    for item in items:"
        for _ in range(rng.randint(2, 5)):
            yield "    " + rng.choice(_STATEMENTS)
        yield "    return results"


def traceback(rng: random.Random, path: str, name: str) -> str:
    line = rng.randint(10, 200)
    return "\n".join(
        [
            f"_____ {name} _____",
            "Traceback (most recent call last):",
            f'  File "{path}", line {line}, in {name}',
            "    assert result == expected",
            f"AssertionError: assert {rng.randint(1, 99)} == {rng.randint(100, 199)}",
            f"FAILED {path}::{name}",
        ]
    )
