"""Every hook means what TransformerLens's hook of that name means.

`tl_reference` re-computes a forward pass straight from the weights the way TransformerLens's
HookedTransformer does (components/abstract_attention.py, grouped_query_attention.py, mlp.py,
gated_mlp.py, rms_norm.py, layer_norm_pre.py; weights laid out as TL's W_Q [H, D, d], W_O [H, d, D]),
recording each hook under TL's name. Our cache must hold the same value for every hook the model
exposes. One deliberate choice: for LayerNorm, hook_normalized is TL's folded-norm value (centred
x / scale, before the weight, as LayerNormPre records it), since we never fold norms into weights.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from model import LanguageModel, act_name
from tests.tiny import tiny_model

MODELS = {
    "gpt2": dict(arch="gpt2"),
    "llama-gqa": dict(arch="llama"),  # 4 query heads sharing 2 K/V heads
    "qwen-like": dict(arch="llama", n_kv_head=1, qkv_bias=True, tie_embeddings=False),
}


def tl_norm(x, mod, eps, centre, name, ref):
    if centre:
        x = x - x.mean(-1, keepdim=True)
    scale = ref[f"{name}.hook_scale"] = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    normalized = ref[f"{name}.hook_normalized"] = x / scale
    return normalized * mod.weight + (mod.bias if centre else 0)


def tl_rotary(x, base):
    """TL's rotary for GPT-NeoX-style pairs (i, i + d/2): angles pos / base^(i / (d/2))."""
    T, d = x.shape[1], x.shape[-1]
    freq = base ** (torch.arange(d // 2, dtype=torch.float32) / (d / 2))
    angles = torch.arange(T, dtype=torch.float32)[:, None] / freq.repeat(2)[None, :]  # (T, d)
    flip = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], dim=-1)
    return x * angles.cos()[None, :, None, :] + flip * angles.sin()[None, :, None, :]


def heads(linear, n, d, D):
    """nn.Linear (n*d, D) -> TL's W [n, D, d] and b [n, d]."""
    W = linear.weight.view(n, d, D).transpose(1, 2)
    b = torch.zeros(n, d) if linear.bias is None else linear.bias.view(n, d)
    return W, b


@torch.inference_mode()  # our cache holds inference tensors
def tl_reference(net, idx):
    cfg, ref = net.cfg, {}
    H, K, d, D = cfg.n_head, cfg.n_kv_head, cfg.hd, cfg.d_model
    gpt2 = cfg.arch == "gpt2"
    B, T = idx.shape
    resid = ref["hook_embed"] = net.embed.weight[idx]
    if gpt2:
        ref["hook_pos_embed"] = net.pos_embed.weight[:T][None].expand(B, T, D)
        resid = resid + ref["hook_pos_embed"]
    for i, block in enumerate(net.blocks):
        p, a = f"blocks.{i}.", block.attn
        ref[p + "hook_resid_pre"] = resid
        x = tl_norm(resid, block.ln1, cfg.norm_eps, gpt2, p + "ln1", ref)
        (W_Q, b_Q), (W_K, b_K), (W_V, b_V) = (
            heads(m, n, d, D) for m, n in ((a.q_proj, H), (a.k_proj, K), (a.v_proj, K))
        )
        q = ref[p + "attn.hook_q"] = torch.einsum("btD,hDd->bthd", x, W_Q) + b_Q
        k = ref[p + "attn.hook_k"] = torch.einsum("btD,hDd->bthd", x, W_K) + b_K  # K heads, as TL's GQA
        v = ref[p + "attn.hook_v"] = torch.einsum("btD,hDd->bthd", x, W_V) + b_V  # K heads
        if not gpt2:
            q = ref[p + "attn.hook_rot_q"] = tl_rotary(q, cfg.rope_base)
            k = ref[p + "attn.hook_rot_k"] = tl_rotary(k, cfg.rope_base)
        k, v = k.repeat_interleave(H // K, dim=2), v.repeat_interleave(H // K, dim=2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        scores = ref[p + "attn.hook_attn_scores"] = scores.masked_fill(future, -torch.inf)
        pattern = ref[p + "attn.hook_pattern"] = scores.softmax(-1)
        z = ref[p + "attn.hook_z"] = torch.einsum("bhqk,bkhd->bqhd", pattern, v)
        W_O = a.o_proj.weight.view(D, H, d).permute(1, 2, 0)  # (H, d, D)
        result = ref[p + "attn.hook_result"] = torch.einsum("bthd,hdD->bthD", z, W_O)
        b_O = torch.zeros(D) if a.o_proj.bias is None else a.o_proj.bias
        attn_out = ref[p + "hook_attn_out"] = result.sum(2) + b_O
        resid = ref[p + "hook_resid_mid"] = resid + attn_out
        x = tl_norm(resid, block.ln2, cfg.norm_eps, gpt2, p + "ln2", ref)
        m = block.mlp
        if gpt2:  # MLP with gelu_new
            pre = ref[p + "mlp.hook_pre"] = x @ m.up_proj.weight.T + m.up_proj.bias
            post = 0.5 * pre * (1 + torch.tanh(math.sqrt(2 / math.pi) * (pre + 0.044715 * pre.pow(3))))
        else:  # GatedMLP: pre = x W_gate, pre_linear = x W_in, post = silu(pre) * pre_linear
            pre = ref[p + "mlp.hook_pre"] = F.linear(x, m.gate_proj.weight, m.gate_proj.bias)
            pre_linear = ref[p + "mlp.hook_pre_linear"] = F.linear(x, m.up_proj.weight, m.up_proj.bias)
            post = pre * torch.sigmoid(pre) * pre_linear
        ref[p + "mlp.hook_post"] = post
        mlp_out = ref[p + "hook_mlp_out"] = F.linear(post, m.down_proj.weight, m.down_proj.bias)
        resid = ref[p + "hook_resid_post"] = resid + mlp_out
    final = tl_norm(resid, net.ln_final.norm, cfg.norm_eps, gpt2, "ln_final", ref)
    return final @ net.unembed.weight.T, ref


@pytest.fixture(params=sorted(MODELS))
def lm(request, tokenizer):
    return LanguageModel(tiny_model(seed=3, **MODELS[request.param]), tokenizer, name=request.param)


def test_tl_semantics_every_hook_equals_transformer_lens_definition(lm):
    idx = torch.tensor([[5, 17, 42, 8, 99, 5, 17, 42], [1, 2, 3, 4, 5, 6, 7, 8]])
    logits, cache = lm.run_with_cache(idx, lambda name: True)
    ref_logits, ref = tl_reference(lm.net, idx)
    assert set(cache) == set(lm.net.hook_names)  # every exposed hook, no more, no less
    assert set(ref) == set(cache), set(ref) ^ set(cache)
    for name in ref:
        assert cache[name].shape == ref[name].shape, name
        torch.testing.assert_close(
            cache[name], ref[name], atol=1e-5, rtol=1e-5, msg=lambda m, n=name: f"{n}: {m}"
        )
    torch.testing.assert_close(logits, ref_logits, atol=1e-5, rtol=1e-5)


def test_tl_semantics_hook_result_only_when_asked_and_changes_nothing(lm):
    ids = [5, 17, 42, 8, 99]
    plain, every = lm.run_with_cache(ids)
    assert not any(name.endswith("hook_result") for name in every)
    with_result, cache = lm.run_with_cache(ids, act_name("result", 1))
    assert list(cache) == [act_name("result", 1)]
    torch.testing.assert_close(with_result, plain, atol=1e-5, rtol=1e-5)


def test_cache_indexes_like_transformer_lens(lm):
    _, cache = lm.run_with_cache([5, 17, 42, 8])
    last = lm.config.n_layer - 1
    assert cache["pattern", 0] is cache["blocks.0.attn.hook_pattern"]
    assert cache["resid_post", -1] is cache[f"blocks.{last}.hook_resid_post"]
    assert cache["scale", 1, "ln2"] is cache["blocks.1.ln2.hook_scale"]
    assert cache["normalized"] is cache["ln_final.hook_normalized"] and cache["embed"] is cache["hook_embed"]
    assert (
        "blocks.0.hook_resid_post" in cache and ("z", 1) in cache and "blocks.0.attn.hook_result" not in cache
    )
    assert set(cache.keys()) == set(dict(cache.items()))
    with pytest.raises(KeyError, match="names_filter"):
        cache["result", 0]


def test_cache_accumulated_resid_with_ln_is_what_the_unembedding_reads(lm):
    logits, cache = lm.run_with_cache([[5, 17, 42, 8, 99, 3]])
    stack, labels = cache.accumulated_resid(return_labels=True)
    L = lm.config.n_layer
    assert labels == [f"{i}_pre" for i in range(L)] + ["final_post"] and stack.shape[0] == L + 1
    torch.testing.assert_close(stack[1], cache["resid_pre", 1])
    scaled = cache.accumulated_resid(apply_ln=True)
    # The last component, scaled, then through the final norm's weight and the unembedding, is the logits.
    norm = lm.net.ln_final.norm
    with torch.inference_mode():
        final = lm.net.unembed(scaled[-1] * norm.weight + (0 if norm.bias is None else norm.bias))
    torch.testing.assert_close(final, logits, atol=1e-5, rtol=1e-5)
    assert cache.accumulated_resid(layer=1, incl_mid=True, return_labels=True)[1] == [
        "0_pre",
        "0_mid",
        "1_pre",
    ]


def test_cache_stack_head_results_add_up_to_attention_output(lm):
    ids = [5, 17, 42, 8, 99]
    _, cache = lm.run_with_cache(ids)  # no hook_result: derived from hook_z
    _, asked = lm.run_with_cache(ids, lambda name: "result" in name)
    stack, labels = cache.stack_head_results(return_labels=True)
    H, L = lm.config.n_head, lm.config.n_layer
    assert stack.shape[0] == L * H and labels[H + 1] == "L1H1"
    torch.testing.assert_close(stack, asked.stack_head_results(), atol=1e-6, rtol=1e-6)
    b_O = lm.net.blocks[0].attn.o_proj.bias
    b_O = 0 if b_O is None else b_O.detach()
    torch.testing.assert_close(stack[:H].sum(0) + b_O, cache["attn_out", 0], atol=1e-5, rtol=1e-5)


def test_run_with_cache_attention_equals_trace(lm):
    prompt = "The cat sat on the mat. The cat"
    t = lm.trace(prompt)
    _, cache = lm.run_with_cache(prompt, lambda name: name.endswith("hook_pattern"))
    attention = torch.stack([cache["pattern", i][0] for i in range(lm.config.n_layer)])
    torch.testing.assert_close(attention, t.attention, atol=0, rtol=0)


def test_run_with_hooks_zeroing_hook_z_equals_the_ablation_switch_exactly(lm):
    ids = [5, 17, 42, 8, 99, 5, 17]

    def zero_head_2(z, hook):
        z = z.clone()
        z[:, :, 2] = 0
        return z

    hooked = lm.run_with_hooks(ids, fwd_hooks=[(act_name("z", 1), zero_head_2)])
    switched = lm.run_with_hooks(ids, ablate=[(1, 2)])
    assert torch.equal(hooked, switched) and not torch.equal(hooked, lm.run_with_hooks(ids))


def test_run_with_hooks_takes_a_name_filter(lm):
    ids = [5, 17, 42]
    seen = []
    lm.run_with_hooks(
        ids, fwd_hooks=[(lambda name: name.endswith("hook_scale"), lambda x, hook: seen.append(hook.name))]
    )
    assert seen == [n for n in lm.net.hook_names if n.endswith("hook_scale")]
    assert len(seen) == 2 * lm.config.n_layer + 1


def test_act_name_norm_result_and_full_names_as_transformer_lens():
    assert act_name("scale", 2, "ln1") == "blocks.2.ln1.hook_scale"
    assert act_name("normalized", 0, "ln2") == "blocks.0.ln2.hook_normalized"
    assert act_name("scale") == "ln_final.hook_scale" and act_name("normalized") == "ln_final.hook_normalized"
    assert act_name("result", 1) == "blocks.1.attn.hook_result"
    assert act_name("pre_linear", 3) == "blocks.3.mlp.hook_pre_linear"
    assert (
        act_name("blocks.0.hook_resid_pre") == "blocks.0.hook_resid_pre"
        and act_name("hook_embed") == "hook_embed"
    )
    with pytest.raises(ValueError, match="ln1"):
        act_name("scale", 2)
