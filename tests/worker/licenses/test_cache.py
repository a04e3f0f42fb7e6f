"""Tests of the bounded least-recently-used map behind the license caches."""

from __future__ import annotations

import threading

import pytest

from worker.licenses.cache import BoundedLru


def test_evicts_least_recently_used() -> None:
    """When full, the entry used longest ago goes first; a read counts as a use."""
    lru: BoundedLru[str, int] = BoundedLru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a", None) == 1
    lru.put("c", 3)
    assert lru.get("b", None) is None
    assert lru.get("a", None) == 1
    assert lru.get("c", None) == 3
    assert len(lru) == 2


def test_none_is_a_value() -> None:
    """A stored None is told apart from a missing key by the default."""
    lru: BoundedLru[str, int | None] = BoundedLru(4)
    lru.put("known", None)
    missing = object()
    assert lru.get("known", missing) is None
    assert lru.get("unknown", missing) is missing


def test_rejects_non_positive_size() -> None:
    """A cache must hold at least one entry."""
    with pytest.raises(ValueError, match="at least 1"):
        BoundedLru(0)


def test_concurrent_use_stays_bounded_and_consistent() -> None:
    """Threads writing and reading at once never exceed the bound or see a wrong value."""
    lru: BoundedLru[int, int] = BoundedLru(64)
    errors: list[str] = []

    def work(offset: int) -> None:
        for i in range(5000):
            key = (i * 7 + offset) % 300
            lru.put(key, key * 2)
            value = lru.get(key ^ 1, None)
            if value is not None and value != (key ^ 1) * 2:
                errors.append(f"{key ^ 1} -> {value}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(lru) == 64
