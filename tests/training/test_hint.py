"""The previous-token hint used early in training (training/hint.py)."""

import torch

from model import Run
from tests.tiny import tiny_model
from training.hint import PreviousTokenHint
from training.train import use_fast_attention


def test_hint_is_minus_log_attention_to_the_previous_token():
    net = tiny_model()
    idx = torch.randint(0, 300, (3, 20))
    run = Run(capture={"blocks.0.attn.hook_pattern"})
    net(idx, run)
    pattern = run.cache["blocks.0.attn.hook_pattern"][:, 2]  # head 2 reads KV head 1
    i = torch.arange(1, 20)
    expected = -pattern[:, i, i - 1].log().mean()

    use_fast_attention(net)
    hint = PreviousTokenHint(net, layer=0, head=2)
    net(idx)
    torch.testing.assert_close(hint.loss(), expected, atol=1e-5, rtol=1e-5)


def test_hint_trains_a_previous_token_head_and_leaves_the_forward_unchanged():
    net = tiny_model().train()
    use_fast_attention(net)
    idx = torch.randint(0, 300, (8, 24))
    before = net(idx).detach()
    hint = PreviousTokenHint(net, layer=0, head=0)
    torch.testing.assert_close(net(idx), before)  # the hint only observes the forward pass
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    first = None
    for _ in range(150):
        net(idx)
        loss = hint.loss()
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    hint.close()
    run = Run(capture={"blocks.0.attn.hook_pattern"})
    net(idx, run)
    p = run.cache["blocks.0.attn.hook_pattern"][:, 0]
    i = torch.arange(1, 24)
    assert p[:, i, i - 1].mean() > 0.9 > torch.exp(torch.tensor(-first))
    assert net.blocks[0].attn.attend.__func__.__name__ == "sdpa_attend"  # close() restored the fast path
