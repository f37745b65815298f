"""A cost timing's memory: what `timing_bytes` says it holds is what the process grows by.

The bundled model timed at n = 4096 grew the server by 1.05 GB (8 heads x 4096² x 4 bytes, scores and
probabilities); the server now times only up to `timing_cap` within `max_timing_bytes`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labs.cost import time_attention, timing_bytes, timing_cap
from model import load

MIB = 2**20
SLACK_MIB = 48  # projections, the feed-forward, the cached masks and the allocator's rounding


def rss_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    raise AssertionError(field)


@pytest.mark.slow
@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux's peak-RSS reset")
def test_cost_timing_peak_memory_stays_within_the_bound():
    lm = load("classroom")
    assert timing_bytes(lm.config, 4096) == 1024 * MIB  # what n = 4096 would have held
    budget = 64 * MIB
    cap = timing_cap(lm.config, budget, 4096)
    assert cap == 1024 and timing_bytes(lm.config, 2 * cap) > budget
    time_attention(lm.net, 64, repeats=1)  # one-off allocations (thread pools, kernels) before measuring
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM, the peak, to the current RSS
    start = rss_mib("VmRSS:")
    timing = time_attention(lm.net, cap, repeats=1, budget_s=300)["timing"]
    grown = rss_mib("VmHWM:") - start
    print(f"\ntiming up to n = {cap}: peak RSS +{grown:.0f} MiB (bound {budget / MIB:.0f} + {SLACK_MIB})")
    assert timing.ns[-1] == cap
    assert grown < budget / MIB + SLACK_MIB
