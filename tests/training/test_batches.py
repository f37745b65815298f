"""The training batches (copy rows teach copying only where copying is possible; the early small
alphabet applies for its steps and no longer) and the toy copying runs built on them."""

from __future__ import annotations

import numpy as np

from training.data import INVENTED, NATURAL_WEIGHTS, Batches
from training.recipe import Recipe

VOCAB = 8192


def batches(**knobs) -> Batches:
    rng = np.random.default_rng(0)
    streams = {p: rng.integers(1000, VOCAB, 5000).astype(np.int32) for p in NATURAL_WEIGHTS}
    return Batches(streams, Recipe(vocab_size=VOCAB, **{"short_batch": 8, **knobs}))


def test_short_rows_repeat_one_span_and_score_only_the_repeats():
    b = batches()
    x, y, m = b.short()
    for row_x, row_y, row_m in zip(x.tolist(), y.tolist(), m.tolist(), strict=True):
        first = row_m.index(True)  # the first scored target starts the second copy
        span = row_x[: first + 1]
        assert len(set(span)) == len(span)  # one span of distinct ids
        assert all(t in span for t, scored in zip(row_y, row_m, strict=True) if scored)
        assert row_y[:first] == row_x[1 : first + 1] and not any(row_m[:first])


def test_early_alphabet_holds_for_its_steps_then_the_whole_vocabulary():
    b = batches(early_span_vocab=64, early_span_steps=10)
    b.at_step(0)
    assert int(b.short()[0].max()) < 64
    b.at_step(9)
    assert int(b.short()[0].max()) < 64
    b.at_step(10)
    assert int(b.short()[0].max()) >= 64  # 8 rows of spans from 8,192 ids: some id above 64
    off = batches()
    off.at_step(0)
    assert int(off.short()[0].max()) >= 64


def test_alphabet_doubles_from_the_early_one_to_the_whole_vocabulary():
    b = batches(early_span_vocab=64, early_span_steps=10, span_double_every=5)
    seen = []
    for step in (0, 9, 10, 14, 15, 19, 20, 44, 45, 1000):
        b.at_step(step)
        seen.append(b.span_vocab)
    assert seen == [64, 64, 128, 128, 256, 256, 512, 8192, 8192, 8192]
    b.at_step(15)
    assert int(b.short()[0].max()) < 256


def test_a_share_of_short_rows_keeps_the_early_alphabet():
    b = batches(early_span_vocab=64, early_span_steps=10, early_span_keep=0.5, short_batch=400)
    b.at_step(100)  # the whole vocabulary by now
    x = b.short()[0]
    small = (x.max(dim=1).values < 64).float().mean().item()
    assert 0.4 < small < 0.6  # rows of 4+ ids from 8,192 all below 64: only the kept rows
    b.at_step(0)
    assert int(b.short()[0].max()) < 64


def test_reused_spans_repeat_tokens_only_after_the_pure_copy_phase_and_at_their_share():
    b = batches(span_reuse=0.5, short_pure=10, short_batch=400)

    def spans(x, m) -> list[list[int]]:  # each row's span: its tokens up to the first scored target
        return [row[: mask.index(True) + 1] for row, mask in zip(x.tolist(), m.tolist(), strict=True)]

    b.at_step(9)  # the pure copy phase: every span of distinct ids, as without the knob
    x, _, m = b.short()
    assert all(len(set(s)) == len(s) for s in spans(x, m))
    b.at_step(10)
    x, y, m = b.short()
    reused = [s for s in spans(x, m) if len(set(s)) < len(s)]
    assert all(len(set(s)) <= max(2, len(s) // 2) for s in reused)  # from half as many ids as it is long
    assert 0.4 < len(reused) / 400 < 0.6
    for row_x, row_y, row_m, span in zip(x.tolist(), y.tolist(), m.tolist(), spans(x, m), strict=True):
        n = len(span)  # the loss is still only on the repeats, each the token one span earlier
        assert all(row_y[t] == row_x[t + 1 - n] for t, scored in enumerate(row_m) if scored)


def test_copy_episodes_reuse_tokens_in_their_random_spans_too():
    def episodes(**knobs) -> list[list[int]]:
        b = batches(short_pure=0, random_span_share=1.0, batch=16, **knobs)
        x, _, _ = b.get(1.0)
        return [
            [t for t, e in zip(r, ep, strict=True) if e]
            for r, ep in zip(x.tolist(), b.episode_positions.tolist(), strict=True)
        ]

    # A span of L from L // 2 ids shown 2-3 times: under a third of the episode's tokens are distinct
    assert all(3 * len(set(e)) < len(e) for e in episodes(span_reuse=1.0))
    assert not any(3 * len(set(e)) < len(e) for e in episodes())  # distinct ids: half or more


def test_toy_runs_and_reports_the_held_out_copy_loss():
    from training.toy import run

    out = run("gpt2", d_model=16, n_layer=1, n_head=2, vocab=16, seq=16, batch=4, steps=10, lr=1e-3,
              warmup=2, seed=0, every=5)  # fmt: skip
    assert [r["step"] for r in out] == [5, 10]
    assert all(0 < r["copy_loss"] < 2 * np.log(16) for r in out)


def test_text_rows_draw_the_invented_stories_at_their_share():
    rng = np.random.default_rng(0)
    streams = {p: rng.integers(1000, VOCAB, 5000).astype(np.int32) for p in NATURAL_WEIGHTS}
    streams[INVENTED] = rng.integers(0, 1000, 5000).astype(np.int32)  # ids no other part uses
    b = Batches(streams, Recipe(vocab_size=VOCAB, batch=400, invented_name_share=0.2))
    x = b.get(copy_frac=0.0)[0]
    share = (x.max(dim=1).values < 1000).float().mean().item()
    assert 0.15 < share < 0.25
    plain = Batches({p: s for p, s in streams.items() if p != INVENTED}, Recipe(vocab_size=VOCAB, batch=50))
    assert int(plain.get(copy_frac=0.0)[0].min()) >= 1000  # without the knob no row needs the stream


def test_short_steps_follow_the_early_then_the_late_rhythm():
    from training.train import is_short_step  # here: importing train pulls in the model and the labs

    plain = Recipe(short_pure=4, short_steps=20, short_every=3)
    assert [s for s in range(24) if is_short_step(s, plain)] == [0, 1, 2, 3, 6, 9, 12, 15, 18]
    late = Recipe(short_pure=4, short_steps=20, short_every=3, short_late_from=12, short_late_every=2)
    assert [s for s in range(24) if is_short_step(s, late)] == [0, 1, 2, 3, 6, 9, 12, 14, 16, 18]


def test_layer_0_free_heads_stop_being_free_after_their_steps():
    from training.train import free_from_layer  # here: importing train pulls in the model and the labs

    always = Recipe(copy_free_heads=4)
    assert {free_from_layer(s, always) for s in range(3000)} == {0}
    until = Recipe(copy_free_heads=4, copy_free_layer0_steps=600)
    assert [free_from_layer(s, until) for s in (0, 599, 600, 2599)] == [0, 0, 1, 1]
    higher = Recipe(copy_free_heads=4, copy_free_first_layer=2, copy_free_layer0_steps=600)
    assert {free_from_layer(s, higher) for s in range(3000)} == {2}  # layer 0 was never free there


def test_qkv_bias_gives_a_head_a_preference_for_distance_whatever_the_tokens():
    """The card's claim for `qkv_bias`: under RoPE the query bias times the key bias depends only on how far
    back the key is, so with every weight zero the pattern is the same for any tokens and any start."""
    import torch

    from model.hooks import Run, act_name
    from model.transformer import Transformer
    from training.train import model_config

    r = Recipe(qkv_bias=True, n_layer=1, n_head=2, n_kv_head=1, d_model=16, d_ff=32, seq=12)
    cfg = model_config(r, vocab_size=50)
    assert cfg.qkv_bias and not model_config(Recipe(), 50).qkv_bias
    net = Transformer(cfg)
    attn = net.blocks[0].attn
    assert attn.q_proj.bias is not None and attn.k_proj.bias is not None
    with torch.no_grad():
        for p in (attn.q_proj.weight, attn.k_proj.weight):
            p.zero_()
        g = torch.Generator().manual_seed(0)
        attn.q_proj.bias.copy_(torch.randn(attn.q_proj.bias.shape, generator=g) * 3)
        attn.k_proj.bias.copy_(torch.randn(attn.k_proj.bias.shape, generator=g) * 3)
    name = act_name("pattern", 0)
    patterns = []
    for ids in ([1, 2, 3, 4, 5, 6, 7, 8], [40, 9, 9, 31, 2, 17, 44, 5]):
        run = Run(capture={name})
        net(torch.tensor([ids]), run)
        patterns.append(run.cache[name][0])
    torch.testing.assert_close(patterns[0], patterns[1])
    a = patterns[0][0]  # head 0: the row of query 7 shifted by one is the row of query 6 (Toeplitz)
    torch.testing.assert_close(a[7, 1:] / a[7, 1:].sum(), a[6, :7] / a[6, :7].sum())
    assert not torch.allclose(a[7, :8], torch.full((8,), 1 / 8))  # not uniform: distance matters
