"""The parameter census equals the real parameter count (published totals: tests/labs/test_cost.py)."""

from __future__ import annotations

import pytest

from labs.census import param_census
from model import ModelConfig, Transformer

CONFIGS = [
    dict(arch="llama"),
    dict(arch="llama", tie_embeddings=False, qkv_bias=True, o_bias=True, mlp_bias=True, n_kv_head=1),
    dict(arch="llama", head_dim=48, n_head=4, n_kv_head=4),
    dict(arch="gpt2", n_kv_head=8, d_ff=1024, vocab_size=500, context_length=128),
]


@pytest.mark.parametrize("kw", CONFIGS)
def test_census_matches_the_parameters_of_a_built_model(kw):
    cfg = ModelConfig(
        **{"n_layer": 2, "d_model": 64, "d_ff": 96, "vocab_size": 300, "context_length": 64, **kw}
    )
    net = Transformer(cfg)
    census = param_census(cfg)
    assert census["total"] == sum(p.numel() for p in net.parameters())  # shared tensors counted once
    by_part = {"embedding": 0, "attention": 0, "feed_forward": 0, "norms": 0, "unembedding": 0}
    for name, p in net.named_parameters():  # named_parameters skips the tied unembedding alias
        part = ("embedding" if name.startswith(("embed", "pos_embed")) else "attention" if ".attn." in name
                else "feed_forward" if ".mlp." in name else "unembedding" if name.startswith("unembed")
                else "norms")  # fmt: skip
        by_part[part] += p.numel()
    assert {k: census[k] for k in by_part} == by_part
    assert census["tied"] == cfg.tie_embeddings and (census["unembedding"] == 0) == cfg.tie_embeddings
