"""PrefixList: the prompt cache's lists that share their leading items with
the list they were cut from.  Checked against plain lists under random cuts
and appends, across chunk boundaries."""

from __future__ import annotations

import random

import pytest

from pytest_ctxeval.llm import prefix_list
from pytest_ctxeval.llm.prefix_list import PrefixList


@pytest.fixture(params=[2, 3, prefix_list.CHUNK])
def chunk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Tiny chunks, so that short lists cross many chunk boundaries, and the real size."""
    monkeypatch.setattr(prefix_list, "CHUNK", request.param)
    return int(request.param)


def test_cut_and_grown_lists_read_like_plain_lists_and_never_change_each_other(chunk: int) -> None:
    rng = random.Random(7)
    lists: list[tuple[PrefixList[int], list[int]]] = [(PrefixList(), [])]
    for step in range(300):
        source, model = rng.choice(lists)
        if rng.random() < 0.5:
            cut = rng.randint(0, len(model))
            source, model = source.prefix(cut), model[:cut]
            lists.append((source, model))
        elif model and rng.random() < 0.5:  # one item rewritten, as a new system prompt
            at = rng.randrange(len(model))
            source, model = source.replaced(at, -7), [*model[:at], -7, *model[at + 1 :]]
            lists.append((source, model))
        grown = [rng.randint(0, 5) for _ in range(rng.randint(0, 3 * chunk))]
        if rng.random() < 0.5:
            source.extend(grown)
        else:
            for item in grown:
                source.append(item)
        model.extend(grown)
        # Every list, the sources of every cut included, still holds what it held.
        for shared, plain in lists:
            assert list(shared) == plain, step
    for shared, plain in lists:
        assert len(shared) == len(plain)
        for index in (0, len(plain) // 2, len(plain) - 1, -1):
            if plain:
                assert shared[index] == plain[index]
        start = len(plain) // 3
        assert list(shared.iter_from(start)) == plain[start:]
        assert shared[start:] == plain[start:]
        assert shared[1 : len(plain) - 1 : 2] == plain[1 : len(plain) - 1 : 2]
    with pytest.raises(IndexError):
        lists[0][0][len(lists[0][1])]


def test_a_cut_shares_the_full_chunks_and_copies_the_rest() -> None:
    chunk = prefix_list.CHUNK
    long = PrefixList(range(3 * chunk + 10))
    cut = long.prefix(2 * chunk + 5)
    assert cut._chunks[0] is long._chunks[0] and cut._chunks[1] is long._chunks[1]
    assert cut._chunks[2] is not long._chunks[2]
    cut.append(-1)
    assert long[2 * chunk + 5] == 2 * chunk + 5


def test_a_rewritten_item_copies_its_chunk_and_a_partly_filled_last_one() -> None:
    chunk = prefix_list.CHUNK
    long = PrefixList(range(3 * chunk + 10))
    rewritten = long.replaced(0, -1)
    assert rewritten[0] == -1 and long[0] == 0 and list(rewritten)[1:] == list(long)[1:]
    assert rewritten._chunks[1] is long._chunks[1] and rewritten._chunks[2] is long._chunks[2]
    assert rewritten._chunks[0] is not long._chunks[0]
    rewritten.append(-2)  # its own last chunk
    long.append(-3)
    assert rewritten[-1] == -2 and long[-1] == -3 and len(rewritten) == len(long)
    with pytest.raises(IndexError):
        long.replaced(len(long), 0)


def test_last_agreeing_finds_where_chained_hashes_part(chunk: int) -> None:
    rng = random.Random(3)
    for _ in range(200):
        length = rng.randint(0, 3 * chunk + 3)
        base = PrefixList(range(length))
        agree = rng.randint(0, length)  # items agree before this index
        other = base.prefix(agree) if rng.random() < 0.5 else PrefixList(range(agree))
        other.extend(-1 - i for i in range(rng.randint(0, 2 * chunk)))
        limit = rng.randint(0, length + 2)
        naive = -1
        for index in range(min(limit, len(base), len(other))):
            if base[index] != other[index]:
                break
            naive = index
        assert base.last_agreeing(other, limit) == naive
        assert other.last_agreeing(base, limit) == naive
