"""Hook names, `run_with_cache` and `run_with_hooks`: the TransformerLens-style API."""

import pytest
import torch

from model import act_name


def test_act_name_builds_transformer_lens_names():
    assert act_name("pattern", 0) == "blocks.0.attn.hook_pattern"
    assert act_name("rot_k", 3) == "blocks.3.attn.hook_rot_k"
    assert act_name("resid_post", 1) == "blocks.1.hook_resid_post"
    assert act_name("embed") == "hook_embed"
    for bad, match in (("pattern", "needs a layer"), ("embed", "takes no layer"), ("patern", "unknown")):
        with pytest.raises(ValueError, match=match):
            act_name(bad, 0 if match != "needs a layer" else None)


def test_act_name_every_short_name_is_a_hook_of_the_model(tiny_lm):
    from model.hooks import _BLOCK_HOOKS

    hooks = set(tiny_lm.net.hook_names)
    assert {act_name(short, 1) for short in _BLOCK_HOOKS} <= hooks
    assert act_name("embed") in hooks and act_name("pos_embed") not in hooks  # RoPE: no position table, as TL


def test_run_with_cache_keeps_the_batch_dimension(tiny_lm):
    names = [act_name("pattern", 0), act_name("resid_post", 1)]
    logits, cache = tiny_lm.run_with_cache([[5, 6, 7], [8, 9, 10]], names)
    assert logits.shape == (2, 3, 300) and set(cache) == set(names)
    assert cache[names[0]].shape == (2, 4, 3, 3) and cache[names[1]].shape == (2, 3, 32)
    _, one = tiny_lm.run_with_cache([8, 9, 10], names)
    torch.testing.assert_close(one[names[0]][0], cache[names[0]][1])


def test_run_with_cache_without_logits_and_with_switches(tiny_lm):
    name = act_name("pattern", 1)
    none, cache = tiny_lm.run_with_cache("The cat sat", [name], logits=False, causal=False)
    assert none is None and (cache[name][0, :, 0, -1] > 0).all()  # no mask: the first token sees the last
    _, everything = tiny_lm.run_with_cache("The cat")
    # Per-head results are computed only when named, as in TransformerLens.
    results = {act_name("result", i) for i in (0, 1)}
    assert set(everything) == set(tiny_lm.net.hook_names) - results


def test_run_with_cache_rejects_unknown_names_and_patterns_without_explicit(tiny_lm):
    with pytest.raises(ValueError, match="no hook named"):
        tiny_lm.run_with_cache("The cat", ["blocks.0.attn.hook_patern"])
    with pytest.raises(ValueError, match="impl='sdpa'"):
        tiny_lm.run_with_cache("The cat", [act_name("pattern", 0)], impl="sdpa")
    with pytest.raises(ValueError, match="no hook named"):
        tiny_lm.run_with_hooks("The cat", [("blocks.9.hook_z", lambda x, hook: x)])


def test_run_with_hooks_intervenes_for_one_call_only(tiny_lm):
    ids = list(range(5, 15))
    seen = []

    def double_resid(x, hook):
        seen.append(hook.name)
        return 2 * x

    def observe(x, hook):
        seen.append(hook.name)  # returning None leaves the activation as it was

    base = tiny_lm.logits(ids)
    torch.testing.assert_close(tiny_lm.run_with_hooks(ids, [(act_name("z", 0), observe)])[0], base)
    changed = tiny_lm.run_with_hooks(ids, [(act_name("resid_mid", 0), double_resid)])[0]
    assert not torch.allclose(changed, base)
    assert seen == [act_name("z", 0), act_name("resid_mid", 0)]
    torch.testing.assert_close(tiny_lm.logits(ids), base)  # nothing stays on the model


def test_run_with_cache_records_what_flows_on_after_an_intervention(tiny_lm):
    name = act_name("resid_mid", 0)
    _, plain = tiny_lm.run_with_cache([5, 6, 7], [name])
    _, hooked = tiny_lm.run_with_cache([5, 6, 7], [name], fwd_hooks=[(name, lambda x, hook: x + 1)])
    torch.testing.assert_close(hooked[name], plain[name] + 1)


def test_run_with_cache_sdpa_keeps_everything_but_the_pattern(tiny_lm):
    explicit, every = tiny_lm.run_with_cache([5, 6, 7, 8])
    fused, cache = tiny_lm.run_with_cache([5, 6, 7, 8], impl="sdpa")
    assert set(every) - set(cache) == {act_name(x, i) for x in ("attn_scores", "pattern") for i in (0, 1)}
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
