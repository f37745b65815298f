import math

import pytest
import torch

from labs.position import (
    compare_orders,
    inverse,
    learned_positions,
    make_permutation,
    model_qk,
    permutation_experiment,
    random_qk,
    rope_clock,
    rope_offset_scores,
)
from model import LanguageModel
from tests.tiny import tiny_model

PROMPT = "The cat sat on the mat. The dog bites the man."


def sharp_lm(tokenizer, arch: str = "llama") -> LanguageModel:
    """A tiny model with large queries, keys and logits, so attention and next-token probabilities are
    far from uniform: at init they are nearly uniform, which would hide what position changes."""
    net = tiny_model(arch)
    with torch.no_grad():
        for block in net.blocks:
            block.attn.q_proj.weight.mul_(8.0)
            block.attn.k_proj.weight.mul_(8.0)
        net.ln_final.norm.weight.mul_(30.0)
    return LanguageModel(net, tokenizer, name="sharp")


def test_make_permutation_kinds():
    assert make_permutation(4, "reverse") == [3, 2, 1, 0]
    assert make_permutation(4, "swap", swap=(0, 2)) == [2, 1, 0, 3]
    assert make_permutation(3, "explicit", order=[2, 0, 1]) == [2, 0, 1]
    shuffled = make_permutation(6, "shuffle", seed=3)
    assert sorted(shuffled) == list(range(6)) and shuffled != list(range(6))
    assert shuffled == make_permutation(6, "shuffle", seed=3)
    assert inverse([2, 0, 1]) == [1, 2, 0]


@pytest.mark.parametrize(
    "kind, kw",
    [("explicit", {"order": [0, 0, 1]}), ("explicit", {"order": [0, 1]}), ("swap", {"swap": (0, 3)}),
     ("swap", {"swap": (1, 1)}),
     ("sideways", {})],
)  # fmt: skip
def test_make_permutation_rejects_bad_input(kind, kw):
    with pytest.raises(ValueError):
        make_permutation(3, kind, **kw)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_permutation_equivariant_without_position_and_mask(tokenizer, arch):
    lm = sharp_lm(tokenizer, arch)
    ids = lm.encode(PROMPT)
    result = permutation_experiment(lm, ids, make_permutation(len(ids), "shuffle", seed=1), layer=1, head=2)
    free = result.condition(position=False, causal=False)
    assert free.attention_max_diff <= 1e-5
    assert free.probs_max_diff <= 1e-5
    assert free.resid_max_diff <= 1e-5 * max(1.0, free.resid_scale)
    assert free.equivariant
    # Sanity: the permuted run really was different before it was put back in order.
    assert not torch.allclose(free.original, free.reordered.flip(0, 1), atol=1e-3)


def test_permutation_breaks_with_rope_and_with_the_causal_mask(tokenizer):
    lm = sharp_lm(tokenizer)
    ids = lm.encode(PROMPT)
    result = permutation_experiment(lm, ids, make_permutation(len(ids), "reverse"), layer=1, head=0)
    rope = result.condition(position=True, causal=False)
    assert rope.attention_max_diff > 1e-2 and rope.probs_max_diff > 1e-3 and not rope.equivariant
    masked = result.condition(position=False, causal=True)  # the mask alone carries order
    assert masked.head_max_diff > 1e-2 and not masked.equivariant


def test_permutation_swap_of_equal_tokens_changes_nothing(tokenizer):
    lm = sharp_lm(tokenizer)
    ids = [5, 9, 5, 9, 7]
    result = permutation_experiment(lm, ids, make_permutation(len(ids), "swap", swap=(0, 2)))
    for cond in result.conditions:
        if not cond.position and not cond.causal:
            assert cond.head_max_diff <= 1e-6


def test_permutation_rejects_wrong_length_and_bad_head(tiny_lm):
    ids = tiny_lm.encode(PROMPT)
    with pytest.raises(ValueError, match="exactly once"):
        permutation_experiment(tiny_lm, ids, list(range(len(ids) - 1)))
    with pytest.raises(ValueError, match=r"no head \[0, 9\]"):
        permutation_experiment(tiny_lm, ids, list(range(len(ids))), layer=0, head=9)


def test_compare_orders_identical_without_position(tokenizer):
    lm = sharp_lm(tokenizer)
    cmp = compare_orders(lm, "The dog bites the man.", "The man bites the dog.")
    assert cmp.tokens_a[cmp.focus] == "·bites" and cmp.same_last_token
    free = cmp.condition(position=False, causal=False)
    assert max(free.token_diffs) <= 1e-5 and free.next_max_diff <= 1e-6
    rope = cmp.condition(position=True, causal=False)
    assert rope.focus_max_diff > 1e-4 and rope.next_max_diff > 1e-4
    # With the mask, "bites" sees "The dog" in one prompt and "The man" in the other.
    assert cmp.condition(position=False, causal=True).focus_max_diff > 1e-3


def test_compare_orders_needs_the_same_tokens(tiny_lm):
    with pytest.raises(ValueError, match="same tokens"):
        compare_orders(tiny_lm, "The dog bites the man.", "The cat sat.")


def test_rope_score_depends_only_on_offset(tiny_lm):
    cfg = tiny_lm.config
    q, k = random_qk(cfg.hd, seed=0)
    scores = rope_offset_scores(cfg, q, k, key_positions=[0, 7, 100, 2000], max_offset=60)
    assert scores.spread <= 1e-5
    assert scores.scores[0].std() > 0.1  # the curve is not flat: the offset does matter
    # Hand check at offset 3: rotate q by 3 positions' angles, k not at all.
    inv = 1.0 / (cfg.rope_base ** (torch.arange(0, cfg.hd, 2, dtype=torch.float64) / cfg.hd))
    half = cfg.hd // 2
    q1, q2, k1, k2 = q[:half].double(), q[half:].double(), k[:half].double(), k[half:].double()
    c, s = torch.cos(3 * inv), torch.sin(3 * inv)
    hand = ((q1 * c - q2 * s) * k1 + (q2 * c + q1 * s) * k2).sum() / math.sqrt(cfg.hd)
    assert abs(float(scores.scores[2, 3]) - float(hand)) <= 1e-5


def test_rope_interpolation_stretches_the_offset_curve(tiny_lm):
    cfg = tiny_lm.config
    q, k = random_qk(cfg.hd, seed=1)
    plain = rope_offset_scores(cfg, q, k, [0], max_offset=40)
    stretched = rope_offset_scores(cfg, q, k, [0], max_offset=80, scale=2.0)
    torch.testing.assert_close(stretched.scores[0, ::2], plain.scores[0], atol=1e-6, rtol=1e-6)


def test_rope_real_qk_from_the_model_also_depends_only_on_offset(tiny_lm):
    ids = tiny_lm.encode(PROMPT)
    q, k = model_qk(tiny_lm, ids, layer=1, head=3, query=len(ids) - 1, key=len(ids) - 2)
    assert rope_offset_scores(tiny_lm.config, q, k, [0, 33, 500], max_offset=50).spread <= 1e-5


def test_rope_clock_hands(tiny_lm):
    cfg = tiny_lm.config
    clock = rope_clock(cfg, positions=40)
    assert clock.angles.shape == (40, cfg.hd // 2)
    assert torch.all(clock.angles[0] == 0)
    assert clock.periods[0] == pytest.approx(2 * math.pi)  # the fastest hand turns once per 2*pi tokens
    assert torch.all(clock.periods[1:] > clock.periods[:-1])  # then each slower than the last
    torch.testing.assert_close(clock.angles[1], clock.inv_freq.double(), atol=1e-6, rtol=0)
    slow = rope_clock(cfg, scale=4.0, positions=[0, 4, 8])  # interpolation: 4 positions per old one
    torch.testing.assert_close(slow.angles[1], clock.angles[1], atol=1e-6, rtol=0)
    assert slow.periods[0] == pytest.approx(4 * clock.periods[0])


def test_gpt2_path_returns_learned_positions(tokenizer):
    lm = LanguageModel(tiny_model("gpt2"), tokenizer, name="g")
    data = learned_positions(lm.net, 32)
    assert data.similarity.shape == (32, 32) and data.pca.shape == (32, 3)
    torch.testing.assert_close(data.similarity.diagonal(), torch.ones(32))
    assert 0 < sum(data.explained) <= 1 + 1e-9
    with pytest.raises(ValueError, match="learned position"):
        rope_clock(lm.config)
    with pytest.raises(ValueError, match="RoPE"):
        learned_positions(tiny_model().eval())


def test_command_line_prints_every_condition(tmp_path, capsys):
    from labs.position import main
    from tests.api_helpers import save_tiny

    main(["--model", str(save_tiny(tmp_path / "tiny")), "--prompt", "The dog bites the man."])
    out = capsys.readouterr().out
    assert out.count("position off causal off") == 3 and "reverse [" in out and "swap [" in out


def test_default_focus_is_a_whole_word_that_stays_in_place():
    from labs.position import default_focus, is_whole_word

    tokens = ["The", "·dog", "·b", "ites", "·the", "·man", "."]
    match = [0, 5, 2, 3, 4, 1, 6]  # "The man bites the dog."
    assert not is_whole_word(tokens, 2) and not is_whole_word(tokens, 3)  # "·b" + "ites"
    assert is_whole_word(tokens, 1) and not is_whole_word(tokens, 6)  # a word; punctuation is not
    assert tokens[default_focus(match, tokens)] == "·the"  # in place, a word, nearest the middle
    # No whole word stays in place: the first whole word.
    assert default_focus([1, 0], ["·dog", "·cat"]) == 0
