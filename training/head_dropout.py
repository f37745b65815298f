"""Head dropout: knock chosen heads out on a random share of the rows, so other heads must learn their job.

Why (training_log.md, sessions 12 and 18): once one head does a job the copying circuit needs, the loss asks
no other head for it. Knocking the hinted previous-token head out on half the rows after the hint made an
unhinted head learn the previous token (try 21). The same pressure on the layer-1 induction heads asks heads of
another layer to learn induction as well, so the copy can be held by as many heads as v3's (eight, which put a
made-up name first) without any one layer being all induction. At evaluation and in the app every head runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from model.hooks import HookPoint, Run, ablate_heads, act_name


def drop_heads(run: Run, rows: torch.Tensor, layer: int, heads: Sequence[int]) -> Run:
    """Add to `run` a hook that knocks `heads` of `layer` out (their output z set to 0, the app's knock-out)
    on the rows where `rows` (B,) is True; every other row and head is untouched."""
    if not heads or not bool(rows.any()):
        return run
    zero_heads = ablate_heads(list(heads), "zero")
    chosen = rows.view(-1, 1, 1, 1)

    def knock_out(z: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        return torch.where(chosen.to(z.device), zero_heads(z, hook), z)

    run.add_hook(act_name("z", layer), knock_out)
    return run
