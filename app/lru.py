"""One least-recently-used cache bounded by the total size of its values, thread-safe: the answers'
bytes (`runtime.ByteLRU`) and the forwards' attention tensors (`runtime.Runtime.patterns`) both live in
one. (cachetools' LRUCache with getsizeof would do, but it is not thread-safe and not installed.)"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class SizedLRU(Generic[V]):
    def __init__(self, max_bytes: int, size_of: Callable[[V], int]) -> None:
        self.max_bytes = max_bytes
        self.size_of = size_of
        self.size = 0
        self.hits = self.misses = 0
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: V) -> None:
        if self.size_of(value) > self.max_bytes:
            return  # larger than the whole budget: caching it would only evict everything else
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.size -= self.size_of(old)
            self._items[key] = value
            self.size += self.size_of(value)
            self._evict()

    def _evict(self) -> None:
        while self.size > self.max_bytes:
            _, evicted = self._items.popitem(last=False)
            self.size -= self.size_of(evicted)

    def __len__(self) -> int:
        return len(self._items)


def tensor_bytes(t) -> int:
    return t.numel() * t.element_size()
