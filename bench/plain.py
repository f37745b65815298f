"""The baseline a capture is measured against: the same weights run straight through
`F.scaled_dot_product_attention`, with no hooks, no stored activations and no explicit attention
matrix. It is what an inference server would run; `check_plain_forward` keeps it honest."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from model.transformer import Transformer, apply_rope, rope_cos_sin


@torch.inference_mode()
def plain_forward(net: Transformer, idx: torch.Tensor) -> torch.Tensor:
    """Token ids (B, T) -> logits (B, T, V), causal, with positions."""
    cfg = net.cfg
    B, T = idx.shape
    x = net.embed(idx)
    if cfg.arch == "gpt2":
        x = x + net.pos_embed(torch.arange(T, device=idx.device))[None]
    else:
        cos, sin = rope_cos_sin(
            net.blocks[0].attn.inv_freq, torch.arange(T, device=idx.device), cfg.rope_scale
        )
        cos, sin = cos[:, None, :], sin[:, None, :]
    for block in net.blocks:
        a, h = block.attn, block.ln1(x)
        q = a.q_proj(h).view(B, T, cfg.n_head, cfg.hd)
        k = a.k_proj(h).view(B, T, cfg.n_kv_head, cfg.hd)
        v = a.v_proj(h).view(B, T, cfg.n_kv_head, cfg.hd)
        if cfg.arch == "llama":
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        z = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=cfg.n_rep > 1
        )  # (B, H, T, d)
        x = x + a.o_proj(z.transpose(1, 2).reshape(B, T, cfg.n_head * cfg.hd))
        x = x + block.mlp(block.ln2(x), None)
    return net.unembed(net.ln_final.norm(x))


def check_plain_forward(net: Transformer, idx: torch.Tensor) -> None:
    """The baseline must compute the same function as our model, or the ratio means nothing."""
    with torch.inference_mode():
        torch.testing.assert_close(plain_forward(net, idx), net(idx), atol=2e-4, rtol=2e-4)
