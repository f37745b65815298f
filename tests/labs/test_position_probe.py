"""The position probe: a ridge regression from the residual stream to each token's position."""

from __future__ import annotations

import pytest
import torch

from labs.position_probe import WINDOW, feature_bytes, fit_and_score, position_probe, stream_points
from model import LanguageModel
from tests.tiny import tiny_model

WINDOWS = 8  # 4 fit, 4 scored: enough for a 32-wide stream, quick on 2 cores


def test_stream_points_name_the_embeddings_then_every_block(tokenizer):
    nope = LanguageModel(tiny_model("llama", no_position=True), tokenizer, name="nope")
    gpt2 = LanguageModel(tiny_model("gpt2"), tokenizer, name="gpt2")
    assert [n for n, _ in stream_points(nope)] == ["token embeddings", "after block 0", "after block 1"]
    assert [h for _, h in stream_points(gpt2)] == ["hook_embed", "blocks.0.hook_resid_pre",
                                                   "blocks.0.hook_resid_post", "blocks.1.hook_resid_post"]  # fmt: skip
    assert feature_bytes(gpt2, WINDOWS) == WINDOWS * WINDOW * 32 * 4 * 4


def test_the_fit_reads_a_linear_position_and_not_noise():
    g = torch.Generator().manual_seed(0)
    n = 16 * WINDOW
    y = torch.arange(WINDOW, dtype=torch.float64).repeat(16)
    direction = torch.randn(24, generator=g, dtype=torch.float64)
    noise = torch.randn(n, 24, generator=g, dtype=torch.float64)
    r2, err = fit_and_score(noise + 0.5 * y[:, None] * direction, y, n // 2)
    assert r2 > 0.99 and err < 1.0
    r2, err = fit_and_score(noise, y, n // 2)  # nothing to read: no better than the mean
    assert r2 < 0.05 and err > 14


def test_learned_positions_are_in_the_stream_before_block_0(tokenizer):
    net = tiny_model("gpt2", d_model=128, n_head=4, n_kv_head=4, d_ff=128)
    with torch.no_grad():
        net.pos_embed.weight.mul_(10)  # position vectors as large as a trained model's, against token noise
    p = position_probe(LanguageModel(net, tokenizer, name="gpt2"), windows=WINDOWS)
    assert p.causal[0].r2 < 0.2  # the token embeddings alone
    assert p.causal[1].name == "embeddings + position vectors" and p.causal[1].r2 > 0.9


def test_no_position_and_no_mask_leave_nothing_to_read(tokenizer):
    # Without mask or positional encoding a token's vector depends on its token and the set of tokens in its
    # window only, so no point of the stream can tell position better than the token embeddings do.
    lm = LanguageModel(tiny_model("llama", no_position=True), tokenizer, name="nope")
    p = position_probe(lm, windows=WINDOWS)
    assert all(x.r2 < 0.1 for x in p.no_mask)
    assert p.chance_error == pytest.approx(16.0, abs=0.5)  # positions 0-63 uniform: a mean error of 16
    assert p.window == WINDOW and p.windows == WINDOWS and len(p.causal) == len(p.no_mask) == 3
