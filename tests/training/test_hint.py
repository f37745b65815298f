"""The previous-token hint used early in training (training/hint.py)."""

import torch

from model import Run, act_name
from tests.tiny import tiny_model
from training.hint import PreviousTokenHint, drop_hinted_head

PATTERN0 = act_name("pattern", 0)


def test_hint_is_minus_log_attention_to_the_previous_token():
    net = tiny_model()
    idx = torch.randint(0, 300, (3, 20), generator=torch.Generator().manual_seed(0))
    run = Run(capture={PATTERN0})
    net(idx, run)
    pattern = run.cache[PATTERN0][:, 2]  # head 2 reads KV head 1
    i = torch.arange(1, 20)
    expected = -pattern[:, i, i - 1].log().mean()

    hint = PreviousTokenHint(net.cfg, layer=0, head=2)
    fused = Run(impl="sdpa", capture=hint.names)  # as training runs it: no pattern, q and k captured
    net(idx, fused)
    torch.testing.assert_close(hint.loss(fused.cache), expected, atol=1e-5, rtol=1e-5)


def test_hint_trains_a_previous_token_head_and_leaves_the_forward_unchanged():
    net = tiny_model().train()
    idx = torch.randint(0, 300, (8, 24), generator=torch.Generator().manual_seed(1))
    before = net(idx, Run(impl="sdpa")).detach()
    hint = PreviousTokenHint(net.cfg, layer=0, head=0)
    torch.testing.assert_close(net(idx, Run(impl="sdpa", capture=hint.names)), before)  # only observes
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    first = None
    for _ in range(150):
        run = Run(impl="sdpa", capture=hint.names)
        net(idx, run)
        loss = hint.loss(run.cache)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    run = Run(capture={PATTERN0})
    net(idx, run)
    p = run.cache[PATTERN0][:, 0]
    i = torch.arange(1, 24)
    assert p[:, i, i - 1].mean() > 0.9 > torch.exp(torch.tensor(-first))


def test_hint_dropout_knocks_the_hinted_head_out_on_the_chosen_rows_only():
    net = tiny_model()
    idx = torch.randint(0, 300, (4, 16), generator=torch.Generator().manual_seed(2))
    rows = torch.tensor([True, False, False, True])
    dropped = net(idx, drop_hinted_head(Run(impl="sdpa"), rows, layer=0, head=1))
    intact = net(idx, Run(impl="sdpa"))
    # The same head removed another way: its slice of layer 0's output projection set to zero.
    hd = net.cfg.hd
    with torch.no_grad():
        net.blocks[0].attn.o_proj.weight[:, hd : 2 * hd] = 0
    without_head = net(idx, Run(impl="sdpa"))
    torch.testing.assert_close(dropped[rows], without_head[rows])
    torch.testing.assert_close(dropped[~rows], intact[~rows])
    assert (intact[rows] - without_head[rows]).abs().max() > 1e-3  # the head mattered: a real check
