"""Copy-free heads (training/free_heads.py): the last heads of every layer learn nothing from copy rows."""

import pytest
import torch

from model import Run
from tests.tiny import tiny_model
from training.data import Batches
from training.free_heads import free_copy_heads, free_head_indices
from training.recipe import Recipe

IDX = torch.randint(0, 300, (4, 16), generator=torch.Generator().manual_seed(0))
COPY_ROWS = torch.tensor([True, False, True, False])


def q_grads(
    rows, n_free: int, first_layer: int = 0, spread: bool = False, stopped: torch.Tensor = COPY_ROWS
) -> list[torch.Tensor]:
    """Each layer's q_proj gradient per head (H, d, D) from a loss on `rows` only (any index of the
    (B, T) logits), with the free heads stopped where `stopped` says."""
    net = tiny_model().train()
    logits = net(IDX, free_copy_heads(Run(impl="sdpa"), net.cfg, n_free, stopped, first_layer, spread))
    logits[rows].logsumexp(-1).mean().backward()
    return [b.attn.q_proj.weight.grad.view(net.cfg.n_head, net.cfg.hd, -1) for b in net.blocks]


def test_the_forward_is_unchanged():
    net = tiny_model()
    torch.testing.assert_close(
        net(IDX, free_copy_heads(Run(impl="sdpa"), net.cfg, 2, COPY_ROWS)), net(IDX, Run(impl="sdpa"))
    )


def test_free_heads_get_no_gradient_from_copy_rows_and_the_others_do():
    for grad in q_grads(COPY_ROWS, n_free=2):
        assert grad[2:].abs().max() == 0  # heads 2 and 3: the free ones
        assert grad[:2].abs().max() > 0


def test_layers_below_the_first_free_layer_learn_from_copy_rows_with_every_head():
    below, above = q_grads(COPY_ROWS, n_free=2, first_layer=1)  # the tiny model has two layers
    assert below[2:].abs().max() > 0
    assert above[2:].abs().max() == 0 and above[:2].abs().max() > 0


def test_free_heads_learn_from_the_other_rows_and_nothing_is_stopped_without_free_heads():
    for grad in q_grads(~COPY_ROWS, n_free=2):
        assert grad[2:].abs().max() > 0
    for grad in q_grads(COPY_ROWS, n_free=0):
        assert grad[2:].abs().max() > 0


def test_batches_say_which_rows_hold_copy_episodes():
    streams = {p: torch.randint(0, 300, (5000,)).numpy() for p in ("stories", "brown", "wordnet", "bible")}
    b = Batches(streams, Recipe(vocab_size=300, batch=64, short_batch=4))
    b.get(0.5)
    share = b.copy_rows.float().mean().item()
    assert b.copy_rows.shape == (64,) and 0.2 < share < 0.8
    b.get(0.0)
    assert not b.copy_rows.any()
    b.short()
    assert b.copy_rows.shape == (4,) and b.copy_rows.all()


def test_spread_free_heads_are_the_last_of_each_kv_group_and_get_no_gradient_from_copy_rows():
    cfg = tiny_model().cfg  # 4 query heads in 2 K/V groups: (0, 1) and (2, 3)
    assert free_head_indices(cfg, 2) == [2, 3] and free_head_indices(cfg, 2, spread=True) == [1, 3]
    for grad in q_grads(COPY_ROWS, n_free=2, spread=True):
        assert grad[[1, 3]].abs().max() == 0
        assert all(grad[h].abs().max() > 0 for h in (0, 2))  # each group keeps a head on the copy
    for grad in q_grads(~COPY_ROWS, n_free=2, spread=True):
        assert grad[[1, 3]].abs().max() > 0
    with pytest.raises(ValueError, match="multiple of the 2 K/V groups"):
        free_head_indices(cfg, 1, spread=True)
    with pytest.raises(ValueError, match="0..4"):
        free_head_indices(cfg, 5)


def test_with_a_position_mask_free_heads_learn_at_the_text_beside_the_episode_only():
    """`copy_free_text`: a (B, T) mask stops the free heads' outputs inside the episode only."""
    episode = torch.zeros(4, 16, dtype=torch.bool)
    episode[0, 8:] = True  # row 0: text, then the episode to the end of the row

    for grad in q_grads((0, slice(0, 8)), n_free=2, stopped=episode):  # the text before it teaches every head
        assert grad[2:].abs().max() > 0
    # Inside the episode the last layer's free heads learn nothing.
    last = q_grads((0, slice(8, 16)), n_free=2, stopped=episode)[-1]
    assert last[2:].abs().max() == 0 and last[:2].abs().max() > 0


def test_batches_mark_the_episode_inside_each_copy_row():
    streams = {p: torch.randint(0, 300, (5000,)).numpy() for p in ("stories", "brown", "wordnet", "bible")}
    b = Batches(streams, Recipe(vocab_size=300, batch=64, random_span_share=1.0, repeats_max=2))
    x, _, _ = b.get(0.5)
    assert b.episode_positions.shape == x.shape
    assert not b.episode_positions[~b.copy_rows].any()
    for row, ep in zip(x[b.copy_rows], b.episode_positions[b.copy_rows], strict=True):
        where = ep.nonzero()[:, 0]
        assert len(where) and (where.diff() == 1).all()  # one unbroken stretch
        tokens = row[where]
        if where[-1] < len(row) - 1:  # the whole episode fits: a span of distinct tokens, then it again
            half = len(tokens) // 2
            assert len(tokens) % 2 == 0 and torch.equal(tokens[:half], tokens[half:])
            assert len(set(tokens[:half].tolist())) == half
    b.short()
    assert b.episode_positions.all() and b.episode_positions.shape == (b.r.short_batch, b.r.short_seq)
