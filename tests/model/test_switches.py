"""The teaching switches: position off, causal off, head ablation, all per call."""

from __future__ import annotations

import pytest
import torch

from model import LanguageModel, act_name
from tests.tiny import tiny_model


def permuted_outputs(lm: LanguageModel, ids: list[int], perm: list[int], **switches):
    """Logits of the original and of the permuted input re-ordered back to the original order."""
    a = lm.logits(ids, **switches)
    b = lm.logits([ids[p] for p in perm], **switches)
    inverse = torch.argsort(torch.tensor(perm))
    return a, b[inverse]


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_switches_permutation_equivariance(tokenizer, arch):
    net = tiny_model(arch)
    with torch.no_grad():  # sharper attention than the 0.02-std init, so order effects are large
        for block in net.blocks:
            block.attn.q_proj.weight.mul_(8)
            block.attn.k_proj.weight.mul_(8)
    lm = LanguageModel(net, tokenizer, name="tiny")
    ids = torch.randint(0, 300, (12,), generator=torch.Generator().manual_seed(3)).tolist()
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(4)).tolist()
    a, b = permuted_outputs(lm, ids, perm, position=False, causal=False)
    assert (a - b).abs().max().item() <= 1e-5  # no position, no mask: outputs permute with the input
    a, b = permuted_outputs(lm, ids, perm, position=True, causal=False)
    assert (a - b).abs().max().item() > 1e-2  # RoPE / learned positions break equivariance
    a, b = permuted_outputs(lm, ids, perm, position=False, causal=True)
    assert (a - b).abs().max().item() > 1e-2  # the causal mask itself carries order


def test_switches_ablation_zeroes_exactly_one_head(tiny_lm):
    ids = list(range(5, 20))
    names = [act_name("z", 1), act_name("attn_out", 1), act_name("resid_post", 0)]
    _, intact = tiny_lm.run_with_cache(ids, names)
    _, ablated = tiny_lm.run_with_cache(ids, names, ablate=[(1, 2)])
    # Earlier layers are untouched; in layer 1 only head 2's contribution is gone.
    torch.testing.assert_close(intact[act_name("resid_post", 0)], ablated[act_name("resid_post", 0)])
    z = intact[act_name("z", 1)]  # (B, T, H, d)
    w_o, d = tiny_lm.net.blocks[1].attn.o_proj.weight.detach(), tiny_lm.config.hd
    head2 = z[..., 2, :] @ w_o[:, 2 * d : 3 * d].T
    expected = intact[act_name("attn_out", 1)] - head2
    torch.testing.assert_close(ablated[act_name("attn_out", 1)], expected, atol=1e-5, rtol=1e-5)
    # Ablation is an intervention on hook_z, so the cache holds what flowed on: head 2 zeroed, the rest kept.
    zeroed = z.clone()
    zeroed[..., 2, :] = 0
    torch.testing.assert_close(ablated[act_name("z", 1)], zeroed)


def test_switches_ablation_is_a_hook_z_intervention(tiny_lm):
    ids = list(range(5, 20))

    def knock_out_head_2(z, hook):
        assert hook.name == act_name("z", 1)
        z = z.clone()
        z[:, :, 2] = 0
        return z

    by_hand = tiny_lm.run_with_hooks(ids, [(act_name("z", 1), knock_out_head_2)])[0]
    torch.testing.assert_close(by_hand, tiny_lm.logits(ids, ablate=[(1, 2)]))
    run = tiny_lm.make_run(ablate=[(1, 2), (1, 0), (0, 3)])
    assert sorted(run.hooks) == [act_name("z", 0), act_name("z", 1)]  # one intervention per layer


def test_switches_mean_ablation_replaces_head_by_its_mean(tiny_lm):
    ids = list(range(5, 20))
    base = tiny_lm.logits(ids)
    zero = tiny_lm.logits(ids, ablate=[(0, 1)])
    mean = tiny_lm.logits(ids, ablate=[(0, 1)], ablate_mode="mean")
    assert not torch.allclose(base, zero) and not torch.allclose(zero, mean)


def test_switches_rope_scale_changes_only_with_position(tiny_lm):
    ids = list(range(5, 30))
    torch.testing.assert_close(tiny_lm.logits(ids), tiny_lm.logits(ids, rope_scale=1.0))
    assert not torch.allclose(tiny_lm.logits(ids), tiny_lm.logits(ids, rope_scale=4.0))
    no_pos = tiny_lm.logits(ids, position=False)
    torch.testing.assert_close(no_pos, tiny_lm.logits(ids, position=False, rope_scale=4.0))


def test_switches_reject_bad_heads_and_ids(tiny_lm):
    with pytest.raises(ValueError, match=r"no head \[5, 0\]"):
        tiny_lm.trace("The cat", ablate=[(5, 0)])
    with pytest.raises(ValueError, match="no tokens"):
        tiny_lm.trace("")
    with pytest.raises(ValueError, match="out of range"):
        tiny_lm.trace([1, 2, 99999])
    with pytest.raises(ValueError, match="context length"):
        tiny_lm.trace(list(range(65)))
    with pytest.raises(ValueError, match="ablate_mode"):
        tiny_lm.logits([1, 2], ablate_mode="half")


def test_a_model_with_no_positional_encoding_has_no_position_to_switch(tokenizer):
    net = tiny_model("llama", no_position=True)
    assert net.cfg.positional == "none" and not hasattr(net, "pos_embed")
    lm = LanguageModel(net, tokenizer, name="nope")
    ids = torch.randint(0, 300, (12,), generator=torch.Generator().manual_seed(3)).tolist()
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(4)).tolist()
    assert torch.equal(lm.logits(ids, position=True), lm.logits(ids, position=False))
    a, b = permuted_outputs(lm, ids, perm, position=True, causal=False)
    assert (a - b).abs().max().item() <= 1e-5  # position "on" adds nothing: only the mask carries order
    a, b = permuted_outputs(lm, ids, perm, position=True, causal=True)
    assert (a - b).abs().max().item() > 1e-2
    _, cache = lm.run_with_cache(ids, [act_name("q", 0), act_name("rot_q", 0)])
    assert torch.equal(cache[act_name("q", 0)], cache[act_name("rot_q", 0)])  # hook kept, nothing turned
