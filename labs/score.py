"""How one attention score is made, step by step, from the model's own hooks.

For one head and one query position: the query vector (before and after RoPE on a rotary model), every
key vector (from the head's K/V group under grouped-query attention), q.k per key, the scaling by
sqrt(d_head), the causal mask, the softmax row, the value vectors and their weighted sum. The steps are
recomputed here from the captured q, k and v, so a test can hold them against what the model itself
recorded (`hook_attn_scores`, `hook_pattern`, `hook_z`): the view shows the model's arithmetic, not a
re-enactment of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from model import LanguageModel, act_name


@dataclass
class ScoreSteps:
    layer: int
    head: int
    kv_head: int  # the K/V head this query head reads (head // n_rep)
    index: int  # the query position
    d_head: int
    rotary: bool  # True: q and k are rotated by RoPE before the dot product
    causal: bool
    q: torch.Tensor  # (d,) the query, before RoPE
    q_rot: torch.Tensor | None  # (d,) after RoPE; None without rotary positions
    k: torch.Tensor  # (n, d) every key of the head's K/V group, before RoPE
    k_rot: torch.Tensor | None  # (n, d) after RoPE
    v: torch.Tensor  # (n, d) every value vector
    dots: torch.Tensor  # (n,) q . k (rotated ones on a rotary model), not yet scaled
    scaled: torch.Tensor  # (n,) dots / sqrt(d_head)
    masked: torch.Tensor  # (n,) bool: True where the causal mask hides the key (a later token)
    weights: torch.Tensor  # (n,) softmax of the scaled, masked scores: the head's attention row
    z: torch.Tensor  # (d,) sum_j weights[j] * v[j]: the head's output at this position
    model_scores: torch.Tensor  # (n,) hook_attn_scores row, as the model recorded it
    model_pattern: torch.Tensor  # (n,) hook_pattern row
    model_z: torch.Tensor  # (d,) hook_z at this position and head


def score_steps(
    lm: LanguageModel,
    ids: Sequence[int],
    layer: int,
    head: int,
    index: int,
    *,
    position: bool = True,
    causal: bool = True,
    ablate: Sequence[tuple[int, int]] = (),
) -> ScoreSteps:
    """The score of query `index` against every key of head (layer, head), step by step."""
    cfg = lm.config
    rotary = cfg.positional == "rope"  # a no-position Llama-style model has hook_rot_q/k, but as identities
    kinds = ["q", "k", "v", "attn_scores", "pattern", "z"] + (["rot_q", "rot_k"] if rotary else [])
    names = {kind: act_name(kind, layer) for kind in kinds}
    _, cache = lm.run_with_cache(
        list(ids), list(names.values()), logits=False, position=position, causal=causal, ablate=ablate
    )

    def got(kind: str) -> torch.Tensor:
        return cache[names[kind]][0].float().cpu()

    g = head // cfg.n_rep
    q, k, v = got("q")[index, head], got("k")[:, g], got("v")[:, g]  # (d,), (n, d), (n, d)
    q_rot = got("rot_q")[index, head] if rotary else None
    k_rot = got("rot_k")[:, g] if rotary else None
    dots = (q_rot if rotary else q) @ (k_rot if rotary else k).T  # (n,)
    scaled = dots / math.sqrt(cfg.hd)
    n = len(ids)
    masked = torch.arange(n) > index if causal else torch.zeros(n, dtype=torch.bool)
    weights = torch.softmax(scaled.masked_fill(masked, float("-inf")), dim=-1)
    return ScoreSteps(
        layer=layer, head=head, kv_head=g, index=index, d_head=cfg.hd, rotary=rotary, causal=causal,
        q=q, q_rot=q_rot, k=k, k_rot=k_rot, v=v, dots=dots, scaled=scaled, masked=masked,
        weights=weights, z=weights @ v,
        model_scores=got("attn_scores")[head, index], model_pattern=got("pattern")[head, index],
        model_z=got("z")[index, head],
    )  # fmt: skip


def shown_keys(weights: torch.Tensor, masked: torch.Tensor, limit: int) -> list[int]:
    """The keys whose vectors a view draws: every visible key when they fit in `limit`, else the
    `limit` heaviest ones, in position order (the scores and weights of all keys are sent anyway)."""
    visible = (~masked).nonzero().flatten()
    if len(visible) <= limit:
        return visible.tolist()
    top = weights.masked_fill(masked, -1.0).topk(limit).indices
    return sorted(top.tolist())
