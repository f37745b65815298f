"""Head-role detectors: attention (..., n, n) -> one score per head in [0, 1] (a mean attention weight).

Pure tensor functions (queries are rows, keys are columns; any leading dimensions, usually (L, H) or
(B, L, H)), so each can be checked on a hand-built pattern as well as on a live model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

LOCAL_WINDOW = 3  # a local head's window: the 3 tokens before the current one (never the token itself)


def previous_token_scores(attention: torch.Tensor) -> torch.Tensor:
    """Mean attention from each token i >= 1 to token i - 1."""
    n = attention.shape[-1]
    i = torch.arange(1, n)
    return attention[..., i, i - 1].mean(-1)


def induction_scores(attention: torch.Tensor, length: int) -> torch.Tensor:
    """On R = `length` random tokens repeated twice (2R tokens): mean attention from each second-copy
    token (position R + j) to the token right after its first copy (position j + 1), the
    "A B ... A -> look at B" move of an induction head."""
    i = torch.arange(length, 2 * length)
    return attention[..., i, i - length + 1].mean(-1)


def first_token_scores(attention: torch.Tensor) -> torch.Tensor:
    """Mean attention from each token i >= 1 to token 0 (token 0 has only itself to look at)."""
    return attention[..., 1:, 0].mean(-1)


def local_scores(attention: torch.Tensor, window: int = LOCAL_WINDOW) -> torch.Tensor:
    """Mean attention mass on keys i - window .. i - 1 (the few tokens just before, not the token
    itself), over queries i > window (so the window never holds token 0, where sink heads rest).
    A head that only looks at itself scores 0 here: that is `self_scores`."""
    n = attention.shape[-1]
    if n <= window + 1:
        raise ValueError(f"local scores need more than {window + 1} tokens, got {n}")
    i = torch.arange(n)
    d = i[:, None] - i[None, :]  # query minus key
    mask = ((d >= 1) & (d <= window)).to(attention.dtype)
    return (attention * mask)[..., window + 1 :, :].sum(-1).mean(-1)


def offset_scores(attention: torch.Tensor, offset: int) -> torch.Tensor:
    """Mean attention from each token i >= offset to token i - offset: what a head that only counts
    positions would score on the repeat roles (the control of induction and duplicate-token)."""
    n = attention.shape[-1]
    i = torch.arange(offset, n)
    return attention[..., i, i - offset].mean(-1)


def _masked_mean(attention: torch.Tensor, mask: torch.Tensor) -> torch.Tensor | None:
    """Mean over the queries that have any key in `mask` (n, n) of the attention mass on those keys."""
    rows = mask.any(-1)
    if not rows.any():
        return None
    mass = (attention * mask.to(attention.dtype)).sum(-1)  # (..., n)
    return mass[..., rows].mean(-1)


def duplicate_token_scores(attention: torch.Tensor, ids: Sequence[int]) -> torch.Tensor | None:
    """Mean attention from each token that occurred before to its earlier copies (None if no repeats)."""
    t = torch.as_tensor(list(ids))
    same = t[:, None] == t[None, :]
    earlier = torch.ones_like(same).tril(-1)
    return _masked_mean(attention, same & earlier)


def token_induction_scores(attention: torch.Tensor, ids: Sequence[int]) -> torch.Tensor | None:
    """Induction on any token sequence: attention from each repeated token to the tokens that
    followed its earlier copies. On the repeated random probe it equals `induction_scores`."""
    t = torch.as_tensor(list(ids))
    n = len(t)
    same = (t[:, None] == t[None, :]) & torch.ones(n, n, dtype=torch.bool).tril(-1)  # [i, j]: j copies i
    follows = torch.zeros(n, n, dtype=torch.bool)
    follows[:, 1:] = same[:, :-1]  # [i, j + 1] where j is an earlier copy of token i
    return _masked_mean(attention, follows)


def name_choice_scores(
    attention: torch.Tensor, query: int, right: Sequence[int], wrong: Sequence[int]
) -> torch.Tensor:
    """Attention from the pronoun at `query` to the right name's tokens minus attention to the wrong
    name's tokens: in [-1, 1], 0 for a head that treats both names alike."""
    return attention[..., query, list(right)].sum(-1) - attention[..., query, list(wrong)].sum(-1)


def self_scores(attention: torch.Tensor) -> torch.Tensor:
    """Mean attention of each token to itself, over tokens i >= 1 (token 0 can only look at itself);
    on a one-token text, that token's."""
    diag = attention.diagonal(dim1=-2, dim2=-1)
    return (diag[..., 1:] if diag.shape[-1] > 1 else diag).mean(-1)


def entropy_bits(attention: torch.Tensor) -> torch.Tensor:
    """Mean entropy of a row in bits: 0 = looks at one token, log2(n) = spread evenly."""
    h = -torch.special.xlogy(attention, attention).sum(-1).mean(-1) / math.log(2)
    return h.clamp_min(0.0)  # no -0.0 for one-hot rows
