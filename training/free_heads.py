"""Copy-free heads: the last few heads of every layer learn nothing from copy rows.

Why (training_log.md, sessions 5-8): the Llama-style model needs a long phase of pure copy rows to form
induction heads at all in our budget, and that phase turns every head of layer 1 into an induction head,
so the head atlas shows one role for a whole layer. Stopping the gradient of the last `copy_free_heads` heads
of each layer on rows that hold a copy episode means those heads learn only from real text, as the heads of a
model trained on text alone do, while the other heads form the copying circuit. Nothing asks any head for any
role; the forward is unchanged, and at evaluation and in the app every head runs as usual.

The free heads still run on copy rows, only their gradient is stopped there: zeroing them instead (Llama-style
try 13, training_log.md) left the other heads never trained beside them on repeated random tokens, and at
evaluation the free heads' outputs drowned the copy (second copy 7.7 nats against 1.1 for v2).
"""

from __future__ import annotations

import torch

from model.config import ModelConfig
from model.hooks import HookPoint, Run, act_name


def free_head_indices(cfg: ModelConfig, n_free: int, spread: bool = False) -> list[int]:
    """Which query heads are free: the last `n_free` of the layer, which with GQA form whole K/V groups
    when n_free is a multiple of n_rep (their keys and values then learn from text alone too); or, with
    `spread`, the last n_free / n_kv_head heads of every K/V group, so that each group keeps a head on the
    copy rows (in layer 0 a second previous-token head then brings values no other copying head reads:
    try 14 had only the hinted head's group and one more)."""
    if not 0 <= n_free <= cfg.n_head:
        raise ValueError(f"copy_free_heads must be 0..{cfg.n_head}, not {n_free}")
    if not spread:
        return list(range(cfg.n_head - n_free, cfg.n_head))
    if n_free % cfg.n_kv_head:
        raise ValueError(
            f"spread copy-free heads need a multiple of the {cfg.n_kv_head} K/V groups, not {n_free}"
        )
    per = n_free // cfg.n_kv_head
    return [g * cfg.n_rep + j for g in range(cfg.n_kv_head) for j in range(cfg.n_rep - per, cfg.n_rep)]


def free_copy_heads(
    run: Run, cfg: ModelConfig, n_free: int, copy_rows: torch.Tensor, first_layer: int = 0,
    spread: bool = False,
) -> Run:  # fmt: skip
    """Add to `run` a hook on the hook_z (B, T, H, d) of every layer from `first_layer` up that stops the
    gradient of the free heads (`free_head_indices`) on the rows where `copy_rows` (B,) is True, or, given
    a (B, T) mask, only at the positions where it is True (the copy episode itself, so the real text around
    it still teaches them). The forward is unchanged; so is the gradient of every other head and place."""
    if not n_free or not bool(copy_rows.any()):
        return run
    where = copy_rows if copy_rows.dim() == 2 else copy_rows[:, None]  # (B, T) or (B, 1)
    heads = torch.zeros(cfg.n_head, dtype=torch.bool)
    heads[free_head_indices(cfg, n_free, spread)] = True
    stop = (where[:, :, None] & heads)[..., None]  # (B, T or 1, H, 1)

    def stop_free(z: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        return torch.where(stop.to(z.device), z.detach(), z)

    for layer in range(first_layer, cfg.n_layer):
        run.add_hook(act_name("z", layer), stop_free)
    return run
