"""Head-role scores: one definition each, used by training, the model card, the API and the page.

Every score is a mean attention weight in [0, 1], computed from an attention tensor (L, H, n, n),
so it can be checked on hand-built patterns as well as on a live model.
"""

from __future__ import annotations

import torch

# Natural text for the previous-token probe: plain sentences a class would type.
PROSE = (
    "Once upon a time there was a little girl called Lily. She lived in a small house near the woods "
    "with her mother and her dog. Every morning she walked to school with her friend Tom, and they "
    "talked about the birds, the trees and the big river. The cat sat on the mat and watched them go."
)
INDUCTION_LENGTH = 48  # tokens in each copy of the random sequence
INDUCTION_SEEDS = (0, 1, 2, 3)


def previous_token_scores(attention: torch.Tensor) -> torch.Tensor:
    """(L, H, n, n) -> (L, H): mean attention from each token i >= 1 to token i - 1."""
    n = attention.shape[-1]
    i = torch.arange(1, n)
    return attention[..., i, i - 1].mean(-1)


def induction_scores(attention: torch.Tensor, length: int) -> torch.Tensor:
    """(L, H, 2R, 2R) on a sequence of R random tokens repeated twice -> (L, H).

    Mean attention from each second-copy token (position R + j) to the token right after its first
    copy (position j + 1): the "A B ... A -> look at B" move of an induction head.
    """
    i = torch.arange(length, 2 * length)
    return attention[..., i, i - length + 1].mean(-1)


def induction_probe(vocab_size: int, seed: int, length: int = INDUCTION_LENGTH) -> list[int]:
    """R random token ids (no repeats inside one copy), then the same R again."""
    g = torch.Generator().manual_seed(seed)
    first = torch.randperm(vocab_size, generator=g)[:length].tolist()
    return first + first


def copy_losses(logits: torch.Tensor, ids: list[int], length: int) -> tuple[float, float]:
    """Mean next-token loss on the first copy and on the second copy of an induction probe.

    Position p predicts token p + 1. First copy: tokens 1..R-1 (token 0 has no context).
    Second copy: tokens R+1..2R-1, every one predictable from the first copy.
    """
    target = torch.tensor(ids[1:], device=logits.device)
    losses = torch.nn.functional.cross_entropy(logits[:-1].float(), target, reduction="none")
    return losses[: length - 1].mean().item(), losses[length:].mean().item()


def measure_roles(lm, seeds: tuple[int, ...] = INDUCTION_SEEDS, length: int = INDUCTION_LENGTH) -> dict:
    """Recompute a model's head-role scores and induction-probe losses from its own forward passes.

    `lm` is a `model.LanguageModel`. Returns plain numbers and (L, H) tables as nested lists, the
    form the training script writes to the model card and the card test compares against.
    """
    prev = previous_token_scores(lm.trace(PROSE).attention)
    ind, first, second = [], [], []
    for seed in seeds:
        ids = induction_probe(lm.config.vocab_size, seed, length)
        tr = lm.trace(ids)
        ind.append(induction_scores(tr.attention, length))
        f, s = copy_losses(tr.logits, ids, length)
        first.append(f)
        second.append(s)
    ind_mean = torch.stack(ind).mean(0)

    def best(table: torch.Tensor) -> dict:
        flat = int(table.argmax())
        layer, head = divmod(flat, table.shape[1])
        return {"layer": layer, "head": head, "score": round(float(table[layer, head]), 4)}

    return {
        "previous_token": best(prev),
        "induction": best(ind_mean),
        "previous_token_table": [[round(float(x), 4) for x in row] for row in prev],
        "induction_table": [[round(float(x), 4) for x in row] for row in ind_mean],
        "first_copy_loss": round(sum(first) / len(first), 4),
        "second_copy_loss": round(sum(second) / len(second), 4),
    }
