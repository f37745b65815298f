"""Timing helpers for a shared, noisy machine: interleave the variants and keep medians."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable


def interleaved(fns: dict[str, Callable[[], object]], reps: int, warmup: int = 1) -> dict[str, list[float]]:
    """Time each function `reps` times, rotating the order every round, so that a burst of load from
    another process hits all variants alike instead of whichever happened to run during it."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    names = list(fns)
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(reps):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def percentile(xs: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); with few samples p99 is simply the maximum."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    rank = max(1, min(len(s), math.ceil(p / 100 * len(s))))
    return s[rank - 1]
