"""Knock heads out and measure what the model loses: the evidence behind a head's role.

Zero ablation replaces the head's output (its weighted sum of values, before W_O) with zeros; mean
ablation replaces it with its mean over the positions of the same sequence, which keeps the head's
average contribution and removes only what depends on where the head looked.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from model.lm import LanguageModel

from ..predict import kl_divergence
from .atlas import head_name
from .probes import INDUCTION_SEEDS, copy_losses, induction_probe, repeat_length

Head = tuple[int, int]
RANDOM_DRAWS = 5  # random head sets to compare against; their mean is the baseline


@dataclass(frozen=True)
class TokenProb:
    id: int
    token: str
    prob: float


@dataclass(frozen=True)
class NextTokenEffect:
    tokens: list[str]
    before: list[TokenProb]  # top-k with every head in place
    after: list[TokenProb]  # top-k with the heads knocked out
    before_top_after: float  # probability the old favourite keeps after the knockout
    kl: float  # KL(before || after) of the next-token distributions, in nats


@dataclass(frozen=True)
class RepeatKnockout:
    """Losses on the repeated-random-tokens probe (mean over INDUCTION_SEEDS), in nats."""

    length: int
    first: float  # first copy, every head in place: the loss of guessing
    second: float  # second copy, every head in place: low if the model copies
    second_ablated: float  # second copy with the heads knocked out
    random_heads: list[list[Head]]  # the same number of other heads, drawn at random (seeded)
    second_random: list[float]  # second-copy loss with each random set knocked out

    @property
    def second_random_mean(self) -> float | None:
        """None when the model has too few other heads to draw a set of the same size."""
        return sum(self.second_random) / len(self.second_random) if self.second_random else None


def top_probs(lm: LanguageModel, probs: torch.Tensor, k: int) -> list[TokenProb]:
    top = probs.topk(min(k, probs.shape[-1]))
    return [
        TokenProb(i, lm.tokenizer.display(i), p)
        for i, p in zip(top.indices.tolist(), top.values.tolist(), strict=True)
    ]


def next_token_effect(
    lm: LanguageModel, prompt: str | Sequence[int], heads: Sequence[Head], mode: str = "zero", k: int = 5
) -> NextTokenEffect:
    """How the prediction after the prompt's last token changes when `heads` are knocked out."""
    ids = lm.ids_of(prompt)
    intact, ablated = lm.logits(ids)[-1], lm.logits(ids, ablate=list(heads), ablate_mode=mode)[-1]
    return effect_from_logits(lm, ids, intact, ablated, k)


def effect_from_logits(
    lm: LanguageModel, ids: Sequence[int], intact: torch.Tensor, ablated: torch.Tensor, k: int = 5
) -> NextTokenEffect:
    """The effect from next-token logits (V,) computed elsewhere, e.g. with a temperature applied."""
    p0, p1 = torch.log_softmax(intact.float(), -1).exp(), torch.log_softmax(ablated.float(), -1).exp()
    before = top_probs(lm, p0, k)
    kl = kl_divergence(intact, ablated)
    return NextTokenEffect(
        lm.tokenizer.displays(list(ids)), before, top_probs(lm, p1, k), p1[before[0].id].item(), kl
    )


@torch.inference_mode()
def repeat_losses(lm: LanguageModel, heads: Sequence[Head] = (), mode: str = "zero") -> tuple[float, float]:
    """(first-copy, second-copy) loss on the repeated random probes, one batched forward pass."""
    R = repeat_length(lm)
    batch = [induction_probe(lm.config.vocab_size, s, R) for s in INDUCTION_SEEDS]
    logits, _ = lm.run_with_cache(batch, [], ablate=list(heads), ablate_mode=mode)
    losses = [copy_losses(lg, ids, R) for lg, ids in zip(logits, batch, strict=True)]
    return sum(a for a, _ in losses) / len(losses), sum(b for _, b in losses) / len(losses)


def random_other_heads(lm: LanguageModel, heads: Sequence[Head], draws: int, seed: int) -> list[list[Head]]:
    """`draws` sets of len(heads) heads, none of them in `heads`, drawn with a fixed seed."""
    cfg = lm.config
    others = [(la, h) for la in range(cfg.n_layer) for h in range(cfg.n_head) if (la, h) not in set(heads)]
    if len(others) < len(heads):
        return []
    rng = random.Random(seed)
    return [sorted(rng.sample(others, len(heads))) for _ in range(draws)]


def repeat_knockout(
    lm: LanguageModel, heads: Sequence[Head], mode: str = "zero", draws: int = RANDOM_DRAWS, seed: int = 0
) -> RepeatKnockout:
    heads = lm.check_heads(heads)
    if not heads:
        raise ValueError("name at least one head to knock out")
    first, second = repeat_losses(lm)
    _, ablated = repeat_losses(lm, heads, mode)
    sets = random_other_heads(lm, heads, draws, seed)
    rand = [repeat_losses(lm, s, mode)[1] for s in sets]
    return RepeatKnockout(repeat_length(lm), first, second, ablated, sets, rand)


def main() -> None:
    """`python -m labs.roles.knockout [model] [prompt]`: every role's heads and what knocking them out does
    (numbers only; the sentences a class reads are written by the server, app/heads/text.py)."""
    import sys

    from model.loading import load

    from .atlas import head_atlas
    from .registry import ROLES

    lm = load(sys.argv[1] if len(sys.argv) > 1 else "classroom")
    prompt = sys.argv[2] if len(sys.argv) > 2 else "Lily had a red ball. She"
    atlas = head_atlas(lm)
    for role in ROLES:
        heads = atlas.heads_with(role.key)
        best = atlas.top_heads(role.key, 3)
        scores = ", ".join(f"{head_name(*h)} {float(atlas.scores[role.key][h]):.3f}" for h in best)
        print(
            f"{role.name} (label from {role.threshold}): labelled {[head_name(*h) for h in heads]}; best {scores}"
        )
        group = heads or best[:1]
        r = repeat_knockout(lm, group)
        e = next_token_effect(lm, prompt, group)
        print(f"  without {[head_name(*h) for h in group]}: second-copy loss {r.second:.2f} -> {r.second_ablated:.2f}"
              f" (random heads: {r.second_random_mean or float('nan'):.2f}); top next token {e.before[0].token!r} -> {e.after[0].token!r},"
              f" KL {e.kl:.3f} nats")  # fmt: skip


if __name__ == "__main__":
    main()
