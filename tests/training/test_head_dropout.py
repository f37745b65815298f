"""Head dropout (training/head_dropout.py): chosen heads of one layer knocked out on chosen rows only."""

import torch

from model import Run
from tests.tiny import tiny_model
from training.head_dropout import drop_heads

IDX = torch.randint(0, 300, (4, 16), generator=torch.Generator().manual_seed(3))
ROWS = torch.tensor([False, True, True, False])


def test_the_chosen_heads_of_the_chosen_layer_are_gone_on_the_chosen_rows_only():
    net = tiny_model()
    dropped = net(IDX, drop_heads(Run(impl="sdpa"), ROWS, layer=1, heads=[0, 3]))
    intact = net(IDX, Run(impl="sdpa"))
    # The same heads removed another way: their slices of layer 1's output projection set to zero.
    hd = net.cfg.hd
    with torch.no_grad():
        for h in (0, 3):
            net.blocks[1].attn.o_proj.weight[:, h * hd : (h + 1) * hd] = 0
    without_heads = net(IDX, Run(impl="sdpa"))
    torch.testing.assert_close(dropped[ROWS], without_heads[ROWS])
    torch.testing.assert_close(dropped[~ROWS], intact[~ROWS])
    assert (intact[ROWS] - without_heads[ROWS]).abs().max() > 1e-3  # the heads mattered: a real check


def test_nothing_is_hooked_when_no_row_or_no_head_is_chosen():
    for rows, heads in ((torch.zeros(4, dtype=torch.bool), [0]), (ROWS, [])):
        assert drop_heads(Run(impl="sdpa"), rows, layer=0, heads=heads).hooks == {}
