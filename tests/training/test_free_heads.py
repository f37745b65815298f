"""Copy-free heads (training/free_heads.py): the last heads of every layer learn nothing from copy rows."""

import torch

from model import Run
from model.hooks import ablate_heads, act_name
from tests.tiny import tiny_model
from training.data import Batches
from training.free_heads import free_copy_heads
from training.recipe import Recipe

IDX = torch.randint(0, 300, (4, 16), generator=torch.Generator().manual_seed(0))
COPY_ROWS = torch.tensor([True, False, True, False])


def test_copy_rows_run_without_the_free_heads_and_other_rows_run_unchanged():
    net = tiny_model()
    plain = net(IDX, Run(impl="sdpa"))
    knocked = Run(impl="sdpa")
    for layer in range(net.cfg.n_layer):
        knocked.add_hook(act_name("z", layer), ablate_heads([2, 3], "zero"))
    without = net(IDX, knocked)
    got = net(IDX, free_copy_heads(Run(impl="sdpa"), net.cfg, 2, COPY_ROWS))
    torch.testing.assert_close(got[COPY_ROWS], without[COPY_ROWS])
    torch.testing.assert_close(got[~COPY_ROWS], plain[~COPY_ROWS])
    assert not torch.allclose(without[COPY_ROWS], plain[COPY_ROWS])  # the knock-out does something


def test_free_heads_get_no_gradient_from_copy_rows_and_the_others_do():
    net = tiny_model().train()
    all_copy = torch.ones(4, dtype=torch.bool)
    net(IDX, free_copy_heads(Run(impl="sdpa"), net.cfg, 2, all_copy)).logsumexp(-1).mean().backward()
    d = net.cfg.hd
    for block in net.blocks:
        grad = block.attn.q_proj.weight.grad.view(net.cfg.n_head, d, -1)
        assert grad[2:].abs().max() == 0  # heads 2 and 3: the free ones
        assert grad[:2].abs().max() > 0


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
