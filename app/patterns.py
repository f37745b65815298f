"""The attention of recent forwards, kept so one head's full matrix can be sliced out when the page asks
for it (POST /api/head) without running the model again: the keystroke answer carries only thumbnails.

Keyed by what the pattern depends on (model, token ids, switches, knocked-out heads), within a byte
budget, least recently used first out. A tensor larger than the whole budget is not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

import torch


class PatternCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.items: OrderedDict[Hashable, torch.Tensor] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> torch.Tensor | None:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: torch.Tensor) -> None:
        size = value.numel() * value.element_size()
        if size > self.max_bytes:
            return
        with self.lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.bytes -= old.numel() * old.element_size()
            self.items[key] = value
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, dropped = self.items.popitem(last=False)
                self.bytes -= dropped.numel() * dropped.element_size()

    def __len__(self) -> int:
        return len(self.items)
