"""The head the explorer opens first: the sharpest pick of one earlier token, not self or token 0."""

from __future__ import annotations

import torch

from labs.showcase import showcase_head


def test_showcase_head_picks_the_sharpest_earlier_token_head():
    n = 6
    uniform = torch.tril(torch.ones(n, n))
    uniform = uniform / uniform.sum(-1, keepdim=True)
    previous = torch.zeros(n, n)
    previous[0, 0] = 1
    previous[torch.arange(1, n), torch.arange(0, n - 1)] = 1
    self_head = torch.eye(n)
    att = torch.stack([torch.stack([uniform, self_head]), torch.stack([self_head, previous])])  # (2, 2, n, n)
    show = showcase_head(att)
    assert (show.layer, show.head) == (1, 1) and show.score == 1.0
    assert showcase_head(att[..., :2, :2]) is None
