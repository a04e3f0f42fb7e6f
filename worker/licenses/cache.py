"""A bounded, thread-safe least-recently-used map for memoising lookups."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")


class BoundedLru(Generic[K, V]):
    """A least-recently-used map holding at most `max_entries`; safe to share between threads."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries}")
        self._max_entries = max_entries
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, default: D) -> V | D:
        """Return the value for `key` (marking it recently used), or `default`."""
        with self._lock:
            try:
                value = self._entries[key]
            except KeyError:
                return default
            self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Store `value` under `key`, evicting the least recently used entry when full."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
