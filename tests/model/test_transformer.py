import torch

from model import Run
from tests.tiny import tiny_model


def test_transformer_attention_equals_sdpa():
    net = tiny_model(n_kv_head=1)
    idx = torch.randint(0, 300, (2, 17))
    run = Run(
        capture={
            "blocks.0.attn.hook_q",
            "blocks.0.attn.hook_k",
            "blocks.0.attn.hook_v",
            "blocks.0.attn.hook_z",
        }
    )
    net(idx, run)
    c = run.cache
    q, k, v = (c[f"blocks.0.attn.hook_{x}"].transpose(1, 2) for x in "qkv")
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(c["blocks.0.attn.hook_z"], ref.transpose(1, 2), atol=1e-5, rtol=1e-5)
