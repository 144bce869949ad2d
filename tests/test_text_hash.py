"""Text-only messages are hashed from their items, not their JSON: the hash
must still tell apart exactly the messages (and requests) JSON tells apart."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest

from pytest_ctxeval.llm import mock_client
from pytest_ctxeval.llm.cassettes import canonical_json
from pytest_ctxeval.llm.mock_client import MockModelClient, request_key
from pytest_ctxeval.llm.request_blocks import message_digest, serialise
from pytest_ctxeval.llm.text_hash import text_only_items

# Pieces that make lengths, separators and tags line up in as many ways as possible.
_PIECES = ["", "a", "b", ":", "1:", "-1:", "json\0", "\n", "é", "\ud800", "a:b"]


# A request cannot hold a lone surrogate (nor be hashed as JSON with one).
_SENDABLE = [p for p in _PIECES if p != "\ud800"]


def _random_message(rng: random.Random, pieces: list[str] = _PIECES) -> dict[str, Any]:
    message: dict[str, Any] = {}
    for _ in range(rng.randint(0, 3)):
        key = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 2)))
        value = (
            None
            if rng.random() < 0.2
            else "".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))
        )
        message[key] = value
    return message


def _digest(message: dict[str, Any]) -> bytes:
    return message_digest(message, text_only_items(message))


def _json(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False)


def test_two_text_only_messages_get_one_block_hash_exactly_when_their_json_is_the_same() -> None:
    rng = random.Random(5)
    messages = [_random_message(rng) for _ in range(400)]
    for one, other in itertools.combinations(messages, 2):
        assert (_digest(one) == _digest(other)) == (_json(one) == _json(other)), (one, other)


def test_the_block_hash_keeps_key_order_none_and_the_kind_of_message_apart() -> None:
    text = {"role": "user", "content": "hi"}
    assert _digest(text) == _digest(dict(text))
    assert _digest(text) != _digest({"content": "hi", "role": "user"})  # a reordered prompt
    assert _digest({"role": "user", "content": None}) != _digest({"role": "user", "content": ""})
    # Where one item ends and the next begins: each key's length is hashed too.
    assert _digest({"a": "b", "": "c"}) != _digest({"ab1:": "c"})
    parts = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert text_only_items(parts) is None
    assert _digest(parts) != _digest(text)
    # A message that is not text only is still hashed from its JSON.
    assert _digest(parts) == message_digest(parts, None) and serialise(parts)


def _key(messages: list[dict[str, Any]], model: str = "ctxeval/oracle") -> str:
    return request_key({"model": model, "tools": [], "params": {}}, messages)


@pytest.mark.parametrize("long_text", [0, 3, 10**9], ids=["all-hashed", "mixed", "all-json"])
def test_two_requests_get_one_mock_key_exactly_when_their_canonical_json_is_the_same(
    long_text: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Contents longer than LONG_TEXT_CHARS are keyed by their hash, the rest as JSON.
    monkeypatch.setattr(mock_client, "LONG_TEXT_CHARS", long_text)
    rng = random.Random(9)
    requests = [
        [_random_message(rng, _SENDABLE) for _ in range(rng.randint(0, 3))] for _ in range(300)
    ]
    for request in requests[:100]:  # the key "content" is the one whose length decides
        request.append({"content": rng.choice(_SENDABLE) * rng.randint(0, 3), "role": "user"})
    # Key order does not matter to canonical JSON: reordered copies share a key.
    requests += [[dict(reversed(m.items())) for m in r] for r in requests[:50]]
    for one, other in itertools.combinations(requests, 2):
        same_json = canonical_json(one) == canonical_json(other)
        assert (_key(one) == _key(other)) == same_json, (one, other)


def test_the_mock_key_tells_models_and_parameters_apart() -> None:
    messages = [{"role": "user", "content": "What is the code?"}]
    assert _key(messages) != _key(messages, model="ctxeval/echo")
    seeded = request_key({"model": "ctxeval/oracle", "tools": [], "params": {"seed": 1}}, messages)
    assert seeded != _key(messages)


def test_the_mock_answers_equal_requests_once_and_different_ones_each() -> None:
    client = MockModelClient("ctxeval/oracle")
    window = [
        {"role": "user", "content": "The code is 4821."},
        {"role": "user", "content": "Code?"},
    ]
    client.complete(window)
    client.complete([dict(reversed(m.items())) for m in window])  # equal as a request
    assert client.calls == 1
    client.complete([*window[:1], {"role": "user", "content": "Code!"}])
    assert client.calls == 2
