"""Next-token distributions as the pages show them: shared by the trace, heads, position and anatomy areas."""

from __future__ import annotations

import torch

from labs.predict import kl_divergence
from model import LanguageModel

from .schemas import Compared, TokenProb
from .wire import rounded


def token_probs(lm: LanguageModel, ids: list[int], probs: list[float]) -> list[TokenProb]:
    return [TokenProb(id=i, token=lm.tokenizer.display(i), prob=p) for i, p in zip(ids, probs, strict=True)]


def compare_distributions(
    lm: LanguageModel, ids: list[int], index: int, intact: torch.Tensor, knocked: torch.Tensor, k: int
) -> dict:
    """Top-k of both next-token distributions, their union side by side, and KL(intact || ablated) in nats."""
    p, q = torch.log_softmax(intact.float(), -1).exp(), torch.log_softmax(knocked.float(), -1).exp()
    k = min(k, p.shape[-1])
    top_p, top_q = p.topk(k).indices.tolist(), q.topk(k).indices.tolist()
    union = top_p + [i for i in top_q if i not in top_p]

    def row(i: int) -> Compared:
        return Compared(id=i, token=lm.tokenizer.display(i), intact=rounded(p[i].item(), 6),
                        ablated=rounded(q[i].item(), 6))  # fmt: skip

    return {
        "intact": token_probs(lm, top_p, [rounded(p[i].item(), 6) for i in top_p]),
        "ablated": token_probs(lm, top_q, [rounded(q[i].item(), 6) for i in top_q]),
        "rows": [row(i) for i in union],
        "next_token": row(ids[index + 1]) if index + 1 < len(ids) else None,
        "kl": rounded(kl_divergence(intact, knocked), 6),
    }
