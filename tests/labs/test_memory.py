"""Attention's memory, measured: the explicit path's peak grows like n², the fused kernel's like n."""

from __future__ import annotations

import os

import pytest

from labs.memory import peak_memory
from model.config import ModelConfig

needs_linux = pytest.mark.skipif(
    not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux's peak-RSS reset"
)
SMALL = ModelConfig(vocab_size=64, n_layer=1, n_head=4, n_kv_head=2, d_model=64, d_ff=128, context_length=64)


@needs_linux
def test_peak_memory_explicit_grows_like_n_squared_fused_like_n():
    m = peak_memory(SMALL, 2048, threads=1)
    assert m.ns == [64, 128, 256, 512, 1024, 2048] and m.device == "cpu" and "VmHWM" in m.method
    i, j = m.ns.index(1024), m.ns.index(2048)
    explicit = m.peak["explicit"][j] / m.peak["explicit"][i]
    fused = m.peak["sdpa"][j] / m.peak["sdpa"][i]
    assert 3.2 < explicit < 4.8, m.peak  # n²: doubling n quadruples it
    assert 1.5 < fused < 2.6, m.peak  # n: doubling n doubles it
    # The explicit peak holds at least the scores and the probabilities it materialises, and not
    # much more: the O(n) rest (q, k, v, the output) is small beside them at this size.
    assert m.predicted[j] <= m.peak["explicit"][j] < 1.3 * m.predicted[j]
    assert m.peak["sdpa"][j] < m.predicted[j] / 10
    assert 1.8 < m.fit("explicit")["exponent"] < 2.2 and m.fit("sdpa")["exponent"] < 1.3
