"""Knock heads out and measure what the model loses: the evidence behind a head's role.

Zero ablation replaces the head's output (its weighted sum of values, before W_O) with zeros; mean
ablation replaces it with its mean over the positions of the same sequence, which keeps the head's
average contribution and removes only what depends on where the head looked.

`BEHAVIOURS` are what a role's heads are for, each a number that gets worse when they are knocked
out: `role_evidence` knocks a role's candidate heads out together (zero ablation, as the pages'
"Knock out" button does) and compares with as many random other heads. The role is earned when the
behaviour gets worse by at least the behaviour's `min_effect` and by at least RANDOM_RATIO times
what a typical random set costs: the median of the random sets, not their mean. One random set may
hold a head the model cannot do without (in a model with two self heads, knocking one out costs the
prose ten times what most sets cost), so the mean is set by how often the draws hit such a head and
would ask a role to beat every other role's heads on average; the median asks it to beat the
typical set (training_log.md, sessions 20 and 24).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from model.lm import LanguageModel

from ..predict import kl_divergence
from .evidence_prose import EVIDENCE_PROSE
from .probes import (
    INDUCTION_SEEDS,
    NAME_TASKS,
    copy_losses,
    induction_probe,
    name_sentences,
    repeat_length,
)

Head = tuple[int, int]
RANDOM_DRAWS = 5  # random head sets a page's knock-out shows beside its own (each set is listed)
# The atlas's labels compare with the median of up to EVIDENCE_DRAWS sets, drawn DRAW_STEP at a time until
# the verdict is settled (`settled`): until every median the sets leave plausible gives the same verdict.
# One random set costs anything from nothing to a whole circuit, so a fixed 5 sets let a label hang on
# which 5 the seed drew; a clear case still stops after 10 (`python -m labs.roles` prints each median's
# interval).
EVIDENCE_DRAWS = 40
DRAW_STEP = 5
MEDIAN_CONFIDENCE = 0.99  # settled: the verdict holds for any median in this distribution-free interval
RANDOM_RATIO = 2.0  # a role's heads must cost at least this many times what a typical random set costs


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
    def second_random_median(self) -> float | None:
        """What knocking out a typical random set does: the median, as the atlas's judge reads the sets (a
        set that holds a head the model cannot do without, such as one of its self heads, would lift a
        mean to what that one head costs). None when the model has too few other heads to draw a set of the
        same size."""
        return statistics.median(self.second_random) if self.second_random else None


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
    logits, _ = lm.run_with_cache(batch, [], ablate=list(heads), ablate_mode=mode, impl="sdpa")
    losses = [copy_losses(lg, ids, R) for lg, ids in zip(logits, batch, strict=True)]
    return sum(a for a, _ in losses) / len(losses), sum(b for _, b in losses) / len(losses)


@torch.inference_mode()
def prose_loss(lm: LanguageModel, heads: Sequence[Head] = ()) -> float:
    """Mean next-token loss over every token of EVIDENCE_PROSE's paragraphs, in nats (each paragraph its
    own sequence, cut to the context). One forward for all of them: the paragraphs are padded at the end,
    which a causal model never reads from the real tokens, and the padded targets are left out."""
    rows = [lm.encode(text)[: lm.config.context_length] for text in EVIDENCE_PROSE]
    width = max(len(r) for r in rows)
    batch = [r + [r[-1]] * (width - len(r)) for r in rows]
    logits, _ = lm.run_with_cache(batch, [], ablate=list(heads), impl="sdpa")  # no pattern needed: faster
    target = torch.tensor(batch, device=logits.device)[:, 1:]
    real = torch.tensor([[t < len(r) for t in range(1, width)] for r in rows], device=logits.device)
    losses = torch.nn.functional.cross_entropy(logits[:, :-1].float().flatten(0, 1), target.flatten(),
                                               reduction="none")  # fmt: skip
    return (losses[real.flatten()].sum() / real.sum()).item()


@torch.inference_mode()
def name_margin(lm: LanguageModel, heads: Sequence[Head] = ()) -> float:
    """Mean over NAME_TASKS of logit(right name) - logit(wrong name) for the next token, where the
    pronoun decides which name is right (each name's first token). Sentences of one length share a pass."""
    by_len: dict[int, list[tuple[list[int], int, int]]] = {}
    for s in name_sentences(NAME_TASKS, say_other=True):
        ids = lm.encode(s.text)
        right, wrong = lm.encode(" " + s.right)[0], lm.encode(" " + s.wrong)[0]
        by_len.setdefault(len(ids), []).append((ids, right, wrong))
    margins = []
    for group in by_len.values():
        logits, _ = lm.run_with_cache([g[0] for g in group], [], ablate=list(heads))
        for lg, (_, right, wrong) in zip(logits[:, -1].float(), group, strict=True):
            margins.append((lg[right] - lg[wrong]).item())
    return sum(margins) / len(margins)


@dataclass(frozen=True)
class Behaviour:
    key: str
    name: str  # what gets worse, for a sentence
    unit: str
    min_effect: float  # the smallest change that counts as evidence, in `unit`
    measure: Callable[[LanguageModel, Sequence[Head]], float]  # higher = worse


BEHAVIOURS = {
    b.key: b
    for b in (
        Behaviour("copy", "the loss on the second copy of repeated random tokens", "nats", 0.5,
                  lambda lm, heads: repeat_losses(lm, heads)[1]),
        Behaviour("prose", "the loss on six short paragraphs of ordinary English", "nats", 0.05, prose_loss),
        Behaviour("names", "how much more the model expects the right name than the wrong one "
                  "after a pronoun", "logits", 0.5, lambda lm, heads: -name_margin(lm, heads)),
    )
}  # fmt: skip


@dataclass(frozen=True)
class Evidence:
    """One role's knock-out test: its candidate heads together, and random sets of as many others."""

    behaviour: str  # a BEHAVIOURS key
    heads: list[Head]
    intact: float  # the behaviour's measure with every head
    ablated: float  # ... with `heads` knocked out
    random_heads: list[list[Head]]
    random: list[float]  # ... with each random set knocked out
    min_effect: float

    @property
    def effect(self) -> float:
        """How much worse the behaviour gets without the heads (in the behaviour's unit)."""
        return self.ablated - self.intact

    @property
    def random_effect(self) -> float | None:
        """What a typical random set costs: the median of the random sets' effects."""
        return statistics.median(self.random) - self.intact if self.random else None

    @property
    def random_interval(self) -> tuple[float, float] | None:
        """Where the median of all random sets lies with MEDIAN_CONFIDENCE, from the sets drawn so far
        (order statistics: no assumption about the sets' spread), as effects; None with too few sets."""
        k = median_rank(len(self.random))
        if k is None:
            return None
        ordered = sorted(self.random)
        return ordered[k - 1] - self.intact, ordered[len(ordered) - k] - self.intact

    @property
    def earned(self) -> bool:
        return self.effect >= self.min_effect and self.beats(self.random_effect)

    def beats(self, random_effect: float | None) -> bool:
        """True when the heads' effect is at least RANDOM_RATIO times this random cost (or there is none)."""
        return random_effect is None or self.effect >= RANDOM_RATIO * max(random_effect, 0.0)


def median_rank(n: int, confidence: float = MEDIAN_CONFIDENCE) -> int | None:
    """The largest k such that the k-th smallest and k-th largest of n draws hold the median of the
    whole distribution with at least `confidence` (a binomial count of draws below it); None when even
    the smallest and largest of n draws do not."""
    below = 0.0  # P(at most k - 1 of n draws fall below the median)
    k = 0
    while k < n // 2:
        below += math.comb(n, k) / 2**n
        if 2 * below > 1 - confidence:
            break
        k += 1
    return k or None


def role_evidence(
    lm: LanguageModel, behaviour: str, heads: Sequence[Head], draws: int = EVIDENCE_DRAWS, seed: int = 0
) -> Evidence:
    """Knock `heads` out together, then random sets of as many other heads, DRAW_STEP at a time: at least
    two steps, and more (up to `draws`) while the verdict is not `settled`."""
    b = BEHAVIOURS[behaviour]
    heads = sorted(heads)
    sets = random_other_heads(lm, heads, draws, seed)
    intact, ablated = b.measure(lm, []), b.measure(lm, heads)
    random: list[float] = []
    for s in sets:
        random.append(b.measure(lm, s))
        n = len(random)
        if n % DRAW_STEP == 0 and n >= 2 * DRAW_STEP:
            if settled(Evidence(behaviour, heads, intact, ablated, sets[:n], list(random), b.min_effect)):
                break
    return Evidence(behaviour, heads, intact, ablated, sets[: len(random)], random, b.min_effect)


def settled(ev: Evidence) -> bool:
    """True once more random sets are unlikely to change the verdict: when the heads' effect is below the
    minimum (no random set can earn it the role), or when the verdict is the same at both ends of
    `random_interval`, where the median of all random sets lies with MEDIAN_CONFIDENCE."""
    if ev.effect < ev.min_effect:
        return True
    interval = ev.random_interval
    return interval is not None and ev.beats(interval[0]) == ev.beats(interval[1])


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
