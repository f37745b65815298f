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

from model.transformer import Transformer, causal_mask

HINTED_HEAD = (0, 0)  # (layer, head) the training script hints; the model card names it


class PreviousTokenHint:
    def __init__(self, net: Transformer, layer: int = HINTED_HEAD[0], head: int = HINTED_HEAD[1]) -> None:
        self.head, self.kv_head = head, head // net.cfg.n_rep
        self.attn = net.blocks[layer].attn
        self.fast_attend = self.attn.attend  # the training fast path, restored by close()
        self.attn.attend = self._attend
        self.last: torch.Tensor | None = None

    def _attend(self, q, k, v, run):
        # q (B, T, H, d), k (B, T, K, d), both after RoPE: the head's own scores, in float32.
        qh, kh = q[:, :, self.head].float(), k[:, :, self.kv_head].float()
        scores = (qh @ kh.transpose(1, 2)) / math.sqrt(qh.shape[-1])
        logp = torch.log_softmax(
            scores.masked_fill(causal_mask(scores.shape[-1], scores.device), float("-inf")), -1
        )
        # -log attention from token i to token i - 1, averaged over i >= 1.
        self.last = -logp[:, 1:, :].diagonal(dim1=1, dim2=2).mean()
        return self.fast_attend(q, k, v, run)

    def loss(self) -> torch.Tensor:
        assert self.last is not None, "run a forward pass first"
        out, self.last = self.last, None
        return out

    def close(self) -> None:
        self.attn.attend = self.fast_attend
