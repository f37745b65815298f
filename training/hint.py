"""Training scaffold: a previous-token hint for one layer-0 head, used only early in training.

Why: an induction head ("A B ... A -> B") reads keys that carry the *previous* token, so it needs a
previous-token head in an earlier layer, and that head is only useful once the induction head
exists. Measured on this model family (training log in the model card): with RoPE neither half
forms on its own within our CPU budget (the copying loss creeps, no phase change in 2,500 toy
steps), while handing the model the previous token makes induction appear within ~100 steps.
Learned-position (GPT-2-style) blocks get there alone because their position embeddings offer
a shortcut RoPE does not.

So for the first steps an auxiliary loss asks one head in layer 0 to attend to the previous token
(what previous-token heads learn from text anyway, just placed early). Nothing asks any head to
do induction: the induction head, and its loss drop on repeated text, emerge from the copy data.
The hint is gone after `steps`; the shipped weights are a plain Llama-style model.
"""

from __future__ import annotations

import math

import torch

from model.config import ModelConfig
from model.hooks import Run, act_name
from model.transformer import causal_mask

from .head_dropout import drop_heads

HINTED_HEAD = (0, 0)  # (layer, head) the training script hints; the model card names it


class PreviousTokenHint:
    """Reads its head's queries and keys after RoPE from the training forward's cache (capture `names`
    in the Run), so the forward itself is untouched and gradients flow through the captured tensors."""

    def __init__(self, cfg: ModelConfig, layer: int = HINTED_HEAD[0], head: int = HINTED_HEAD[1]) -> None:
        self.head, self.kv_head = head, head // cfg.n_rep  # GQA: query head h reads K/V head h // n_rep
        self.names = (act_name("rot_q", layer), act_name("rot_k", layer))

    def loss(self, cache: dict[str, torch.Tensor]) -> torch.Tensor:
        """-log attention from token i to token i - 1, averaged over i >= 1, recomputed in float32
        for this one head from q (B, T, H, d) and k (B, T, K, d)."""
        q, k = (cache[name] for name in self.names)
        qh, kh = q[:, :, self.head].float(), k[:, :, self.kv_head].float()
        scores = (qh @ kh.transpose(1, 2)) / math.sqrt(qh.shape[-1])  # (B, T, T)
        logp = torch.log_softmax(
            scores.masked_fill(causal_mask(scores.shape[-1], scores.device), float("-inf")), -1
        )
        return -logp[:, 1:, :].diagonal(dim1=1, dim2=2).mean()


def drop_hinted_head(
    run: Run, rows: torch.Tensor, layer: int = HINTED_HEAD[0], head: int = HINTED_HEAD[1]
) -> Run:
    """Add to `run` a hook that knocks the hinted head out (its output z set to 0) on the rows where
    `rows` (B,) is True.

    Why: once the hint has placed the previous token in L0H0, the induction heads read it and no other
    head is asked for the job, so no previous-token head is learned without the hint (training_log.md,
    sessions 9-10). With the hinted head missing from some rows after the hint stops, the copy loss on those
    rows can only fall if another head brings the previous token, learned from the loss alone: the same
    pressure dropout puts on any single unit. At evaluation and in the app every head runs."""
    return drop_heads(run, rows, layer, [head])
