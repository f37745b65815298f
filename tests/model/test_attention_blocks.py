"""Explicit attention in blocks of query rows and in reduced-precision weights: the pattern is the
same float32 softmax whichever path computes it, and equals the fused SDPA output."""

import pytest
import torch

from model import Run, act_name
from model.transformer import ROWS, WHOLE_UP_TO
from tests.tiny import tiny_model

T = WHOLE_UP_TO + ROWS + 22  # long enough for blocks; the last one short


def run_capture(net, idx, names, **switches):
    run = Run(capture=set(names), **switches)
    return net(idx, run), run.cache


@pytest.mark.parametrize("n", [T, WHOLE_UP_TO, 9])  # in blocks; the whole matrix with the mask added
@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_attention_blocks_equal_the_whole_matrix(arch, n):
    net = tiny_model(arch, context_length=T)
    idx = torch.randint(0, 300, (2, n), generator=torch.Generator().manual_seed(0))
    pattern, scores, z = act_name("pattern", 1), act_name("attn_scores", 1), act_name("z", 1)
    blocks_out, blocks = run_capture(net, idx, [pattern, z])  # pattern only: written block by block
    whole_out, whole = run_capture(net, idx, [pattern, scores, z])  # scores asked for: all at once
    torch.testing.assert_close(blocks[pattern], whole[pattern], atol=1e-6, rtol=0)
    torch.testing.assert_close(blocks[z], whole[z], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(blocks_out, whole_out, atol=1e-5, rtol=1e-5)
    assert (blocks[pattern].triu(1) == 0).all()  # the future gets exactly 0, not a small number
    assert torch.isinf(whole[scores].triu(1)[..., 0, 1:]).all()
    fused = net(idx, Run(impl="sdpa"))
    torch.testing.assert_close(blocks_out, fused, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(net(idx), fused, atol=1e-5, rtol=1e-5)  # no capture: no pattern kept


def test_attention_blocks_follow_gradients():
    """A gradient through explicit attention (attribution) takes the differentiable path."""
    net = tiny_model(context_length=T)
    idx = torch.randint(0, 300, (1, T), generator=torch.Generator().manual_seed(1))
    net(idx, Run(capture={act_name("pattern", 0)})).sum().backward()
    assert net.blocks[0].attn.q_proj.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_attention_pattern_is_float32_in_reduced_precision(arch, dtype):
    ref = tiny_model(arch, context_length=T)
    net = tiny_model(arch, context_length=T).to(dtype)
    idx = torch.randint(0, 300, (1, T), generator=torch.Generator().manual_seed(2))
    names = [act_name("pattern", i) for i in range(net.cfg.n_layer)] + [act_name("z", 1)]
    out, cache = run_capture(net, idx, names + [act_name("attn_scores", 0)])
    for name in names[:-1]:
        p = cache[name]
        assert p.dtype == torch.float32
        torch.testing.assert_close(p.sum(-1), torch.ones_like(p[..., 0]), atol=1e-6, rtol=0)
    assert cache[act_name("attn_scores", 0)].dtype == torch.float32
    assert cache[act_name("z", 1)].dtype == dtype and out.dtype == dtype  # cast back after attention
    fused = net(idx, Run(impl="sdpa"))
    # bfloat16 keeps 8 bits of mantissa: the two paths round differently, by about 2^-8 of the logits.
    tol = dict(atol=3e-2, rtol=3e-2) if dtype == torch.bfloat16 else dict(atol=3e-3, rtol=3e-3)
    torch.testing.assert_close(out.float(), fused.float(), **tol)
    torch.testing.assert_close(net(idx).float(), fused.float(), **tol)
    # and the reduced-precision pattern stays close to the float32 model's
    _, exact = run_capture(ref, idx, names[:1])
    torch.testing.assert_close(cache[names[0]], exact[names[0]], atol=2e-2, rtol=0)


def test_the_softmax_writes_no_subnormal_probabilities_and_moves_none_by_more_than_e_minus_70():
    from model.transformer import softmax_, softmax_new

    g = torch.Generator().manual_seed(0)
    # Sharp rows, as a self head's: gaps of 80-120 between the top score and the rest.
    scores = torch.randn(2, 4, 16, 16, generator=g) * 30
    scores += torch.eye(16) * 100
    scores.masked_fill_(torch.ones(16, 16, dtype=torch.bool).triu(1), float("-inf"))
    exact = torch.softmax(scores.double(), -1)
    tiny = torch.finfo(torch.float32).tiny
    assert ((torch.softmax(scores, -1) > 0) & (torch.softmax(scores, -1) < tiny)).any()  # what it avoids
    for pattern in (softmax_new(scores), softmax_(scores.clone())):
        assert not ((pattern > 0) & (pattern < tiny)).any()
        assert (pattern.triu(1) == 0).all()  # the future stays exactly 0
        assert (pattern.double() - exact).abs().max() < 1e-6
        assert (pattern.double() - exact).abs()[pattern == 0].max() < 4e-31  # only e^-70 and below set to 0
