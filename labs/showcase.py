"""Which head to open first for a prompt: the one that most sharply picks out one earlier word.

Heads that look only at the token itself or rest on token 0 are the common, dull cases; a class should
first see a head that does something with the text. Score of a head: over queries i >= 2, the largest
weight it puts on a single key j with 0 < j < i (not token 0, not itself), averaged. A previous-token
head scores near 1, an induction head on a repeated text too; a self or sink head scores near 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Showcase:
    layer: int
    head: int
    score: float  # mean over queries of the largest weight on one earlier, non-first token


def showcase_head(attention: torch.Tensor) -> Showcase | None:
    """attention (L, H, n, n) -> the head with the highest score; None when n < 3 (no such key exists)."""
    n_layer, n_head, n, _ = attention.shape
    if n < 3:
        return None
    i = torch.arange(n)
    inside = (i[None, :] > 0) & (i[None, :] < i[:, None])  # (n, n): key j with 0 < j < i
    picked = (attention.float() * inside).amax(-1)[..., 2:].mean(-1)  # (L, H)
    best = int(picked.flatten().argmax())
    return Showcase(best // n_head, best % n_head, float(picked.flatten()[best]))
