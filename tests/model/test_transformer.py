"""The transformer's two attention paths and the meaning of its q/k hooks."""

import pytest
import torch

from model import Run, act_name
from model.transformer import apply_rope
from tests.tiny import tiny_model

QKVZ = ("q", "k", "v", "rot_q", "rot_k", "z")


def capture(net, idx, layer=0, **run):
    r = Run(capture={act_name(x, layer) for x in QKVZ}, **run)
    logits = net(idx, r)
    return logits, {x: r.cache[act_name(x, layer)] for x in QKVZ if act_name(x, layer) in r.cache}


@pytest.mark.parametrize("n_kv_head", [1, 2, 4])
def test_transformer_attention_equals_sdpa(n_kv_head):
    net = tiny_model(n_kv_head=n_kv_head)
    idx = torch.randint(0, 300, (2, 17), generator=torch.Generator().manual_seed(0))
    _, c = capture(net, idx)
    q, k, v = (c[x].transpose(1, 2) for x in ("rot_q", "rot_k", "v"))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(c["z"], ref.transpose(1, 2), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("causal", [True, False])
def test_transformer_impl_switch_explicit_equals_sdpa(arch, causal):
    net = tiny_model(arch)
    idx = torch.randint(0, 300, (3, 21), generator=torch.Generator().manual_seed(1))
    explicit, ce = capture(net, idx, layer=1, causal=causal)
    fused, cf = capture(net, idx, layer=1, causal=causal, impl="sdpa")
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cf["z"], ce["z"], atol=1e-5, rtol=1e-5)


def test_transformer_sdpa_computes_no_pattern():
    net = tiny_model()
    names = {act_name("pattern", 0), act_name("attn_scores", 0), act_name("z", 0)}
    run = Run(capture=names, impl="sdpa")
    net(torch.randint(0, 300, (1, 9)), run)
    assert set(run.cache) == {act_name("z", 0)}
    with pytest.raises(ValueError, match="impl"):
        Run(impl="flash")


def test_transformer_hook_q_k_before_rope_rot_after():
    net = tiny_model()
    idx = torch.randint(0, 300, (2, 11), generator=torch.Generator().manual_seed(2))
    _, c = capture(net, idx)
    cos, sin = net.blocks[0].attn.rope_table(11, net.cfg.rope_scale, idx.device)
    torch.testing.assert_close(c["rot_q"], apply_rope(c["q"], cos, sin))
    torch.testing.assert_close(c["rot_k"], apply_rope(c["k"], cos, sin))
    assert c["q"].shape == (2, 11, 4, 8) and c["k"].shape == (2, 11, 2, 8)  # (B, T, H, d), (B, T, K, d)
    _, off = capture(net, idx, position=False)  # without positions nothing rotates
    torch.testing.assert_close(off["rot_q"], off["q"])
