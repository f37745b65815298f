"""Parameter census: how many weights each part of a model holds, computed from its config alone.

Pure arithmetic on a `ModelConfig`, so it works for configs we never instantiate (Llama-2-7B, ...).
A tied unembedding shares the embedding matrix: it is counted once, under `embedding`, and
`unembedding` is 0 (and `tied` says so). A test keeps these sums equal to a real `Transformer`'s.
"""

from __future__ import annotations

from model.config import ModelConfig


def attention_params(cfg: ModelConfig) -> int:
    """One layer's q/k/v/o projections (GQA: k and v have n_kv_head heads), with their biases."""
    D, d, H, K = cfg.d_model, cfg.hd, cfg.n_head, cfg.n_kv_head
    qkv_bias = cfg.qkv_bias or cfg.arch == "gpt2"
    o_bias = cfg.o_bias or cfg.arch == "gpt2"
    weights = D * H * d + 2 * D * K * d + H * d * D
    return weights + (H * d + 2 * K * d if qkv_bias else 0) + (D if o_bias else 0)


def feed_forward_params(cfg: ModelConfig) -> int:
    """One layer's MLP: SwiGLU has gate, up and down matrices; GELU has up and down."""
    D, F = cfg.d_model, cfg.d_ff
    bias = cfg.mlp_bias or cfg.arch == "gpt2"
    n_in = 2 if cfg.arch == "llama" else 1
    return n_in * (D * F + (F if bias else 0)) + F * D + (D if bias else 0)


def norm_params(cfg: ModelConfig) -> int:
    """RMSNorm has a gain per channel; LayerNorm a gain and a bias. Two per block plus the final one."""
    per_norm = cfg.d_model if cfg.arch == "llama" else 2 * cfg.d_model
    return (2 * cfg.n_layer + 1) * per_norm


def param_census(cfg: ModelConfig) -> dict[str, int | bool]:
    embedding = cfg.vocab_size * cfg.d_model
    if cfg.arch == "gpt2":
        embedding += cfg.context_length * cfg.d_model  # learned absolute positions
    parts = {
        "embedding": embedding,
        "attention": cfg.n_layer * attention_params(cfg),
        "feed_forward": cfg.n_layer * feed_forward_params(cfg),
        "norms": norm_params(cfg),
        "unembedding": 0 if cfg.tie_embeddings else cfg.vocab_size * cfg.d_model,
    }
    return {**parts, "total": sum(parts.values()), "tied": cfg.tie_embeddings}
